package bus

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// TestStreamHandlesKept checks that reading a dispatch's cancel command
// and stored events looks each stream up once, not on every call (a
// runner does both on every claim, renewal and settle), and that a stream
// deleted and made again is still read.
func TestStreamHandlesKept(t *testing.T) {
	t.Parallel()
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
		t.Fatal(err)
	}
	// Every STREAM.INFO request of the bus, seen by a plain subscriber.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var infos atomic.Int64
	sub, err := nc.Subscribe(jetstream.DefaultAPIPrefix+"STREAM.INFO.>", func(*nats.Msg) { infos.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	const calls = 5
	for range calls {
		if cancel, err := b.CancelRequested(ctx, "s-1"); err != nil || cancel {
			t.Fatalf("CancelRequested = %v, %v; want false, nil", cancel, err)
		}
		if evs, err := b.StoredEvents(ctx, "s-1"); err != nil || len(evs) != 0 {
			t.Fatalf("StoredEvents = %v, %v; want none", evs, err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := infos.Load(); n > 2 {
		t.Errorf("%d calls each of CancelRequested and StoredEvents made %d STREAM.INFO requests; want at most 2 (one a stream)", calls, n)
	}

	// The control stream deleted and made again: a cancel on it is read.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, ControlStream); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cancel(ctx, "s-1"); err != nil {
		t.Fatal(err)
	}
	if cancel, err := b.CancelRequested(ctx, "s-1"); err != nil || !cancel {
		t.Errorf("CancelRequested after the stream was made again = %v, %v; want true, nil", cancel, err)
	}
}
