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

// ImageBuild is what `agora image build` asks for.
type ImageBuild struct {
	// Worker is the static agora-worker to build from ("": the one next
	// to the agora executable, WorkerBinary).
	Worker string
	// Base, Tag and NoBusybox are images.Options' fields of the same names.
	Base, Tag string
	NoBusybox bool
	Logger    *slog.Logger
}

// BuiltImage is the worker image BuildImage built or found.
type BuiltImage struct {
	Image, ID, InputsHash string
	// Busybox reports that the image has the host's busybox as /bin/sh.
	Busybox bool
	// Skipped reports that an image built from the same inputs existed,
	// so nothing was built.
	Skipped bool
}

// DefaultBusybox is where the worker image's /bin/sh comes from unless
// --busybox names another static busybox.
const DefaultBusybox = images.DefaultBusybox

// CheckBusybox reports why the file at path cannot be the worker image's
// /bin/sh (it is missing, or no static executable); nil when it can.
func CheckBusybox(path string) error { return images.CheckBusybox(path) }

// BuildImage builds the worker image on the Docker engine the Docker
// environment variables name (dockerHost, $DOCKER_HOST, words the error
// when it does not answer), as `agora image build` does: or finds it
// built from the same inputs.
func BuildImage(ctx context.Context, dockerHost string, b ImageBuild) (res BuiltImage, err error) {
	opts := images.Options{Base: b.Base, Tag: b.Tag, NoBusybox: b.NoBusybox, Logger: b.Logger}
	if opts.WorkerBinary, err = WorkerBinary(b.Worker, "--worker PATH"); err != nil {
		return BuiltImage{}, err
	}
	eng, err := ConnectDocker(ctx, dockerHost, opts.Logger)
	if err != nil {
		return BuiltImage{}, err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close the docker client: %w", cerr))
		}
	}()
	r, err := images.Build(ctx, eng, opts)
	if err != nil {
		return BuiltImage{}, err
	}
	return BuiltImage{Image: r.Image, ID: r.ID, InputsHash: r.InputsHash, Busybox: r.Busybox, Skipped: r.Skipped}, nil
}
