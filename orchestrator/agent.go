package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

var _ answer.AgentRunner = (*Orchestrator)(nil)

// RunAgent runs the named sub-agent as a task of its own with input and
// waits for it to finish: how `agent:<name>` route steps answer. Its answer
// is its .agora/answer.json (stored by the runner) or its last output line.
func (o *Orchestrator) RunAgent(ctx context.Context, name string, input json.RawMessage) (answer.AgentResult, error) {
	req := wire.SubmitRequest{Input: input, Route: "human=1s",
		Labels: map[string]string{"agora.answering": "true"}, Limits: wire.Limits{MaxRounds: 1}}
	if sub, ok := o.cfg.Subagents[name]; ok {
		req.Subagent = sub
	} else if o.cfg.Registry != nil {
		req.SubagentRef = name
	} else {
		return answer.AgentResult{}, fmt.Errorf("no sub-agent %q is configured for agent answers", name)
	}
	t, err := o.Submit(ctx, req)
	if err != nil {
		return answer.AgentResult{}, err
	}
	for {
		if t.State.Terminal() || t.State == wire.StateNeedsInput {
			break
		}
		select {
		case <-ctx.Done():
			_, _ = o.Cancel(context.WithoutCancel(ctx), t.ID)
			return answer.AgentResult{}, fmt.Errorf("agent %s (task %s): %w", name, t.ID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if t, err = o.Get(ctx, t.ID); err != nil {
			return answer.AgentResult{}, err
		}
	}
	if t.State != wire.StateFinished {
		return answer.AgentResult{TaskID: t.ID}, fmt.Errorf("agent %s (task %s) ended %s", name, t.ID, t.State)
	}
	res := answer.AgentResult{TaskID: t.ID}
	id := currentRound(t).DispatchID
	res.Output = o.readSmall(ctx, schemas.DispatchKey(id, schemas.ExchangeAnswer))
	out := o.readSmall(ctx, schemas.DispatchKey(id, schemas.DispatchOutput))
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		// The worker's own log lines are not the agent's output.
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "time=") && !strings.HasPrefix(l, "{\"kind\"") {
			res.LastLine = l
			break
		}
	}
	return res, nil
}

func (o *Orchestrator) readSmall(ctx context.Context, key string) string {
	if o.cfg.Store == nil {
		return ""
	}
	rc, err := o.cfg.Store.Get(ctx, key)
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	return string(data)
}
