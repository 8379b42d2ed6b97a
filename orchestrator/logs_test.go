package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestUnseenOutput(t *testing.T) {
	t.Parallel()
	stored := []byte("one\ntwo\nthree\nfour\n")
	tests := []struct {
		name  string
		live  string // what the follower wrote, in all
		tail  string // the last of it that it kept
		want  string
		outOf []byte // default stored
	}{
		{name: "nothing live: all of it", live: "", want: "one\ntwo\nthree\nfour\n"},
		{name: "from the start, all live", live: "one\ntwo\nthree\nfour\n", tail: "four\n", want: ""},
		{name: "from the start, last chunks in flight", live: "one\ntwo\n", tail: "two\n", want: "three\nfour\n"},
		{name: "from the start, tail is all", live: "one\n", tail: "one\n", want: "two\nthree\nfour\n"},
		{name: "joined late", live: "three\n", tail: "three\n", want: "four\n"},
		{name: "joined late, saw the end", live: "two\nthree\nfour\n", tail: "three\nfour\n", want: ""},
		{name: "repeated lines, from the start", live: "a\na\n", tail: "a\n", want: "a\nb\n", outOf: []byte("a\na\na\nb\n")},
		{name: "stored copy cut at the cap", live: "one\ntwo\nthree\nfour\nfive\n", tail: "five\n", want: "",
			outOf: []byte("one\ntwo\n[agora: output truncated at 8 bytes; 20 more bytes dropped]\n")},
		{name: "live bytes not in the stored copy", live: "zzz\n", tail: "zzz\n", want: ""},
	}
	for _, tt := range tests {
		out := stored
		if tt.outOf != nil {
			out = tt.outOf
		}
		got := unseenOutput(out, int64(len(tt.live)), []byte(tt.tail))
		if string(got) != tt.want {
			t.Errorf("%s: unseenOutput(%q, %d, %q) = %q, want %q", tt.name, out, len(tt.live), tt.tail, got, tt.want)
		}
	}
}

// logsStack is the real orchestrator on an embedded NATS with file
// storage and no runner: the test plays the runner, publishing events, live
// output and the stored copy itself.
type logsStack struct {
	bus   *bus.Bus
	store storage.Store
	orch  *Orchestrator
}

func newLogsStack(t *testing.T) *logsStack {
	t.Helper()
	ctx := t.Context()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	return &logsStack{bus: b, store: store, orch: o}
}

func (s *logsStack) publish(t *testing.T, kind schemas.EventKind, dispatchID string) {
	t.Helper()
	zero, ms := 0, int64(10)
	ev := schemas.Event{Kind: kind, DispatchID: dispatchID, Time: time.Now().UTC()}
	if kind.Terminal() {
		ev.ExitCode, ev.DurationMS = &zero, &ms
	}
	if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
		t.Fatalf("publish %s of %s: %v", kind, dispatchID, err)
	}
}

