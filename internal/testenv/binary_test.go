package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	os.Exit(RemovingBinaries(m).Run())
}

// TestBinaryOnce: a package is compiled once, and the executable runs.
func TestBinaryOnce(t *testing.T) {
	first := Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	if again := Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false); again != first {
		t.Errorf("Binary again = %s, want the first build %s", again, first)
	}
	if filepath.Base(first) != "agora-worker" {
		t.Errorf("Binary = %s, want an executable named agora-worker (scripts find it on PATH)", first)
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("stat %s: %v, want an executable", first, err)
	}
}

func TestCommand(t *testing.T) {
	for pkg, want := range map[string]string{
		"github.com/agoradev/agora/cmd/agora": "agora",
		"github.com/nats-io/nats-server/v2":   "nats-server",
		"example.com/v2tool":                  "v2tool",
	} {
		if got := command(pkg); got != want {
			t.Errorf("command(%q) = %q, want %q", pkg, got, want)
		}
	}
}
