package bus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// Streams and buckets made with one replica keep working for a process
// that asks for three: replicas are chosen at creation, an existing stream
// keeps its own (a single server could not hold three anyway).
func TestReplicasKeptOnExistingStreams(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	ctx := testCtx(t)
	r1 := connect(t, srv.ClientURL(), bus.Options{})
	if err := r1.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream (R1): %v", err)
	}
	if err := r1.EnsureQueue(ctx); err != nil {
		t.Fatalf("EnsureQueue (R1): %v", err)
	}
	if _, err := r1.KeyValue(ctx, "replicas_test", ""); err != nil {
		t.Fatalf("KeyValue (R1): %v", err)
	}

	r3 := connect(t, srv.ClientURL(), bus.Options{Replicas: 3})
	if err := r3.EnsureEventStream(ctx); err != nil {
		t.Errorf("EnsureEventStream (R3 on an R1 stream): %v", err)
	}
	if err := r3.EnsureQueue(ctx); err != nil {
		t.Errorf("EnsureQueue (R3 on R1 streams): %v", err)
	}
	if _, err := r3.KeyValue(ctx, "replicas_test", ""); err != nil {
		t.Errorf("KeyValue (R3 on an R1 bucket): %v", err)
	}
	js := rawJetStream(t, srv.ClientURL())
	for _, name := range []string{bus.EventStream, bus.QueueStream, bus.ControlStream, "KV_" + bus.ClaimBucket, "KV_replicas_test"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Errorf("Stream(%s): %v", name, err)
			continue
		}
		if got := st.CachedInfo().Config.Replicas; got != 1 {
			t.Errorf("%s has %d replicas after an R3 ensure, want the 1 it was created with", name, got)
		}
	}

	// A new stream gets the setting: a single server refuses three.
	if _, err := r3.KeyValue(ctx, "replicas_new", ""); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("KeyValue (R3, new bucket, one server) = %v, want the server's refusal of 3 replicas", err)
	}
}

func TestReplicasOutOfRange(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	if _, err := bus.Connect(testCtx(t), srv.ClientURL(), bus.Options{Replicas: 6}); err == nil {
		t.Error("Connect with 6 replicas succeeded, want an error (JetStream keeps at most 5)")
	}
}

// A bucket's stream keeps the least de-duplication window, whoever ensured
// it last: no put carries a Nats-Msg-Id, and a server recovering a stream
// loads every message of its window (nats.go's 2 minutes: at a restart
// after a burst, every task written in it) to rebuild duplicates.
func TestBucketsKeepNoDuplicateWindow(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	ctx := testCtx(t)
	js := rawJetStream(t, srv.ClientURL())
	for range 2 { // made, then ensured again as the next start does
		b := connect(t, srv.ClientURL(), bus.Options{})
		if _, err := b.KeyValue(ctx, "window_test", ""); err != nil {
			t.Fatalf("KeyValue: %v", err)
		}
		if _, err := b.KeyValueMarkers(ctx, "window_markers", "", time.Minute); err != nil {
			t.Fatalf("KeyValueMarkers: %v", err)
		}
		if err := b.EnsureQueue(ctx); err != nil {
			t.Fatalf("EnsureQueue: %v", err)
		}
		for _, name := range []string{"KV_window_test", "KV_window_markers", "KV_" + bus.ClaimBucket} {
			st, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatalf("Stream(%s): %v", name, err)
			}
			if got := st.CachedInfo().Config.Duplicates; got != bus.BucketDuplicateWindow {
				t.Errorf("%s: duplicate window %v, want %v", name, got, bus.BucketDuplicateWindow)
			}
		}
	}
}
