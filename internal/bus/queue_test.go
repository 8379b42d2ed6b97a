package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

func queueBus(t *testing.T) *Bus {
	t.Helper()
	srv := natstest.Start(t)
	ctx := context.Background()
	b, err := Connect(ctx, srv.ClientURL(), Options{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureQueue(ctx); err != nil {
		t.Fatalf("EnsureQueue: %v", err)
	}
	if err := b.EnsureQueue(ctx); err != nil {
		t.Fatalf("EnsureQueue again: %v", err)
	}
	return b
}

func request(id string) schemas.DispatchRequest {
	return schemas.DispatchRequest{Spec: schemas.DispatchSpec{DispatchID: id,
		Subagent: schemas.Subagent{Name: "x", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}}
}

func TestQueueRoundTrip(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()
	for _, id := range []string{"q-1", "q-2"} {
		if dup, err := b.Enqueue(ctx, request(id)); err != nil || dup {
			t.Fatalf("Enqueue(%s) = %v, %v", id, dup, err)
		}
	}
	if dup, err := b.Enqueue(ctx, request("q-1")); err != nil || !dup {
		t.Errorf("Enqueue(q-1) again = %v, %v; want a duplicate", dup, err)
	}
	// The consumer's pending count follows the stream's acknowledged
	// publishes a moment later, so it is waited for.
	if err := testutil.Poll(ctx, 10*time.Second, 10*time.Millisecond, func() error {
		if n, err := b.QueuedCount(ctx); err != nil || n != 2 {
			return fmt.Errorf("QueuedCount = %d, %v; want 2", n, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	bad := request("q-bad")
	bad.Network = "internet"
	if _, err := b.Enqueue(ctx, bad); err == nil {
		t.Error("Enqueue accepted a request that breaks its schema")
	}

	d, err := b.Fetch(ctx, time.Second)
	if err != nil || d == nil || d.Request.Spec.DispatchID != "q-1" || d.Delivered != 1 {
		t.Fatalf("Fetch = %+v, %v; want q-1 delivered once", d, err)
	}
	if err := d.Nak(0); err != nil {
		t.Fatal(err)
	}
	d, err = b.Fetch(ctx, time.Second)
	if err != nil || d == nil || d.Request.Spec.DispatchID != "q-1" || d.Delivered != 2 {
		t.Fatalf("Fetch after Nak = %+v, %v; want q-1 again", d, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	d, err = b.Fetch(ctx, time.Second)
	if err != nil || d == nil || d.Request.Spec.DispatchID != "q-2" {
		t.Fatalf("Fetch = %+v, %v; want q-2", d, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := b.Fetch(ctx, time.Second); err != nil || d != nil {
		t.Errorf("Fetch on an empty queue = %+v, %v; want nil, nil", d, err)
	}
}

func TestClaims(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()
	if c, err := b.GetClaim(ctx, "c-1"); c != nil || err != nil {
		t.Fatalf("GetClaim before any = %+v, %v", c, err)
	}
	// Two runners race for the same dispatch: exactly one wins.
	var wins, losses int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, runner := range []string{"r1", "r2", "r3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.CreateClaim(ctx, "c-1", Claim{State: ClaimRunning, Runner: runner})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrClaimed):
				losses++
			default:
				t.Errorf("CreateClaim: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || losses != 2 {
		t.Errorf("claims: %d won, %d lost; want 1 and 2", wins, losses)
	}
	c, err := b.GetClaim(ctx, "c-1")
	if err != nil || c.State != ClaimRunning {
		t.Fatalf("GetClaim = %+v, %v", c, err)
	}
	c.Container = "abc"
	if _, err := b.UpdateClaim(ctx, "c-1", *c, c.Revision); err != nil {
		t.Fatalf("UpdateClaim: %v", err)
	}
	if _, err := b.UpdateClaim(ctx, "c-1", *c, c.Revision); err == nil {
		t.Error("UpdateClaim at a stale revision succeeded")
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()

	// Queued: the cancel wins the claim, removes the request and reports it.
	if _, err := b.Enqueue(ctx, request("k-queued")); err != nil {
		t.Fatal(err)
	}
	queued, err := b.Cancel(ctx, "k-queued")
	if err != nil || !queued {
		t.Fatalf("Cancel(queued) = %v, %v; want queued", queued, err)
	}
	if err := testutil.Poll(ctx, 10*time.Second, 10*time.Millisecond, func() error {
		if n, err := b.QueuedCount(ctx); err != nil || n != 0 {
			return fmt.Errorf("QueuedCount after cancel = %d, %v; want 0", n, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	ev, err := b.TerminalEvent(ctx, "k-queued")
	if err != nil || ev == nil || ev.Kind != schemas.KindCancelled {
		t.Errorf("terminal event of a cancelled queued dispatch = %+v, %v", ev, err)
	}
	if _, err := b.CreateClaim(ctx, "k-queued", Claim{State: ClaimRunning, Runner: "r"}); !errors.Is(err, ErrClaimed) {
		t.Errorf("a runner could claim a cancelled dispatch: %v", err)
	}

	// Running: the command reaches the watcher; the runner owns the outcome.
	got := make(chan string, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := b.WatchControl(wctx, func(id, cmd string) { got <- id + " " + cmd }); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateClaim(ctx, "k-running", Claim{State: ClaimRunning, Runner: "r"}); err != nil {
		t.Fatal(err)
	}
	queued, err = b.Cancel(ctx, "k-running")
	if err != nil || queued {
		t.Fatalf("Cancel(running) = %v, %v; want not queued", queued, err)
	}
	select {
	case msg := <-got:
		if msg != "k-running cancel" {
			t.Errorf("watched %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel command never reached the watcher")
	}
	if ok, err := b.CancelRequested(ctx, "k-running"); err != nil || !ok {
		t.Errorf("CancelRequested = %v, %v", ok, err)
	}
	if ok, err := b.CancelRequested(ctx, "k-other"); err != nil || ok {
		t.Errorf("CancelRequested(never cancelled) = %v, %v", ok, err)
	}
}

func TestLogs(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	got := make(chan string, 1)
	stop, err := b.SubscribeLogs("l-1", func(p []byte) { got <- string(p) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := b.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishLog("l-1", []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-got:
		if line != "hello\n" {
			t.Errorf("log chunk = %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no log chunk")
	}
}
