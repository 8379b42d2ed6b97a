package roles

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
	"github.com/agoradev/agora/orchestrator/registry"
)

// TestEmbeddedNATSRequiresCredentials: serve's embedded NATS refuses a
// loopback process without credentials (no forged event, no task written),
// and keeps the orchestrator's and the runner's identities in the data dir,
// 0600; the runner's are good for a runner on another process, but do not
// write the orchestrator's buckets.
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

	// The runner may not write the orchestrator's buckets.
	want := []string{orchestrator.TaskBucket, orchestrator.IndexBucket, orchestrator.MemoryBucket, orchestrator.ParkedBucket, registry.Bucket, slackanswer.Bucket, orchestrator.SessionBucket}
	if !slices.Equal(natsauth.OrchestratorBuckets, want) {
		t.Fatalf("natsauth.OrchestratorBuckets = %v, want the orchestrator's %v", natsauth.OrchestratorBuckets, want)
	}
	put := func(creds string) error {
		nc, err := nats.Connect(s.NATSURL(), nats.UserCredentials(filepath.Join(authDir, creds)),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})) // the violation is expected
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err = js.Publish(pctx, "$KV."+orchestrator.TaskBucket+".t-forged", []byte(`{"state":"finished"}`))
		return err
	}
	if err := put(natsauth.RunnerCredFile); err == nil {
		t.Error("the runner's credentials wrote agora_tasks, want refused")
	}
	if err := put(natsauth.OrchestratorCredFile); err != nil {
		t.Errorf("the orchestrator's credentials: write agora_tasks: %v", err)
	}
}
