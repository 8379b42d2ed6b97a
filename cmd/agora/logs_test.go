package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestLogsStored: a round that has ended prints what storage keeps of its
// output, raw or as JSON, the current round or the one asked for.
func TestLogsStored(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	env := s.env
	s.submit(t, "out")
	const round1 = "reading a.go\nreading b.go\n"
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("out-r1"), strings.NewReader(round1)); err != nil {
		t.Fatal(err)
	}
	s.ask(t, "out", "A or B?", "A", "B")
	agora(t, env, "logs", "out").want(t, "logs of the current round", 0, []string{round1}, nil)
	agora(t, env, "answer", "out", "A").want(t, "answer", 0, nil, nil)

	// Round 2 is queued: no output yet, and logs says how to follow it.
	agora(t, env, "logs", "out").want(t, "logs of a queued round", 1, nil,
		[]string{"agora logs: round 2 of out is queued: its output is stored when it ends; follow it live with: agora logs out -f"})
	r := agora(t, env, "logs", "out", "--round", "1")
	if r.code != 0 || r.stdout != round1 || r.stderr != "" {
		t.Errorf("logs out --round 1 = %v; want exactly the stored output", r)
	}
	r = agora(t, env, "logs", "--json", "out", "--round", "1")
	var got view.LogsJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got != (view.LogsJSON{TaskID: "out", Round: 1, DispatchID: "out-r1", Output: round1}) {
		t.Errorf("logs --json = %v, %+v, %v", r, got, err)
	}
	agora(t, env, "logs", "out", "--round", "3").want(t, "logs of a round that does not exist", 1, nil,
		[]string{"task out has no round 3 (its rounds are 1 to 2)"})
	agora(t, env, "logs", "nope").want(t, "logs of an unknown task", 1, nil, []string{"no task nope"})
	agora(t, env, "logs").want(t, "logs without a task", 2, nil, []string{"want one TASK"})
	agora(t, env, "logs", "out", "--round=-1").want(t, "a negative round", 2, nil, []string{"want a round number"})

	// A round that ran and printed nothing that was kept prints nothing.
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("out-r2"), strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	s.end(t, "out", "out-r2", schemas.KindFinished, wire.StateFinished)
	r = agora(t, env, "logs", "out")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("logs of a round with empty output = %v", r)
	}
}

// TestLogsFollow: logs -f follows a running round live, returns when the
// round ends, and ends with what storage has that did not come live — a
// suffix of the stored output, each byte once. Interrupted, it exits 0.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	s.submit(t, "live")
	s.event(t, schemas.KindStarted, "live-r1", nil)
	s.waitState(t, "live", wire.StateRunning)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	follow := start(ctx, s.env, "logs", "live", "-f")
	followJSON := start(ctx, s.env, "logs", "live", "-f", "--json")
	interrupted := start(ctx, s.env, "logs", "live", "--follow")

	// Print a line every 10ms, as the runner would, until both followers
	// have shown one: their subscriptions are live from then on.
	var stored bytes.Buffer
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for i := 1; follow.stdout.String() == "" || followJSON.stdout.String() == ""; i++ {
		line := fmt.Sprintf("compiling %d\n", i)
		stored.WriteString(line)
		if err := s.bus.PublishLog("live-r1", []byte(line)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("logs -f showed no live output within 30s: %q, %q", follow.stdout.String(), follow.stderr.String())
		}
	}
	select {
	case code := <-follow.done:
		t.Fatalf("logs -f returned %d while the round runs", code)
	default:
	}
	stored.WriteString("done\n") // only in storage, as a chunk in flight at the end would be
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("live-r1"), bytes.NewReader(stored.Bytes())); err != nil {
		t.Fatal(err)
	}
	s.event(t, schemas.KindFinished, "live-r1", nil)
	if code := follow.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("logs -f exited %d: %q", code, follow.stderr.String())
	}
	out := follow.stdout.String()
	if !strings.HasSuffix(stored.String(), out) || !strings.HasSuffix(out, "done\n") {
		t.Errorf("logs -f printed %q; want a suffix of the stored output %q that ends with its last line", out, stored.String())
	}
	if code := followJSON.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("logs -f --json exited %d: %q", code, followJSON.stderr.String())
	}
	var joined strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(followJSON.stdout.String()), "\n") {
		var chunk view.LogsJSON
		if err := json.Unmarshal([]byte(line), &chunk); err != nil || chunk.TaskID != "live" || chunk.Round != 1 || chunk.DispatchID != "live-r1" {
			t.Fatalf("logs -f --json line %q: %+v, %v", line, chunk, err)
		}
		joined.WriteString(chunk.Output)
	}
	if !strings.HasSuffix(stored.String(), joined.String()) || !strings.HasSuffix(joined.String(), "done\n") {
		t.Errorf("logs -f --json chunks make %q; want a suffix of %q", joined.String(), stored.String())
	}
	// The third follower, if still there, ended with the round too, or
	// ends now with the interrupt: either way with 0.
	cancel()
	if code := interrupted.wait(t, 30*time.Second); code != 0 {
		t.Errorf("logs --follow exited %d, want 0; stderr %q", code, interrupted.stderr.String())
	}
	// Afterwards, without -f, the whole stored output.
	if r := agora(t, s.env, "logs", "live"); r.stdout != stored.String() {
		t.Errorf("logs live after the round = %v, want all of %q", r, stored.String())
	}
}
