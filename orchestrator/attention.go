package orchestrator

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// attention says what t needs from whom right now, and the next command.
func (o *Orchestrator) attention(t *wire.Task) wire.Attention {
	r := currentRound(t)
	switch t.State {
	case wire.StateQueued:
		if now := o.now(); waitingRetry(r, now) {
			reason := "a failure"
			if n := len(t.Rounds); n >= 2 && t.Rounds[n-2].Failure != nil {
				reason = string(t.Rounds[n-2].Failure.Reason)
			}
			return wire.Attention{Kind: "none", Summary: fmt.Sprintf("round %d attempt %d of %d is retried at %s (after %s); no action needed",
				r.N, r.Attempt, t.Request.Retry.Attempts, r.RetryAt.Format("15:04:05 UTC"), reason)}
		}
		return wire.Attention{Kind: "none", Summary: fmt.Sprintf("round %d queued for a runner slot; no action needed", r.N)}
	case wire.StateRunning:
		elapsed := o.now().Sub(r.StartedAt)
		o.mu.Lock()
		last := o.lastOutput[r.DispatchID]
		o.mu.Unlock()
		return wire.Attention{Kind: "running", Summary: fmt.Sprintf("round %d running for %s", r.N, elapsed.Round(time.Second)),
			ElapsedMS: elapsed.Milliseconds(), LastOutput: last}
	case wire.StateNeedsInput:
		q := r.Question
		summary := "needs input: " + q.Question
		if len(q.Options) > 0 {
			summary += " (" + strings.Join(q.Options, " / ") + ")"
		}
		action := answerAction(t.ID, q)
		// A step that could not ask (Slack refused the post, a webhook
		// failed) is said, with what answers the question instead.
		if failed := stepFailures(r); failed != "" {
			summary += " — " + failed + "; answer with: " + action
		}
		return wire.Attention{Required: true, Kind: "needs_answer", Summary: summary, Action: action}
	}
	a := wire.Attention{Kind: "terminal", Summary: string(t.State)}
	if t.Outcome != nil {
		a.Summary = stateLabel(t.State) + ": " + t.Outcome.Detail
	}
	switch {
	case t.Replay != nil:
		// A replay is not respawned or continued: it is run again whole.
		a.Action = "agora replay " + t.Replay.Of + " --wait"
		return a
	}
	switch t.State {
	case wire.StateFailed, wire.StateCancelled, wire.StateExpired:
		a.Action = "agora respawn " + t.ID
	case wire.StateFinished:
		a.Action = "agora continue " + t.ID + ` "<follow-up message>"`
	}
	return a
}

// stepFailures says which route steps of r failed to ask its question,
// and why ("" when none did).
func stepFailures(r *wire.Round) string {
	var out []string
	for _, d := range r.Decisions {
		if d.Result == "error" {
			out = append(out, "route step "+d.Step+" failed: "+d.Detail)
		}
	}
	return strings.Join(out, "; ")
}

// answerAction is the exact command that answers q.
func answerAction(taskID string, q *schemas.NeedsInput) string {
	if len(q.Options) > 0 {
		return "agora answer " + taskID + " " + shellQuote(q.Options[0])
	}
	return "agora answer " + taskID + ` "<your answer>"`
}

func shellQuote(s string) string {
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return strconv.Quote(s)
		}
	}
	return s
}

func stateLabel(s wire.State) string { return strings.ReplaceAll(string(s), "_", " ") }

// summarize renders counts as "2 running · 3 queued · 1 needs input · 4 finished".
func summarize(counts map[wire.State]int) wire.Summary {
	var parts []string
	for _, s := range wire.States {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, stateLabel(s)))
		}
	}
	text := strings.Join(parts, " · ")
	if text == "" {
		text = "no tasks"
	}
	return wire.Summary{Counts: counts, Text: text}
}