func (s *logsStack) waitRound(t *testing.T, taskID string, state wire.State) {
	t.Helper()
	err := testutil.Poll(t.Context(), 30*time.Second, testutil.DefaultPollInterval, func() error {
		task, err := s.orch.Get(t.Context(), taskID)
		if err != nil {
			return testutil.Permanent(err)
		}
		if got := currentRound(task).State; got != state {
			return fmt.Errorf("round of %s is %s, want %s", taskID, got, state)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (s *logsStack) submit(t *testing.T, id string) {
	t.Helper()
	if _, err := s.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: id, Subagent: script("printer", "echo hi")}); err != nil {
		t.Fatal(err)
	}
}

func TestLogsStoredOutputAndErrors(t *testing.T) {
	t.Parallel()
	s := newLogsStack(t)
	ctx := t.Context()
	s.submit(t, "stored")
	var out bytes.Buffer
	if err := s.orch.Logs(ctx, "stored", 0, false, &out); !errors.Is(err, wire.ErrWrongState) || !strings.Contains(err.Error(), "round 1 is queued") {
		t.Errorf("Logs of a queued round = %v, want ErrWrongState naming the round", err)
	}
	if err := s.orch.Logs(ctx, "stored", 2, false, &out); !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), "no round 2") {
		t.Errorf("Logs(round 2) = %v, want ErrInvalidRequest saying there is no round 2", err)
	}
	if err := s.orch.Logs(ctx, "nope", 0, false, &out); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Logs of an unknown task = %v, want ErrNotFound", err)
	}
	const output = "step 1\nstep 2\n{\"kind\":\"dispatch.finished\"}\n"
	if err := s.store.Put(ctx, OutputKey("stored-r1"), strings.NewReader(output)); err != nil {
		t.Fatal(err)
	}
	s.publish(t, schemas.KindStarted, "stored-r1")
	s.publish(t, schemas.KindFinished, "stored-r1")
	s.waitRound(t, "stored", wire.StateFinished)
	for _, round := range []int{0, 1} {
		out.Reset()
		if err := s.orch.Logs(ctx, "stored", round, false, &out); err != nil || out.String() != output {
			t.Errorf("Logs(round %d) = %v, output %q; want %q", round, err, out.String(), output)
		}
		out.Reset()
		if err := s.orch.Logs(ctx, "stored", round, true, &out); err != nil || out.String() != output {
			t.Errorf("Logs(round %d, follow) of an ended round = %v, output %q; want the stored output", round, err, out.String())
		}
	}

	// A round cancelled before it started has no output, at once.
	s.submit(t, "never-ran")
	if _, err := s.orch.Cancel(ctx, "never-ran"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := s.orch.Logs(ctx, "never-ran", 0, true, &out); err != nil || out.Len() != 0 {
		t.Errorf("Logs of a round that never ran = %v, %q; want no output, no error", err, out.String())
	}
}

// TestLogsFollow follows a running round while the test, as a runner
// would, publishes its output live, then stores the whole of it and ends
// the round: the follower gets what came live and then the rest from
// storage — a suffix of the stored output that runs to its end, each byte
// once — and returns when the round has ended.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	s := newLogsStack(t)
	ctx := t.Context()
	s.submit(t, "live")
	s.publish(t, schemas.KindStarted, "live-r1")
	s.waitRound(t, "live", wire.StateRunning)

	got := &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { done <- s.orch.Logs(ctx, "live", 1, true, got) }()

	// Print a line every 10ms until the follower has shown one: its
	// subscription is live from then on.
	var stored bytes.Buffer
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for i := 1; got.String() == ""; i++ {
		line := fmt.Sprintf("tick %d\n", i)
		stored.WriteString(line)
		if err := s.bus.PublishLog("live-r1", []byte(line)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the follower showed no live output within 30s")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Logs(follow) returned %v while the round runs", err)
	default:
	}
	// The last line goes to storage only, as a chunk still in flight when
	// the round ended would.
	stored.WriteString("the end\n")
	if err := s.store.Put(ctx, OutputKey("live-r1"), bytes.NewReader(stored.Bytes())); err != nil {
		t.Fatal(err)
	}
	s.publish(t, schemas.KindFinished, "live-r1")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Logs(follow) = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Logs(follow) did not return within 30s of the round's end")
	}
	out := got.String()
	if !strings.HasSuffix(stored.String(), out) || !strings.HasSuffix(out, "the end\n") {
		t.Errorf("followed output %q is not a suffix of the stored output %q ending with the stored-only line", out, stored.String())
	}
}

// TestLogsFollowRemovedTask: a task removed while its round is followed
// ends the follow with ErrNotFound.
func TestLogsFollowRemovedTask(t *testing.T) {
	t.Parallel()
	s := newLogsStack(t)
	s.submit(t, "gone")
	done := make(chan error, 1)
	go func() { done <- s.orch.Logs(t.Context(), "gone", 0, true, &testutil.Buffer{}) }()
	if err := s.orch.Remove(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// Removing cancels first: the follow may end on the cancel (no
		// output, round never ran) or on the removal.
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("Logs(follow) of a removed task = %v, want nil or ErrNotFound", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Logs(follow) did not return within 30s of the removal")
	}
}
