package roles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
)

// WorkerBinary returns the worker binary to build the image from: path when
// given, else agora-worker next to the running executable (make build puts
// agora and agora-worker side by side in bin/). It fails when the file is
// not there; orFlag is the flag that would avoid the default (e.g.
// "--image IMAGE"), named in the error.
func WorkerBinary(path, orFlag string) (string, error) {
	explicit := path != ""
	if !explicit {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the agora executable (to find agora-worker next to it): %w; pass %s", err, orFlag)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		path = filepath.Join(filepath.Dir(exe), "agora-worker")
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && explicit:
		return "", fmt.Errorf("no worker binary at %s (%s); build it with 'make build' or CGO_ENABLED=0 go build ./cmd/agora-worker", path, orFlag)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no worker binary at %s (next to agora); run 'make build', which puts agora and agora-worker in bin/, or pass %s", path, orFlag)
	case err != nil:
		return "", fmt.Errorf("worker binary: %w", err)
	case info.IsDir():
		return "", fmt.Errorf("worker binary %s is a directory; pass the agora-worker file", path)
	}
	return path, nil
}

// WorkerImage returns the image dispatches run in. A named image must be on
// the engine already (nothing is pulled); without one, the worker image is
// built from workerBinary (with busybox as /bin/sh: images.Options.Busybox)
// as `agora image build` builds it — or reused when an image with the same
// inputs exists — and its tag returned.
func WorkerImage(ctx context.Context, b compute.ImageBuilder, image, workerBinary, busybox string, log *slog.Logger) (string, error) {
	if image != "" {
		_, ok, err := b.ImageExists(ctx, image)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("image %s is not on this Docker engine and nothing is pulled; build it with 'agora image build' or load it first", image)
		}
		return image, nil
	}
	res, err := images.Build(ctx, b, images.Options{WorkerBinary: workerBinary, Busybox: busybox, Logger: log})
	if err != nil {
		return "", err
	}
	return res.Image, nil
}

// BuildImage builds the worker image on the Docker engine the Docker
// environment variables name (dockerHost, $DOCKER_HOST, words the error
// when it does not answer), as `agora image build` does: or finds it
// built from the same inputs.
func BuildImage(ctx context.Context, dockerHost string, opts images.Options) (res images.Result, err error) {
	eng, err := ConnectDocker(ctx, dockerHost, opts.Logger)
	if err != nil {
		return images.Result{}, err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close the docker client: %w", cerr))
		}
	}()
	return images.Build(ctx, eng, opts)
}
