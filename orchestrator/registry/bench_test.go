package registry

import (
	"archive/tar"
	"bytes"
	"fmt"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/wire"
)

// BenchmarkResolve is what naming a registered sub-agent adds to a submit:
// the sub-agent, two capabilities and an env bundle looked up and pinned, on
// an embedded NATS (numbers in docs/benchmarks.md).
func BenchmarkResolve(b *testing.B) {
	r, err := Open(b.Context(), bustest.Bus(b), storagetest.FileStore(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	for i := range 2 {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		data := fmt.Sprintf("capability %d\n", i)
		_ = tw.WriteHeader(&tar.Header{Name: "README.md", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(data))
		_ = tw.Close()
		if _, err := r.RegisterCapability(ctx, fmt.Sprintf("cap-%d", i), "", buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.RegisterEnv(ctx, wire.Env{Name: "env", Values: map[string]string{"A": "1"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := r.RegisterSubagent(ctx, wire.Subagent{Name: "s", Runtime: "exec", Command: wire.Command{"true"},
		Capabilities: []string{"cap-0", "cap-1"}, Env: []string{"env"}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Resolve(ctx, "s"); err != nil {
			b.Fatal(err)
		}
	}
}
