package orchestrator

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestIfUnanswered: the consequence of no answer, for each place on a
// route and each limit, is what the router will do (route.go's step).
func TestIfUnanswered(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	draft := "draft"
	tests := []struct {
		name     string
		route    string
		step     int
		deadline time.Time
		def      *string
		maxWait  int
		waitedMS int64
		want     wire.IfUnanswered
	}{
		{"escalates to the next step", "memory,human=5m,slack:#ops=1h", 1, now.Add(5 * time.Minute), nil, 0, 0,
			wire.IfUnanswered{At: now.Add(5 * time.Minute), Action: wire.IfUnansweredEscalate, Next: "slack:#ops",
				Text: "at 14:05 UTC it goes to `slack:#ops`"}},
		{"the last step takes the default", "human=5m", 0, now.Add(5 * time.Minute), &draft, 0, 0,
			wire.IfUnanswered{At: now.Add(5 * time.Minute), Action: wire.IfUnansweredDefault, Default: "draft",
				Text: "at 14:05 UTC the default `draft` is taken"}},
		{"the last step without a default expires", "human=5m", 0, now.Add(5 * time.Minute), nil, 0, 0,
			wire.IfUnanswered{At: now.Add(5 * time.Minute), Action: wire.IfUnansweredExpire,
				Text: "at 14:05 UTC it expires (no default)"}},
		{"the total wait runs out first", "human=24h", 0, now.Add(24 * time.Hour), &draft, 600, 0,
			wire.IfUnanswered{At: now.Add(10 * time.Minute), Action: wire.IfUnansweredExpire,
				Text: "at 14:10 UTC it fails: the task's total wait for answers (limits.max_wait_seconds) runs out"}},
		{"earlier rounds' waits count", "human=24h", 0, now.Add(24 * time.Hour), nil, 600, 300_000,
			wire.IfUnanswered{At: now.Add(5 * time.Minute), Action: wire.IfUnansweredExpire,
				Text: "at 14:05 UTC it fails: the task's total wait for answers (limits.max_wait_seconds) runs out"}},
		{"a day or more away carries the date", "human=48h", 0, now.Add(48 * time.Hour), nil, 0, 0,
			wire.IfUnanswered{At: now.Add(48 * time.Hour), Action: wire.IfUnansweredExpire,
				Text: "at 2026-11-28 14:00 UTC it expires (no default)"}},
		{"tomorrow, under a day away, carries the date", "human=12h", 0, now.Add(12 * time.Hour), nil, 0, 0,
			wire.IfUnanswered{At: now.Add(12 * time.Hour), Action: wire.IfUnansweredExpire,
				Text: "at 2026-11-27 02:00 UTC it expires (no default)"}},
	}
	for _, tt := range tests {
		task := &wire.Task{ID: "t", State: wire.StateNeedsInput, WaitedMS: tt.waitedMS,
			Request: wire.SubmitRequest{Route: tt.route, Limits: wire.Limits{MaxWaitSeconds: tt.maxWait}},
			Rounds: []wire.Round{{N: 1, State: wire.StateNeedsInput, AskedAt: now, Step: tt.step, StepDeadline: tt.deadline,
				Question: &schemas.NeedsInput{Question: "which?", Default: tt.def}}}}
		got := ifUnanswered(task, &task.Rounds[0], now)
		if got == nil || *got != tt.want {
			t.Errorf("%s: ifUnanswered = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	answered := &wire.Task{State: wire.StateNeedsInput, Rounds: []wire.Round{{Question: &schemas.NeedsInput{Question: "q"}, Answer: &wire.Answer{Value: "a"}}}}
	if got := ifUnanswered(answered, &answered.Rounds[0], now); got != nil {
		t.Errorf("ifUnanswered of an answered round = %+v, want nil", got)
	}
	finished := &wire.Task{State: wire.StateFinished, Rounds: []wire.Round{{Question: &schemas.NeedsInput{Question: "q"}}}}
	if got := ifUnanswered(finished, &finished.Rounds[0], now); got != nil {
		t.Errorf("ifUnanswered of a finished task = %+v, want nil", got)
	}
}

// TestIfUnansweredShown: a task read back, the questions list and the
// question groups all carry the consequence of the open question.
func TestIfUnansweredShown(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	ctx := t.Context()
	def := "keep"
	task := s.askedTask(t, "consequence", schemas.NeedsInput{Question: "which file?", Options: []string{"keep", "drop"}, Default: &def})
	u := task.Rounds[0].IfUnanswered
	if u == nil || u.Action != wire.IfUnansweredDefault || u.Default != "keep" || !u.At.Equal(task.Rounds[0].StepDeadline) {
		t.Fatalf("Get: round 1's IfUnanswered = %+v, want the default keep at the step deadline %s", u, task.Rounds[0].StepDeadline)
	}
	page, err := s.orch.Questions(ctx, wire.PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Questions) != 1 || page.Questions[0].IfUnanswered == nil || page.Questions[0].IfUnanswered.Text != u.Text {
		t.Errorf("Questions = %+v, want one with IfUnanswered %q", page.Questions, u.Text)
	}
	groups, err := s.orch.QuestionGroups(ctx, wire.GroupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].IfUnanswered == nil || groups[0].IfUnanswered.Text != u.Text {
		t.Errorf("QuestionGroups = %+v, want one with IfUnanswered %q", groups, u.Text)
	}
}

// TestDefaultTakenLogged: when nobody answers and the route ends, the
// default is taken and serve's log says which and why.
func TestDefaultTakenLogged(t *testing.T) {
	t.Parallel()
	var logs testutil.Buffer
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	o, err := New(Config{Bus: b, Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	if _, err := o.Submit(t.Context(), wire.SubmitRequest{TaskID: "unattended", Route: "human=1s", Subagent: script("s", "true")}); err != nil {
		t.Fatal(err)
	}
	def := "draft"
	zero, ms := 0, int64(5)
	for _, ev := range []schemas.Event{{Kind: schemas.KindStarted, DispatchID: "unattended-r1"},
		{Kind: schemas.KindNeedsInput, DispatchID: "unattended-r1", ExitCode: &zero, DurationMS: &ms,
			NeedsInput: &schemas.NeedsInput{Question: "Publish?", Options: []string{"draft", "publish"}, Default: &def}}} {
		ev.Time = time.Now().UTC()
		if _, err := b.PublishEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 30*time.Second, "the default taken", func() bool {
		task, err := o.Get(t.Context(), "unattended")
		return err == nil && task.Rounds[0].Answer != nil
	})
	testutil.Eventually(t, 10*time.Second, "the log line", func() bool {
		return strings.Contains(logs.String(), `msg="default taken" task_id=unattended round=1 answer=draft why="nobody answered along the route human=1s"`)
	})
}
