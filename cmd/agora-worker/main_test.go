package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
)

// workerBin is the agora-worker binary built for these tests; fakeBinDir
// holds a `claude` that is this test binary in disguise.
var workerBin, fakeBinDir string

func TestMain(m *testing.M) {
	// Re-executed as the stand-in claude (see adapters/claudecode/fakeclaude).
	if filepath.Base(os.Args[0]) == "claude" {
		os.Exit(fakeclaude.Main())
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agora-worker-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workerBin = filepath.Join(dir, "bin", "agora-worker")
	// Static, as in the image: CGO off.
	build := exec.Command("go", "build", "-o", workerBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agora-worker:", err)
		return 1
	}
	fakeBinDir = filepath.Join(dir, "fakebin")
	self, err := os.Executable()
	if err == nil {
		err = os.MkdirAll(fakeBinDir, 0o755)
	}
	if err == nil {
		err = os.Symlink(self, filepath.Join(fakeBinDir, "claude"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "set up the stand-in claude:", err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
