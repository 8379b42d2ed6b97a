package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/schemas"
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
// not a cancel.
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

// markCancel creates the marker the worker checks on SIGTERM. It must exist
// before the container is stopped. A container started without the marker
// mount (by an older runner) treats every SIGTERM as a cancel; the marker
// is harmless there.
func (d *dispatch) markCancel(ctx context.Context) {
	if d.r.cfg.NoHostMounts {
		d.markCancelInExchange(ctx)
		return
	}
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

// cancelledEvent is the dispatch.cancelled the runner publishes when the
// worker did not: the dispatch was cancelled before its container started,
// or its container ended without a terminal event after the runner stopped
// it for a cancel. exitCode is the container's, 0 when none ran.
func (d *dispatch) cancelledEvent(exitCode int) schemas.Event {
	ev := bus.CancelledBeforeStart(d.id)
	*ev.ExitCode = exitCode
	if d.req != nil {
		spec := &d.req.Spec
		ev.TaskID, ev.Round = spec.TaskID, spec.EffectiveRound()
		ev.Subagent, ev.Runtime = spec.Subagent.Name, spec.Subagent.Runtime
	}
	if !d.started.IsZero() {
		ms := time.Since(d.started).Milliseconds()
		ev.DurationMS = &ms
	}
	return ev
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
	d.conclude(ctx, d.cancelledEvent(0))
}
