package testenv

import (
	"testing"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
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

// FileStore opens file:// storage in a t.TempDir().
func FileStore(t testing.TB) storage.Store {
	t.Helper()
	store, err := storage.Open(t.Context(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatalf("open file storage: %v", err)
	}
	return store
}
