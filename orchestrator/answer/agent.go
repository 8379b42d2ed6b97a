package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// AgentRunner runs a sub-agent to completion. The orchestrator implements
// it by submitting a task for that sub-agent and waiting for it to finish.
type AgentRunner interface {
	RunAgent(ctx context.Context, subagent string, input json.RawMessage) (AgentResult, error)
}

// AgentResult is what an answering sub-agent left behind.
type AgentResult struct {
	// Output is the content of its .agora/answer.json, if it wrote one.
	Output string
	// LastLine is its final line of stdout.
	LastLine string
	// TaskID is the task that ran it.
	TaskID string
}

// AgentInput is the input an answering sub-agent gets.
type AgentInput struct {
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Context  string   `json:"context"`
	TaskID   string   `json:"task_id"`
	Round    int      `json:"round"`
	// Subagent is the sub-agent that asked.
	Subagent string `json:"subagent"`
}

// Agent answers by running another sub-agent with the question as input.
type Agent struct {
	name string
	run  AgentRunner
	log  *slog.Logger
}

var _ Answerer = (*Agent)(nil)

// NewAgent returns the answerer that runs sub-agent name through run.
func NewAgent(name string, run AgentRunner) *Agent {
	return &Agent{name: name, run: run, log: slog.New(slog.DiscardHandler)}
}

// WithLogger returns a copy of a that logs why it declined to l.
func (a *Agent) WithLogger(l *slog.Logger) *Agent {
	c := *a
	if l != nil {
		c.log = l
	}
	return &c
}

// Ask implements Answerer. The answer is the sub-agent's answer.json
// (`{"answer": "…"}` or a JSON string) or else its last stdout line; an
// empty answer, or one that is not among the options, is a decline.
func (a *Agent) Ask(ctx context.Context, q Question) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	opts := q.Options
	if opts == nil {
		opts = []string{}
	}
	input, err := json.Marshal(AgentInput{
		Question: q.Question, Options: opts, Context: q.Context,
		TaskID: q.TaskID, Round: q.Round, Subagent: q.Subagent,
	})
	if err != nil {
		return Reply{}, fmt.Errorf("agent %s: encode input: %w", a.name, err)
	}
	res, err := a.run.RunAgent(ctx, a.name, input)
	if err != nil {
		return Reply{}, fmt.Errorf("agent %s: %w", a.name, err)
	}
	by := "agent " + a.name
	if res.TaskID != "" {
		by += " (task " + res.TaskID + ")"
	}
	log := a.log.With("task_id", q.TaskID, "round", q.Round, "agent", a.name, "agent_task_id", res.TaskID)
	decline := func(format string, args ...any) error {
		reason := fmt.Sprintf(format, args...)
		log.Info("agent answerer declined", "reason", reason)
		return fmt.Errorf("%w: %s: %s", ErrDecline, by, reason)
	}
	raw, from := res.Output, "answer.json"
	if schemas.Blank(raw) {
		raw, from = res.LastLine, "last stdout line"
	}
	ans, err := agentAnswer(raw)
	if err != nil {
		return Reply{}, decline("%s: %v", from, err)
	}
	if ans == "" {
		return Reply{}, decline("no answer (no answer.json and an empty last stdout line)")
	}
	canon, err := ValidateAnswer(q, ans)
	if err != nil {
		return Reply{}, decline("%s: %v", from, err)
	}
	return Reply{Answer: canon, By: by}, nil
}

// agentAnswer reads an answer: a JSON object {"answer": "…"}, a JSON string,
// or else the text itself, trimmed.
func agentAnswer(raw string) (string, error) {
	s := schemas.TrimSpace(raw)
	switch {
	case strings.HasPrefix(s, "{"):
		var v struct {
			Answer *string `json:"answer"`
		}
		if err := schemas.Decode("answer", []byte(s), &v); err != nil {
			return "", fmt.Errorf("want {\"answer\": \"…\"}: %w", err)
		}
		if v.Answer == nil {
			return "", fmt.Errorf("want {\"answer\": \"…\"}: no \"answer\" string")
		}
		return schemas.TrimSpace(*v.Answer), nil
	case strings.HasPrefix(s, `"`):
		var v string
		if err := schemas.Decode("answer", []byte(s), &v); err != nil {
			return "", fmt.Errorf("want a JSON string: %w", err)
		}
		return schemas.TrimSpace(v), nil
	}
	return s, nil
}
