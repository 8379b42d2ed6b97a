package claudecode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSessionRoundTrip is what keeping a session costs a round: the
// copy into the workspace when claude exits (saveSession) and back into a
// fresh config dir at the next round's start (restoreSession), for
// transcripts of the sizes a long conversation reaches.
func BenchmarkSessionRoundTrip(b *testing.B) {
	for _, size := range []int{256 << 10, 4 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("transcript=%dKiB", size>>10), func(b *testing.B) {
			ws, cfg := b.TempDir(), b.TempDir()
			const id = "0b8a2f7e-4c1d-4e5f-9a6b-7c8d9e0f1a2b"
			project := filepath.Join(cfg, "projects", "-ws")
			if err := os.MkdirAll(filepath.Join(project, id, "subagents"), 0o700); err != nil {
				b.Fatal(err)
			}
			line := []byte(`{"type":"assistant","sessionId":"` + id + `","message":{"content":"` + string(bytes.Repeat([]byte("x"), 900)) + `"}}` + "\n")
			if err := os.WriteFile(filepath.Join(project, id+".jsonl"), bytes.Repeat(line, size/len(line)), 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(project, id, "subagents", "agent-1.jsonl"), line, 0o600); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := saveSession(ws, cfg, id, 1); err != nil {
					b.Fatal(err)
				}
				fresh := b.TempDir()
				if got, err := restoreSession(ws, fresh); err != nil || got != id {
					b.Fatalf("restoreSession = %q, %v", got, err)
				}
			}
		})
	}
}
