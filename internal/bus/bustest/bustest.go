// Package bustest connects tests to a bus on an embedded NATS server.
// Imported only by tests.
package bustest

import (
	"errors"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
)

// Bus connects to a new embedded NATS server (random port, temp store) for
// t; both go in t.Cleanup.
func Bus(t testing.TB) *bus.Bus {
	t.Helper()
	b, err := bus.Connect(t.Context(), natstest.Start(t).ClientURL(), bus.Options{Name: t.Name()})
	if err != nil {
		t.Fatalf("connect to the embedded NATS: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// WaitQueued waits until b's queue holds want requests not yet taken by a
// runner, and fails t if it does not within 10 s. The queue consumer's
// pending count follows the stream's acknowledged publishes, acks and
// removals a moment later, so a count read right after one of them can be
// the one before.
func WaitQueued(t testing.TB, b *bus.Bus, want uint64) {
	t.Helper()
	var got uint64
	var err error
	if perr := testutil.Poll(t.Context(), 10*time.Second, 10*time.Millisecond, func() error {
		if got, err = b.QueuedCount(t.Context()); err != nil || got != want {
			return errors.New("not yet")
		}
		return nil
	}); perr != nil {
		t.Errorf("queued requests = %d, %v; want %d", got, err, want)
	}
}
