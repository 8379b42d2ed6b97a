package docker

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// InspectContainer is docker inspect, for tests that check what the daemon
// was asked for.
func (e *Engine) InspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	return e.cli.ContainerInspect(ctx, id)
}

// ServerAPIVersion is the daemon's own API version.
func (e *Engine) ServerAPIVersion(ctx context.Context) (string, error) {
	v, err := e.cli.ServerVersion(ctx)
	return v.APIVersion, err
}

// VolumeExists reports whether the daemon has the volume name.
func (e *Engine) VolumeExists(ctx context.Context, name string) (bool, error) {
	_, err := e.cli.VolumeInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
