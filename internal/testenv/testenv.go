// Package testenv builds what tests share: the static worker and the worker
// image, once per test binary; a bus on an embedded NATS and file storage.
// Imported only by tests.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute/docker"
)

// WorkerImage compiles ./cmd/agora-worker (CGO_ENABLED=0) and builds the
// worker image tagged for this process. cleanup removes it. moduleRoot is
// the repository root relative to the calling package's directory.
func WorkerImage(ctx context.Context, moduleRoot string) (image string, cleanup func(), err error) {
	nop := func() {}
	eng, err := docker.New(docker.Config{})
	if err != nil {
		return "", nop, err
	}
	if err := eng.Ping(ctx); err != nil {
		eng.Close()
		return "", nop, err
	}
	dir, err := os.MkdirTemp("", "agora-testenv-")
	if err != nil {
		eng.Close()
		return "", nop, err
	}
	bin := filepath.Join(dir, "agora-worker")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, filepath.Join(moduleRoot, "cmd", "agora-worker"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		eng.Close()
		os.RemoveAll(dir)
		return "", nop, fmt.Errorf("build agora-worker: %v\n%s", err, out)
	}
	tag := fmt.Sprintf("agora-worker:test-%d", os.Getpid())
	res, err := images.Build(ctx, eng, images.Options{WorkerBinary: bin, Tag: tag})
	if err != nil {
		eng.Close()
		os.RemoveAll(dir)
		return "", nop, err
	}
	return res.Image, func() {
		if err := eng.RemoveImage(context.Background(), tag); err != nil {
			fmt.Fprintln(os.Stderr, "remove test image:", err)
		}
		eng.Close()
		os.RemoveAll(dir)
	}, nil
}

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
