package orchestrator

import (
	"fmt"
	"time"

	"github.com/agoradev/agora/wire"
)

// ifUnanswered says what happens to r's open question if nobody answers,
// and when: the route's next step when the current one times out, the
// sentinel's default or expiry when it is the last, or expiry (failed,
// max_wait) when the task's total wait runs out first. It is derived from
// the task as stored, so every reader — API, CLI, inbox, Slack — shows the
// same consequence. Nil when no question is open.
func ifUnanswered(t *wire.Task, r *wire.Round, now time.Time) *wire.IfUnanswered {
	if t.State != wire.StateNeedsInput || r == nil || r.Question == nil || r.Answer != nil {
		return nil
	}
	steps, err := wire.ParseRoute(routeOf(t.Request))
	if err != nil {
		return nil
	}
	limit := r.AskedAt.Add(maxWait(t) - time.Duration(t.WaitedMS)*time.Millisecond)
	at := r.StepDeadline
	if r.Step >= len(steps) || at.IsZero() {
		at = now // the route has ended: settled at the router's next look
	}
	u := &wire.IfUnanswered{At: at}
	switch {
	case limit.Before(at):
		u.At, u.Action = limit, wire.IfUnansweredExpire
		u.Text = fmt.Sprintf("at %s it fails: the task's total wait for answers (limits.max_wait_seconds) runs out", clock(limit, now))
	case r.Step+1 < len(steps):
		u.Action, u.Next = wire.IfUnansweredEscalate, steps[r.Step+1].Answerer
		u.Text = fmt.Sprintf("at %s it goes to `%s`", clock(at, now), u.Next)
	case r.Question.Default != nil:
		u.Action, u.Default = wire.IfUnansweredDefault, *r.Question.Default
		u.Text = fmt.Sprintf("at %s the default `%s` is taken", clock(at, now), u.Default)
	default:
		u.Action = wire.IfUnansweredExpire
		u.Text = fmt.Sprintf("at %s it expires (no default)", clock(at, now))
	}
	return u
}

// clock renders at for a person: the time of day in UTC when it falls on
// the same UTC day as now, with the date otherwise ("08:54 UTC" must never
// mean tomorrow's).
func clock(at, now time.Time) string {
	at, now = at.UTC(), now.UTC()
	if at.YearDay() == now.YearDay() && at.Year() == now.Year() {
		return at.Format("15:04 MST")
	}
	return at.Format("2006-01-02 15:04 MST")
}
