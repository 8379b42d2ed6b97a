package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/wire"
)

// TestOutboxSweep: a round written to its task as queued whose enqueue
// never completed (the queue's leader was being elected, the connection
// dropped) is put on the queue by the running orchestrator, not only at
// its next start. The cluster fault test found rounds stuck queued this
// way.
func TestOutboxSweep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := bustest.Bus(t)
	o, err := New(Config{Bus: b, Store: storagetest.FileStore(t), Logger: natstest.Logger(t), OutboxSweep: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })

	task, err := o.Submit(ctx, wire.SubmitRequest{TaskID: "stuck-1", Subagent: script("s", "true")})
	if err != nil || !currentRound(task).Enqueued {
		t.Fatalf("Submit = %+v, %v; want the round enqueued", task, err)
	}
	// As an enqueue that failed after the task was written leaves it.
	if _, err := o.store.update(ctx, task.ID, func(t *wire.Task) error {
		t.Rounds[len(t.Rounds)-1].Enqueued = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the sweep enqueues the round", func() bool {
		got, err := o.Get(ctx, task.ID)
		return err == nil && currentRound(got).Enqueued
	})
	bustest.WaitQueued(t, b, 1) // the repeat dropped by its msg-id
}
