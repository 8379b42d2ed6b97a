package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// TestEmbeddedNATSRequiresCredentials: serve's embedded NATS refuses a
// loopback process without credentials (no forged event, no task written),
// and keeps the orchestrator's and the runner's identities in the data dir,
// 0600; the runner's are good for a runner on another process.
func TestEmbeddedNATSRequiresCredentials(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	s, err := Start(ctx, Config{DataDir: dir, Listen: "127.0.0.1:0", Orchestrator: true, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })

	if nc, err := nats.Connect(s.NATSURL(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("anonymous connection to the embedded NATS succeeded, want an authorization violation")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("anonymous connection: %v, want an authorization violation", err)
	}

	authDir := filepath.Join(dir, "nats-auth")
	if got := s.NATSCredsDir(); got != authDir {
		t.Errorf("NATSCredsDir() = %q, want %q", got, authDir)
	}
	for _, name := range []string{natsauth.OrchestratorCredFile, natsauth.RunnerCredFile, natsauth.WorkerSignerFile} {
		fi, err := os.Stat(filepath.Join(authDir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want a 0600 file", name, fi, err)
		}
	}
	b, err := bus.Connect(ctx, s.NATSURL(), bus.Options{Auth: bus.Auth{CredsFile: filepath.Join(authDir, natsauth.RunnerCredFile)}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Connected() {
		t.Fatal("the runner's credentials: not connected")
	}
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream with the runner's credentials: %v", err)
	}
}
