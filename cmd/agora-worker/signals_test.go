package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// TestCancelMarker: with AGORA_CANCEL_FILE (a runner's worker) a SIGTERM or
// SIGINT is a cancel only while the runner's marker exists; any other is
// noted on stderr and ignored, and the runtime's exit decides. Without the
// variable every SIGTERM is a cancel (TestCancel).
func TestCancelMarker(t *testing.T) {
	t.Parallel()
	t.Run("a signal from the sub-agent is not a cancel", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		marker := filepath.Join(t.TempDir(), "requested")
		spec := e.spec(`kill -TERM $PPID; kill -INT $PPID; sleep 1; echo still running`)
		o := e.run(spec, withEnv("AGORA_CANCEL_FILE="+marker))
		o.expect(t, schemas.KindFinished, "", 0, true)
		for _, want := range []string{"SIGTERM ignored", "SIGINT ignored", "still running"} {
			if !strings.Contains(o.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
			}
		}
	})
	t.Run("the runner's marked SIGTERM cancels", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		marker := filepath.Join(t.TempDir(), "requested")
		spec := e.spec(`sleep 300 & echo $! > bg.pid; touch ready; wait`)
		began := time.Now()
		cmd, stdout, stderr := e.start(spec, withEnv("AGORA_CANCEL_FILE="+marker))
		testutil.Eventually(t, 20*time.Second, "the runtime to start", func() bool {
			_, err := os.Stat(filepath.Join(e.workspace, "ready"))
			return err == nil
		})
		// A foreign one first (ignored), then the runner's: marker, then signal.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindCancelled, "", 0, true)
		assertGone(t, filepath.Join(e.workspace, "bg.pid"))
	})
}

// TestCancelMarkerInStorage: where the runner can mount nothing (Fargate)
// its marker is an object (AGORA_CANCEL_KEY): a signal before it exists is
// ignored, one after it is a cancel.
func TestCancelMarkerInStorage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := "exchange/" + strings.Repeat("ab", 32) + "/cancel"
	spec := e.spec(`sleep 300 & echo $! > bg.pid; touch ready; wait`)
	began := time.Now()
	cmd, stdout, stderr := e.start(spec, withEnv("AGORA_CANCEL_KEY="+key))
	testutil.Eventually(t, 20*time.Second, "the runtime to start", func() bool {
		_, err := os.Stat(filepath.Join(e.workspace, "ready"))
		return err == nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Handled, and ignored, before the marker exists.
	testutil.Eventually(t, 20*time.Second, "the foreign SIGTERM to be ignored", func() bool {
		return strings.Contains(stderr.String(), "SIGTERM ignored")
	})
	marker := filepath.Join(e.storeDir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindCancelled, "", 0, true)
	assertGone(t, filepath.Join(e.workspace, "bg.pid"))
	if !strings.Contains(stderr.String(), "SIGTERM ignored: it is not a cancel, the runner's marker (AGORA_CANCEL_KEY in storage) does not exist") {
		t.Errorf("stderr lacks the ignored foreign SIGTERM:\n%s", stderr.String())
	}
}
