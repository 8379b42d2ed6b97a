package docker

import (
	"errors"
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want int
	}{{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {10 * time.Second, 10}} {
		if got := seconds(tc.in); got != tc.want {
			t.Errorf("seconds(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestSignalName(t *testing.T) {
	for code, want := range map[int]string{0: "", 1: "", 128: "", 130: "SIGINT", 137: "SIGKILL", 143: "SIGTERM", 255: ""} {
		if got := signalName(code); got != want {
			t.Errorf("signalName(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestExitCodeFromStatus(t *testing.T) {
	for status, want := range map[string]int{
		"Exited (0) 2 seconds ago":   0,
		"Exited (137) 5 minutes ago": 137,
		"Up 3 seconds":               0,
		"Created":                    0,
		"Exited (-1) 1 second ago":   -1,
	} {
		if got := exitCodeFromStatus(status); got != want {
			t.Errorf("exitCodeFromStatus(%q) = %d, want %d", status, got, want)
		}
	}
}

func TestIsCacheRace(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		// Seen in CI when a parallel test removed an image sharing the cached ADD layer.
		{"failed to get digest sha256:7f66c6a3: open /var/lib/docker/image/fuse-overlayfs/imagedb/content/sha256/7f66c6a3: no such file or directory", true},
		// Seen when TestBuildWhileOthersRemove ran beside a second whole test run.
		{"failed to export image: failed to set parent sha256:dfd5282d: unknown parent image ID sha256:dfd5282d", true},
		{"No such image: sha256:0123", true},
		{"layer does not exist", true},
		{"pull access denied for agora-test-missing, repository does not exist", false},
		{"COPY failed: file not found in build context", false},
	} {
		if got := isCacheRace(errors.New(tc.msg)); got != tc.want {
			t.Errorf("isCacheRace(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
