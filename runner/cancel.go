package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Cancel markers.
//
// A SIGTERM the runner did not send is not a cancel. Every process of a
// container runs as one user, so a sub-agent can signal the worker (or
// docker-init, PID 1, which forwards to it) and would otherwise end its own
// dispatch as cancelled. So before the runner stops a container for a
// cancel it creates a marker file on its host, in a per-dispatch directory
// (<data-dir>/cancel/<id>) mounted read-only at /run/agora/cancel, and the
// worker is told where to look (AGORA_CANCEL_FILE). The worker treats a
// SIGTERM as a cancel only when the marker exists; it logs and ignores any
// other. The runner's backstop stop writes no marker: that is a timeout,
// not a cancel. Without host mounts (ECS on Fargate) the marker is an
// object of the dispatch's exchange instead (exchange.go); the transport
// (transport.go) writes the one its containers read.
//
// The runner also remembers that it asked: a container that ends without a
// terminal event after a cancel it requested (its SIGTERM reached the worker
// before the worker's handler, say) settles as dispatch.cancelled, not
// worker-lost.

const (
	containerCancelDir  = "/run/agora/cancel"
	containerCancelFile = containerCancelDir + "/requested"
)

func (r *Runner) cancelDir(id string) string { return filepath.Join(r.cfg.DataDir, "cancel", id) }

// prepareCancelDir makes the dispatch's (empty) marker directory, owned by
// the runner so nothing in the container can create the marker.
func (d *dispatch) prepareCancelDir() error {
	if err := os.MkdirAll(d.r.cancelDir(d.id), 0o755); err != nil {
		return fmt.Errorf("cancel marker directory: %w", err)
	}
	return nil
}

// markCancelFile creates the marker the worker checks on SIGTERM. It must
// exist before the container is stopped. A container started without the
// marker mount (by an older runner) treats every SIGTERM as a cancel; the
// marker is harmless there.
func (d *dispatch) markCancelFile() {
	dir := d.r.cancelDir(d.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		d.log.Error("create the cancel marker; the worker may take the stop for a foreign SIGTERM", "error", err)
		return
	}
	path := filepath.Join(dir, filepath.Base(containerCancelFile))
	if err := os.WriteFile(path, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		d.log.Error("create the cancel marker; the worker may take the stop for a foreign SIGTERM", "error", err)
	}
}

// cancelBeforeStart settles a dispatch cancelled before its container
// started: the container, if created, is removed unstarted, then the event
// is published, the host files removed, the claim marked and the request
// acknowledged. Removing first means a crash in between leaves a request
// that is redelivered and cancelled again, never a cancelled dispatch with a
// container a restarted runner would start.
func (d *dispatch) cancelBeforeStart(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	d.log.Info("cancel requested before the container started; it is not started")
	if d.containerID != "" {
		if err := d.r.cfg.Engine.Remove(ctx, d.containerID); err != nil {
			// Left in Created; the next reconcile finds it cancelled again.
			d.log.Error("remove the cancelled container", "container_id", shortID(d.containerID), "error", err)
		}
	}
	d.conclude(ctx, cancelledEvent(d.id, d.spec(), 0, 0, time.Now().UTC()))
}
