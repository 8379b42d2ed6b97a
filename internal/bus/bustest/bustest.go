// Package bustest connects tests to a bus on an embedded NATS server.
// Imported only by tests.
package bustest

import (
	"testing"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
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
