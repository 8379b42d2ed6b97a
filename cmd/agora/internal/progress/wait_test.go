package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestRoundConsequence: what a waiting line says happens if nobody
// answers, and when: the server's words when it gives them, else worked
// out from the route, the step and the question's default.
func TestRoundConsequence(t *testing.T) {
	t.Parallel()
	asked := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	draft := "draft"
	for _, tt := range []struct {
		name  string
		route string
		step  int
		def   *string
		iu    *wire.IfUnanswered
		want  string
	}{
		{name: "the last step, a default", route: "human=10m", def: &draft, want: "at 14:10:00 UTC the default `draft` is taken"},
		{name: "the last step, no default", route: "human=10m", want: "at 14:10:00 UTC it expires (no default)"},
		{name: "a step before another", route: "human=10m,slack:#ops=1h", def: &draft, want: "at 14:10:00 UTC it goes to `slack:#ops`"},
		{name: "the second of two steps", route: "human=5m,slack:#ops=10m", step: 1, def: &draft, want: "at 14:10:00 UTC the default `draft` is taken"},
		{name: "the server's text", route: "human=10m", iu: &wire.IfUnanswered{At: asked.Add(time.Minute), Action: wire.IfUnansweredExpire,
			Text: "at 14:01 UTC it expires"}, want: "at 14:01 UTC it expires"},
		{name: "the server's fields without text", route: "human=10m", iu: &wire.IfUnanswered{At: asked.Add(time.Minute), Action: wire.IfUnansweredEscalate,
			Next: "agent:triage"}, want: "at 14:01:00 UTC it goes to `agent:triage`"},
	} {
		r := wire.Round{N: 1, Question: &schemas.NeedsInput{Question: "Publish?", Default: tt.def}, AskedAt: asked, Step: tt.step,
			StepDeadline: asked.Add(10 * time.Minute), IfUnanswered: tt.iu}
		task := &wire.Task{ID: "t", Request: wire.SubmitRequest{Route: tt.route}, Rounds: []wire.Round{r}}
		if got := roundConsequence(task, &task.Rounds[0]); got != tt.want {
			t.Errorf("%s: roundConsequence = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestWaitLinesHeartbeat drives dispatch --wait's progress with a fake
// clock: the question with until when and what then, nothing more until a
// minute has passed, a heartbeat each minute, a line when the route moves
// on, and the default taken with why.
func TestWaitLinesHeartbeat(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	now := t0
	var out strings.Builder
	p := New(&out, view.UI{}, t0, func() time.Time { return now })
	draft := "draft"
	q := &schemas.NeedsInput{Question: "Publish the notes or keep a draft?", Options: []string{"publish", "draft"}, Default: &draft}
	task := func(state wire.State, rounds ...wire.Round) *wire.Task {
		return &wire.Task{ID: "ci-7", State: state, Request: wire.SubmitRequest{Route: "human=5m,slack:#ops=5m"}, Rounds: rounds,
			Attention: wire.Attention{Action: "agora answer ci-7 publish"}}
	}
	waiting := wire.Round{N: 1, DispatchID: "ci-7-r1", State: wire.StateNeedsInput, Question: q, AskedAt: t0, StepDeadline: t0.Add(5 * time.Minute)}
	steps := []struct {
		at   time.Duration
		task *wire.Task
		want []string // the lines this update writes
	}{
		{0, task(wire.StateNeedsInput, waiting), []string{
			"ci-7 needs input · round 1 · 0s · at 14:05:00 UTC it goes to `slack:#ops`",
			"  ? Publish the notes or keep a draft? (publish / draft) [default draft]",
			"  answer with: agora answer ci-7 publish",
			"  still waiting: the answer may come from anyone with access, or from the route (human=5m,slack:#ops=5m); at 14:05:00 UTC it goes to `slack:#ops`",
		}},
		{5 * time.Second, task(wire.StateNeedsInput, waiting), nil},
		{59 * time.Second, task(wire.StateNeedsInput, waiting), nil},
		{time.Minute, task(wire.StateNeedsInput, waiting), []string{
			"  still waiting for an answer to round 1 (asked 1m00s ago, 4m00s left): at 14:05:00 UTC it goes to `slack:#ops`",
		}},
		{90 * time.Second, task(wire.StateNeedsInput, waiting), nil},
		{2*time.Minute + 5*time.Second, task(wire.StateNeedsInput, waiting), []string{
			"  still waiting for an answer to round 1 (asked 2m05s ago, 2m55s left): at 14:05:00 UTC it goes to `slack:#ops`",
		}},
		// The route moves on to Slack: said at once, with the new deadline.
		{5 * time.Minute, task(wire.StateNeedsInput, func() wire.Round {
			r := waiting
			r.Step, r.StepDeadline = 1, t0.Add(10*time.Minute)
			return r
		}()), []string{
			"  still waiting at route step 2 of human=5m,slack:#ops=5m; at 14:10:00 UTC the default `draft` is taken",
		}},
		{5*time.Minute + 30*time.Second, task(wire.StateNeedsInput, waiting), []string{
			// (the fake server went back to step 1: a change again)
			"  still waiting at route step 1 of human=5m,slack:#ops=5m; at 14:05:00 UTC it goes to `slack:#ops`",
		}},
		// Nobody answered: the default was taken, and the log says why.
		{10 * time.Minute, task(wire.StateQueued, func() wire.Round {
			r := waiting
			r.State = wire.StateFinished
			r.Answer = &wire.Answer{Value: "draft", By: "nobody (the route ended)", Channel: "default", At: t0.Add(10 * time.Minute), Assumed: true}
			r.Decisions = []wire.Decision{{Step: "human", Result: "pending"}, {Step: "human", Result: "timed out", Detail: "no answer within 5m0s"},
				{Step: "slack:#ops", Result: "timed out", Detail: "no answer within 5m0s"}, {Step: "default", Result: "answered", Detail: "by nobody (the route ended)"}}
			return r
		}(), wire.Round{N: 2, DispatchID: "ci-7-r2", State: wire.StateQueued}), []string{
			"  nobody answered round 1 by 14:10:00 UTC: the default `draft` was taken (human timed out: no answer within 5m0s; slack:#ops timed out: no answer within 5m0s)",
			"ci-7 queued · round 2 · 10m00s",
		}},
		// No heartbeat while no person is awaited.
		{12 * time.Minute, task(wire.StateRunning, wire.Round{N: 2, DispatchID: "ci-7-r2", State: wire.StateRunning}), []string{
			"ci-7 running · round 2 · 12m00s",
		}},
		{14 * time.Minute, task(wire.StateRunning, wire.Round{N: 2, DispatchID: "ci-7-r2", State: wire.StateRunning}), nil},
	}
	for _, st := range steps {
		now = t0.Add(st.at)
		out.Reset()
		p.Update(st.task)
		var got []string
		if s := strings.TrimSuffix(out.String(), "\n"); s != "" {
			got = strings.Split(s, "\n")
		}
		if strings.Join(got, "\n") != strings.Join(st.want, "\n") {
			t.Errorf("at +%s the update wrote\n%s\nwant\n%s", st.at, strings.Join(got, "\n"), strings.Join(st.want, "\n"))
		}
	}
}

// TestWaitLinesAnswered: a person's answer is told with who gave it.
func TestWaitLinesAnswered(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	var out strings.Builder
	p := New(&out, view.UI{}, t0, func() time.Time { return t0.Add(time.Minute) })
	r := wire.Round{N: 1, DispatchID: "x-r1", State: wire.StateNeedsInput, Question: &schemas.NeedsInput{Question: "A or B?"}, AskedAt: t0,
		StepDeadline: t0.Add(time.Hour)}
	p.Update(&wire.Task{ID: "x", State: wire.StateNeedsInput, Request: wire.SubmitRequest{Route: "human=1h"}, Rounds: []wire.Round{r}})
	r.Answer = &wire.Answer{Value: "B", By: "carol", Channel: "cli", At: t0.Add(time.Minute)}
	p.Update(&wire.Task{ID: "x", State: wire.StateQueued, Rounds: []wire.Round{r, {N: 2, DispatchID: "x-r2", State: wire.StateQueued}}})
	for _, want := range []string{"at 15:00:00 UTC it expires (no default)", "  round 1 answered: `B` by carol via cli\nx queued · round 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress wrote\n%s\nwant it to contain %q", out.String(), want)
		}
	}
}
