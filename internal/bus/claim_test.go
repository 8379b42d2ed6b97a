package bus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
)

// TestClaim: one call tells a runner everything it needs before it starts
// a dispatch — settled already, claimed now, whose claim it is, cancelled.
func TestClaim(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()

	tests := []struct {
		name string
		// before prepares the dispatch's state on the bus.
		before func(t *testing.T, id string)
		runner string
		check  func(t *testing.T, l *Lease)
	}{
		{"nobody holds it", nil, "r1", func(t *testing.T, l *Lease) {
			if !l.Created || l.Settled != nil || l.CancelRequested {
				t.Errorf("Claim = %+v; want created, not settled, not cancelled", l)
			}
		}},
		{"another runner holds it", func(t *testing.T, id string) { claim(t, b, id, "r2") }, "r1", func(t *testing.T, l *Lease) {
			if l.Created || l.Found.Runner != "r2" || l.Found.State != ClaimRunning {
				t.Errorf("Claim = %+v; want found running on r2", l)
			}
		}},
		{"an earlier process of this runner holds it", func(t *testing.T, id string) { claim(t, b, id, "r1") }, "r1", func(t *testing.T, l *Lease) {
			if l.Created || l.Found.Runner != "r1" {
				t.Errorf("Claim = %+v; want found on r1", l)
			}
			// Its revision is the lease's: renewing needs no second read.
			if _, err := l.Renew(ctx, "c1"); err != nil {
				t.Errorf("Renew: %v", err)
			}
		}},
		{"cancelled while queued", func(t *testing.T, id string) {
			if _, err := b.Enqueue(ctx, request(id)); err != nil {
				t.Fatal(err)
			}
			if queued, err := b.Cancel(ctx, id); err != nil || !queued {
				t.Fatalf("Cancel = %v, %v", queued, err)
			}
		}, "r1", func(t *testing.T, l *Lease) {
			if l.Settled == nil || l.Settled.Kind != schemas.KindCancelled {
				t.Errorf("Claim = %+v; want settled by dispatch.cancelled", l)
			}
		}},
		{"cancel claimed it but its event is missing", func(t *testing.T, id string) {
			if _, err := b.CreateClaim(ctx, id, Claim{State: ClaimCancelled}); err != nil {
				t.Fatal(err)
			}
		}, "r1", func(t *testing.T, l *Lease) {
			if l.Created || l.Found.State != ClaimCancelled {
				t.Errorf("Claim = %+v; want found cancelled", l)
			}
		}},
		{"cancel came after this runner's claim", func(t *testing.T, id string) {
			claim(t, b, id, "r1")
			if queued, err := b.Cancel(ctx, id); err != nil || queued {
				t.Fatalf("Cancel = %v, %v", queued, err)
			}
		}, "r1", func(t *testing.T, l *Lease) {
			if !l.CancelRequested {
				t.Errorf("Claim = %+v; want the cancel read", l)
			}
		}},
		{"settled", func(t *testing.T, id string) {
			code, ms := 0, int64(5)
			if _, err := b.PublishEvent(ctx, schemas.Event{Kind: schemas.KindFinished, DispatchID: id, Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms}); err != nil {
				t.Fatal(err)
			}
		}, "r1", func(t *testing.T, l *Lease) {
			if l.Settled == nil || l.Settled.Kind != schemas.KindFinished || l.Created {
				t.Errorf("Claim = %+v; want settled by dispatch.finished, nothing claimed", l)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "claim-" + string(rune('a'+i))
			if tt.before != nil {
				tt.before(t, id)
			}
			l, err := b.Claim(ctx, id, tt.runner)
			if err != nil {
				t.Fatalf("Claim: %v", err)
			}
			tt.check(t, l)
		})
	}
}

// TestLease: a lease updates the claim by compare-and-swap; an adopted
// container's lease (no revision) takes over its own claim, never
// another runner's.
func TestLease(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()

	l, err := b.Claim(ctx, "l-1", "r1")
	if err != nil || !l.Created {
		t.Fatalf("Claim = %+v, %v", l, err)
	}
	if cancel, err := l.Renew(ctx, "c1"); err != nil || cancel {
		t.Fatalf("Renew = %v, %v", cancel, err)
	}
	if c := getClaim(t, b, "l-1"); c.Container != "c1" || c.State != ClaimRunning {
		t.Errorf("claim after Renew = %+v", c)
	}

	// A new process of r1 adopts the container: no revision, still its claim.
	adopted := b.Lease("l-1", "r1")
	if _, err := adopted.Renew(ctx, "c1"); err != nil {
		t.Fatalf("Renew of an adopted lease: %v", err)
	}
	// The first lease's revision is stale now; it still is r1's claim.
	if err := l.Done(ctx, "c1"); err != nil {
		t.Fatalf("Done at a stale revision of its own claim: %v", err)
	}
	if c := getClaim(t, b, "l-1"); c.State != ClaimDone {
		t.Errorf("claim after Done = %+v", c)
	}

	// r2 takes over r3's silent claim as lost; r3's lease may not write it.
	r3, err := b.Claim(ctx, "l-2", "r3")
	if err != nil || !r3.Created {
		t.Fatalf("Claim = %+v, %v", r3, err)
	}
	r2, err := b.Claim(ctx, "l-2", "r2")
	if err != nil || r2.Found.Runner != "r3" {
		t.Fatalf("Claim by r2 = %+v, %v", r2, err)
	}
	if err := r2.TakeOver(ctx); err != nil {
		t.Fatalf("TakeOver: %v", err)
	}
	if err := r2.TakeOver(ctx); err == nil {
		t.Error("a second TakeOver of a claim that changed succeeded")
	}
	if _, err := r3.Renew(ctx, "c3"); err == nil {
		t.Error("the silent runner renewed a claim taken over as lost")
	}
	if c := getClaim(t, b, "l-2"); c.State != ClaimLost || c.Runner != "r2" {
		t.Errorf("claim after TakeOver = %+v; want lost, settled by r2", c)
	}
}

func claim(t *testing.T, b *Bus, id, runner string) {
	t.Helper()
	if _, err := b.CreateClaim(context.Background(), id, Claim{State: ClaimRunning, Runner: runner, Heartbeat: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
}

func getClaim(t *testing.T, b *Bus, id string) *Claim {
	t.Helper()
	c, err := b.GetClaim(context.Background(), id)
	if err != nil || c == nil {
		t.Fatalf("GetClaim(%s) = %+v, %v", id, c, err)
	}
	return c
}

// TestClaimsBucketOpenedOnce: a runner's claims, renewals and settles look
// the claims bucket up once per Bus, not on every call (each lookup is a
// stream info request to the server).
func TestClaimsBucketOpenedOnce(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()
	infos, err := b.nc.SubscribeSync("$JS.API.STREAM.INFO.KV_" + ClaimBucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = infos.Unsubscribe() })
	lookups := func() int {
		t.Helper()
		if err := b.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := infos.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 5 {
		id := fmt.Sprintf("once-%d", i)
		l, err := b.Claim(ctx, id, "r1")
		if err != nil || !l.Created {
			t.Fatalf("Claim(%s) = %+v, %v", id, l, err)
		}
		if _, err := l.Renew(ctx, "c1"); err != nil {
			t.Fatalf("Renew(%s): %v", id, err)
		}
		if err := l.Done(ctx, "c1"); err != nil {
			t.Fatalf("Done(%s): %v", id, err)
		}
		getClaim(t, b, id)
		if i == 0 && lookups() == 0 {
			t.Fatal("the first claim looked nothing up: this test counts the wrong requests")
		}
	}
	if n := lookups(); n > 2 {
		t.Errorf("5 claims, renewals, settles and reads made %d stream info requests for %s; want it opened once (at most 2: the bucket and its status)", n, ClaimBucket)
	}
}
