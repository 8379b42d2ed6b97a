// Package imagestest builds the worker image tests run dispatches in, from
// the static worker compiled here (no registry). Imported only by tests.
package imagestest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/testutil"
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
	tag := fmt.Sprintf("agora-worker:test-%d", testutil.RunNumber())
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
