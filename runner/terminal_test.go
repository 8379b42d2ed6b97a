package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// TestRedeliveredAfterAnotherRunnerSettled is TestClusterFaults' finding
// (seed 1795920951132211753): runner A relayed a dispatch's needs_input on
// its own subject, marked the claim done, and its acknowledgement of the
// request was lost (the queue consumer's leader was down: "no
// responders"). The request came back to runner B, which counts no other
// runner's events: it saw no terminal event, found A's done claim, and once
// the claim's heartbeat was older than the lease took it over as lost and
// published dispatch.failed — a second terminal event. A done claim is a
// recorded outcome: B acknowledges the request and publishes nothing.
func TestRedeliveredAfterAnotherRunnerSettled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.LeaseTimeout = time.Second })
	req := request("exit 0")
	id := req.Spec.DispatchID
	other := settledByAnotherRunner(t, h, req, func(c *bus.Claim) { c.State = bus.ClaimDone })
	h.enqueue(req)
	h.start()
	waitAcknowledged(t, h, id)
	h.assertOnce(id)
	if ev, err := other.TerminalEvent(context.Background(), id); err != nil || ev == nil || ev.Kind != schemas.KindNeedsInput {
		t.Errorf("TerminalEvent = %+v, %v; want the other runner's needs_input", ev, err)
	}
}

// TestTakeOverFindsTheHoldersOutcome: the runner holding a dispatch stored
// its terminal event and then stopped (claim still running, its heartbeat
// past the lease). The runner the request comes back to takes the claim
// over, but its worker-lost failure is published only on the condition
// that no terminal event counts: the holder's does, so nothing is
// published and the request is acknowledged.
func TestTakeOverFindsTheHoldersOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.LeaseTimeout = time.Second })
	req := request("exit 0")
	id := req.Spec.DispatchID
	settledByAnotherRunner(t, h, req, nil)
	h.enqueue(req)
	h.start()
	waitAcknowledged(t, h, id)
	h.assertOnce(id)
}

// TestOwnLostClaimNotRun: this runner took a dispatch over as lost and
// stopped before its worker-lost was stored; the request comes back to
// it. It used to find its own claim, no container, and start the dispatch
// (a round run twice). Now it settles it as the takeover would have — and
// the runner it took over from had stored the outcome, so nothing is
// published and no container is created.
func TestOwnLostClaimNotRun(t *testing.T) {
	t.Parallel()
	var created atomic.Int32
	h := newHarness(t, nil)
	h.cfg.Engine = &hookEngine{Engine: h.engine, afterCreate: func(context.Context, compute.ContainerSpec, string) { created.Add(1) }}
	req := request("exit 0")
	id := req.Spec.DispatchID
	settledByAnotherRunner(t, h, req, func(c *bus.Claim) {
		c.State, c.Previous, c.Runner, c.Heartbeat = bus.ClaimLost, c.Runner, h.cfg.ID, time.Now().UTC()
	})
	h.enqueue(req)
	h.start()
	waitAcknowledged(t, h, id)
	h.assertOnce(id)
	if n := created.Load(); n != 0 {
		t.Errorf("%d containers created for a dispatch this runner had taken over as lost; want none", n)
	}
}

// settledByAnotherRunner stores, as another runner would, req's started
// and needs_input on that runner's subject and leaves its claim running,
// its heartbeat an hour old, then changed by change (nil: as it is). It
// returns that runner's bus.
func settledByAnotherRunner(t *testing.T, h *harness, req schemas.DispatchRequest, change func(*bus.Claim)) *bus.Bus {
	t.Helper()
	ctx := context.Background()
	id := req.Spec.DispatchID
	if err := h.bus.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := h.bus.AsRunner(fmt.Sprintf("other-%d", seq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	code, ms := 0, int64(5)
	for _, ev := range []schemas.Event{
		{Kind: schemas.KindStarted, DispatchID: id, TaskID: req.Spec.TaskID, Round: 1, Time: time.Now().UTC()},
		{Kind: schemas.KindNeedsInput, DispatchID: id, TaskID: req.Spec.TaskID, Round: 1, Time: time.Now().UTC(),
			ExitCode: &code, DurationMS: &ms, NeedsInput: &schemas.NeedsInput{Question: "A or B?"}},
	} {
		if _, err := other.PublishEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	c := bus.Claim{State: bus.ClaimRunning, Runner: runnerIDOf(t, other, id), Heartbeat: time.Now().Add(-time.Hour).UTC()}
	rev, err := h.bus.CreateClaim(ctx, id, c)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&c)
		if _, err := h.bus.UpdateClaim(ctx, id, c, rev); err != nil {
			t.Fatal(err)
		}
	}
	return other
}

// runnerIDOf is the runner id of b's events for id, read back from the
// subject it stored them on.
func runnerIDOf(t *testing.T, b *bus.Bus, id string) string {
	t.Helper()
	stored, err := b.StoredEvents(context.Background(), id)
	if err != nil || len(stored) == 0 {
		t.Fatalf("StoredEvents(%s) = %v, %v", id, stored, err)
	}
	_, runner, _ := bus.ParseEventSubject(stored[0].Subject)
	return runner
}

// waitAcknowledged waits until the request of dispatch id has left the
// work queue (a request is removed when it is acknowledged) and the runner
// has let go of it.
func waitAcknowledged(t *testing.T, h *harness, id string) {
	t.Helper()
	nc, err := nats.Connect(h.srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the request of "+id+" acknowledged", func() bool {
		st, err := js.Stream(context.Background(), bus.QueueStream)
		if err != nil {
			return false
		}
		info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(bus.QueueSubject(id)))
		return err == nil && len(info.State.Subjects) == 0 && h.runner.lookup(id) == nil
	})
}
