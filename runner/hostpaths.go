package runner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agoradev/agora/internal/compute"
)

// LabelMountCheck marks the container checkHostPaths creates (never
// started); its value is the runner's id. It carries no LabelRunner, so
// the reconciler never mistakes it for a dispatch.
const LabelMountCheck = "agora.mount-check"

// checkHostPaths proves that the engine sees this runner's data dir where
// this process does. Every dispatch's spec, keys, workspace and staged
// store are bind-mounted from under DataDir by path, and the engine
// resolves those paths on its own host: agora in a container whose data
// dir is mounted at another path, or talking to an engine on another
// machine, would start "ready" and fail every dispatch. So: make a
// directory with a random name under DataDir and ask the engine to create
// (not start) a container that bind-mounts it. Only an engine that sees
// DataDir at this path finds a directory of that name there. The container
// is removed at once, and one a crash left behind is removed at the next
// start.
func (r *Runner) checkHostPaths(ctx context.Context) error {
	r.removeMountChecks(ctx)
	marker := filepath.Join(r.cfg.DataDir, ".mount-check-"+rand.Text())
	if err := os.Mkdir(marker, 0o700); err != nil {
		return fmt.Errorf("check the data dir's host path: %w", err)
	}
	defer os.Remove(marker)
	id, err := r.cfg.Engine.Create(ctx, compute.ContainerSpec{
		Name:        "agora-mount-check-" + rand.Text()[:12],
		Image:       r.cfg.Image,
		User:        ContainerUser,
		Labels:      map[string]string{LabelMountCheck: r.cfg.ID},
		NetworkMode: compute.NetworkNone,
		Mounts:      []compute.Mount{{Source: marker, Target: "/agora-mount-check", ReadOnly: true}},
	})
	if errors.Is(err, compute.ErrImageNotFound) || errors.Is(err, compute.ErrInvalidSpec) {
		return fmt.Errorf("check the data dir's host path: %w", err)
	}
	if err != nil {
		return fmt.Errorf("the Docker engine does not see the data dir %s at that path (%v): the runner mounts files from it into dispatch containers by path, so run agora on the engine's host with its socket, or in a container with the data dir mounted at the same path as on the host (docker run -v %s:%s …)",
			r.cfg.DataDir, err, r.cfg.DataDir, r.cfg.DataDir)
	}
	if err := r.cfg.Engine.Remove(context.WithoutCancel(ctx), id); err != nil {
		r.log.Warn("remove the mount-check container; the next start removes it", "container_id", id, "error", err)
	}
	return nil
}

// removeMountChecks removes the mount-check containers of this runner that
// an earlier process left (it died between create and remove).
func (r *Runner) removeMountChecks(ctx context.Context) {
	left, err := r.cfg.Engine.List(ctx, map[string]string{LabelMountCheck: r.cfg.ID})
	if err != nil {
		r.log.Warn("list earlier mount-check containers", "error", err)
		return
	}
	for _, c := range left {
		if err := r.cfg.Engine.Remove(ctx, c.ID); err != nil {
			r.log.Warn("remove an earlier mount-check container", "container_id", c.ID, "error", err)
		}
	}
}
