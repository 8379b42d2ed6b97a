package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/wire"
)

// terminalEvents counts the terminal events stored for a dispatch.
func (s *stack) terminalEvents(dispatchID string) int {
	s.t.Helper()
	stored, err := s.bus.StoredEvents(context.Background(), dispatchID)
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, ev := range stored {
		if ev.Kind.Terminal() {
			n++
		}
	}
	return n
}

// TestRemoveRunningThenKeepGoing is the reproduction: removing a
// running task used to leave its dispatch.cancelled event unappliable
// ("task not found"), retried forever in front of every later event, so
// the next task stayed queued, also after a restart. Now the next task
// finishes within seconds, before and after a restart; the removed
// dispatch has one terminal event and leaves no container (newStack's
// clean-up checks); and the removed task's id can be submitted again.
func TestRemoveRunningThenKeepGoing(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	id := fmt.Sprintf("rm1-%d", testutil.RunNumber())
	task := s.submit(wire.SubmitRequest{TaskID: id, Subagent: script("sleeper", "echo working; sleep 20")})
	s.waitState(task.ID, wire.StateRunning)
	if err := s.orch.Remove(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	quick := func(what string) {
		t.Helper()
		start := time.Now()
		next := s.submit(wire.SubmitRequest{Subagent: script("hi", "echo hi")})
		s.waitState(next.ID, wire.StateFinished)
		t.Logf("%s: echo hi finished in %s", what, time.Since(start).Round(time.Millisecond))
	}
	quick("after rm")
	first := task.Rounds[0].DispatchID
	testutil.Eventually(t, time.Minute, "the removed dispatch's one terminal event", func() bool { return s.terminalEvents(first) == 1 })
	// The runner stores the cancelled round's output when it settles,
	// after the removal; its terminal event clears it again.
	testutil.Eventually(t, 30*time.Second, "the removed dispatch's output gone", func() bool {
		rc, err := s.store.Get(ctx, "dispatches/"+first+"/output.log")
		if err == nil {
			rc.Close()
		}
		return errors.Is(err, storage.ErrNotFound)
	})
	if st := s.orch.PipelineStats(); st.Dropped["unknown_task"] == 0 {
		t.Errorf("the removed task's cancel was not counted as an event of an unknown task: %+v", st)
	}

	if err := s.orch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s.orch = s.startOrchestrator()
	quick("after a restart")

	// The same id again: a new task whose dispatches do not collide with
	// the removed one's (queue msg-id, claims, events).
	again := s.submit(wire.SubmitRequest{TaskID: id, Subagent: script("hi", "echo again")})
	if again.Rounds[0].DispatchID == first {
		t.Errorf("the resubmitted task reuses the removed task's dispatch id %s", first)
	}
	again = s.waitState(again.ID, wire.StateFinished)
	if got := s.output(again.Rounds[0].DispatchID); !strings.Contains(got, "again") {
		t.Errorf("resubmitted task's output = %q", got)
	}
	if n := s.terminalEvents(first); n != 1 {
		t.Errorf("the removed dispatch has %d terminal events, want 1", n)
	}
}
