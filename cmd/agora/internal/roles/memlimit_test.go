package roles

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// TestStartSetsMemoryLimit: Config.MemoryLimit (agora serve
// --memory-limit) becomes the Go runtime's soft memory limit. Not
// parallel: the limit is the process's.
func TestStartSetsMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const limit = 3 << 30
	s, err := Start(ctx, Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Orchestrator: true, MemoryLimit: limit, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("the Go memory limit after Start with MemoryLimit %d = %d", limit, got)
	}
}
