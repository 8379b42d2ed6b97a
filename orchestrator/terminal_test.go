package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestSecondTerminalEventIgnored: should a dispatch's events ever hold two
// terminal events (TestClusterFaults once stored needs_input, then a
// runner's worker-lost failure), the orchestrator applies the first and
// acknowledges the second without a change: the round keeps its question,
// the task waits for its answer.
func TestSecondTerminalEventIgnored(t *testing.T) {
	t.Parallel()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	ctx := t.Context()
	if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: "two-term", Subagent: script("s", "true")}); err != nil {
		t.Fatal(err)
	}
	get := func() *wire.Task {
		task, err := o.Get(ctx, "two-term")
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	id := get().Rounds[0].DispatchID

	publish(t, b, schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: id, TaskID: "two-term", Round: 1,
		NeedsInput: &schemas.NeedsInput{Question: "A or B?", Options: []string{"A", "B"}}})
	testutil.Eventually(t, 10*time.Second, "the question applied", func() bool { return get().State == wire.StateNeedsInput })
	applied := o.PipelineStats().Applied

	publish(t, b, schemas.Event{Kind: schemas.KindFailed, DispatchID: id, TaskID: "two-term", Round: 1,
		Failure: &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: "runner r0 stopped renewing its claim"}})
	testutil.Eventually(t, 10*time.Second, "the second terminal event acknowledged", func() bool {
		return o.PipelineStats().Applied > applied
	})
	task := get()
	r := task.Rounds[0]
	if task.State != wire.StateNeedsInput || len(task.Rounds) != 1 || r.State != wire.StateNeedsInput || r.Question == nil ||
		r.Question.Question != "A or B?" || r.Failure != nil {
		t.Errorf("after needs_input then failed: task %s, %d rounds, round 1 %s, question %+v, failure %+v; want the question kept, no failure",
			task.State, len(task.Rounds), r.State, r.Question, r.Failure)
	}
	if st := o.PipelineStats(); st.Parked != 0 || st.Retried != 0 {
		t.Errorf("pipeline stats = %+v; want the second event acknowledged as applied already, not retried or parked", st)
	}
}
