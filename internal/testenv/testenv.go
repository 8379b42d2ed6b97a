// Package testenv holds what tests share that needs no package of this
// module: binaries built once per test binary, and the checks that skip a
// test without Docker or Chromium (failing instead under CI=true). The
// helpers that build on a production package live beside it, in …test
// packages (images/imagestest, internal/bus/bustest,
// internal/storage/storagetest), so no import runs back up the tree.
// Imported only by tests.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// NeedDocker skips without a Docker engine but fails under CI=true, where
// the container tests must run.
func NeedDocker(t testing.TB, image string, err error) {
	t.Helper()
	if err == nil && image != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Docker engine required under CI=true: %v", err)
	}
	t.Skipf("no Docker engine: %v", err)
}

// Chromium is the path of Debian's chromium (or another Chrome) for the
// browser tests; without one the test skips, but fails under CI=true,
// where .ci/run installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: .ci/run installs Debian's chromium package (apt-get install chromium)")
	}
	t.Skip("no chromium here: apt-get install chromium to run the browser tests")
	return ""
}
