package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestStatsVerb: agora stats of a batch whose tasks' rounds the test
// drives with lifecycle events on the real bus: one asks a question with
// options and a default, answered with the default, and finishes; the
// other finishes at once. Both report usage.
func TestStatsVerb(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, id := range []string{"st-ask", "st-once"} {
		agora(t, s.env, "dispatch", "--command", "true", "--task-id", id, "--label", wire.BatchLabel+"=st-1").want(t, "dispatch "+id, 0, nil, nil)
	}
	agora(t, s.env, "dispatch", "--command", "true", "--task-id", "st-other").want(t, "dispatch outside the batch", 0, nil, nil)
	zero, ms := 0, int64(5)
	red := "red"
	publish := func(ev schemas.Event) {
		t.Helper()
		ev.Time, ev.DurationMS = time.Now().UTC(), &ms
		if ev.Kind != schemas.KindStarted {
			ev.ExitCode = &zero
		}
		if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(id string, state wire.State, round int) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, id+" "+string(state), func() bool {
			task, err := s.orch.Get(t.Context(), id)
			return err == nil && task.State == state && len(task.Rounds) == round
		})
	}
	usage := &schemas.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.01}
	publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: "st-ask-r1"})
	publish(schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: "st-ask-r1", Usage: usage,
		NeedsInput: &schemas.NeedsInput{Question: "Colour?", Options: []string{"red", "blue"}, Default: &red}})
	waitFor("st-ask", wire.StateNeedsInput, 1)
	agora(t, s.env, "answer", "st-ask", "red").want(t, "answer with the default", 0, nil, nil)
	publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: "st-ask-r2"})
	publish(schemas.Event{Kind: schemas.KindFinished, DispatchID: "st-ask-r2", Usage: usage})
	publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: "st-once-r1"})
	publish(schemas.Event{Kind: schemas.KindFinished, DispatchID: "st-once-r1", Usage: usage})
	waitFor("st-ask", wire.StateFinished, 2)
	waitFor("st-once", wire.StateFinished, 1)

	r := agora(t, s.env, "stats", "--batch", "st-1")
	r.want(t, "stats of the batch", 0, []string{"2 tasks asked 1 question; waiting for answers took "}, nil)
	var row string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "(all)") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	// 2 tasks, 0.5 questions a task, all with options and a default, the
	// default taken, 1.5 rounds a task (p90 2), 180 tokens and 1.5 cents a task.
	if !strings.HasPrefix(row, "(all) 2 0.5 100% 100% 100% ") || !strings.Contains(row, " 1.5·2 ") || !strings.HasSuffix(row, " 180 $0.0150") {
		t.Errorf("the (all) row = %q\n%s", row, r.stdout)
	}
	r = agora(t, s.env, "stats", "--batch", "st-1", "--json")
	var st wire.Stats
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Total.Tasks != 2 || st.Total.DefaultTaken != 1 || st.Total.Usage == nil || st.Total.Usage.Tasks != 2 {
		t.Errorf("stats --json = %s (%v); want the batch's 2 tasks, the default taken once, usage of both", r.stdout, err)
	}
	agora(t, s.env, "stats", "--since", "1h").want(t, "stats of the last hour", 0, []string{"3 tasks asked 1 question"}, nil)
	agora(t, s.env, "stats", "--subagent", "nobody").want(t, "stats of no task", 0, []string{"no tasks match"}, nil)
	for _, bad := range []struct{ args, want []string }{
		{[]string{"--batch", "a", "--label", "b=c"}, []string{"--batch and --label both given"}},
		{[]string{"--label", "team"}, []string{`--label "team": want KEY=VALUE`}},
		{[]string{"--since", "yesterday"}, []string{`--since "yesterday": want a period back from now`}},
		{[]string{"--limit", "5000"}, []string{"--limit 5000: want 1 to 1000"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
	} {
		agora(t, s.env, append([]string{"stats"}, bad.args...)...).want(t, "stats "+strings.Join(bad.args, " "), 2, nil, bad.want)
	}
}
