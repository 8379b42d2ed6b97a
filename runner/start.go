package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/schemas"
)

// startError is why a dispatch cannot start, with the failure reason its
// event gives; any other error before the start is worker-lost.
type startError struct {
	reason schemas.FailureReason
	detail string
}

func (e *startError) Error() string { return e.detail }

func cannotStart(reason schemas.FailureReason, detail string) error {
	return &startError{reason: reason, detail: detail}
}

// run checks the request against this runner's limits, has the transport
// lay out the dispatch's files, then creates and starts its container. A
// cancel seen before the start means no start.
func (d *dispatch) run(ctx context.Context) {
	if err := checkLimits(d.req, d.r.cfg); err != nil {
		d.fail(ctx, cannotStart(schemas.ReasonWorkerFailed, err.Error()))
		return
	}
	spec, err := d.r.transport.prepare(ctx, d)
	switch {
	case d.isCancelled():
		d.cancelBeforeStart(ctx)
	case err != nil:
		d.fail(ctx, err)
	default:
		d.createAndStart(ctx, spec)
	}
}

// fail reports a dispatch that could not start (startError's reason, else
// worker-lost), unless the runner is stopping: nothing was started then,
// and the request is redelivered to the next runner process, which starts
// over (or adopts a container created meanwhile).
func (d *dispatch) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		d.log.Info("runner stopping before the container started; the request is left for the next runner", "detail", err.Error())
		return
	}
	ev := d.lostEvent(exitEngineError, err.Error())
	if se := (*startError)(nil); errors.As(err, &se) {
		ev.Failure.Reason = se.reason
	}
	d.conclude(ctx, ev)
}

// createAndStart creates the dispatch's container, or adopts the one that
// exists already, then starts and follows it.
func (d *dispatch) createAndStart(ctx context.Context, spec compute.ContainerSpec) {
	r := d.r
	r.trace(d.id, PhaseCreate)
	cid, err := r.cfg.Engine.Create(ctx, spec)
	switch {
	case errors.Is(err, compute.ErrAlreadyExists):
		found, lerr := r.cfg.Engine.List(ctx, r.containerLabels(d.id))
		if lerr != nil {
			d.fail(ctx, fmt.Errorf("container %s exists; list it: %v", spec.Name, lerr))
			return
		}
		if len(found) == 0 {
			d.fail(ctx, fmt.Errorf("container %s exists but is not this runner's (no %s=%s label); remove it or give this runner another id", spec.Name, LabelRunner, r.cfg.ID))
			return
		}
		d.mu.Lock()
		d.containerID = found[0].ID
		d.mu.Unlock()
		d.log.Info("container exists already; adopting it", "state", found[0].State)
		d.adopt(ctx, found[0].State)
		return
	case errors.Is(err, compute.ErrImageNotFound):
		d.fail(ctx, fmt.Errorf("image %s not found on this host; build it with `agora image build` (nothing is pulled)", spec.Image))
		return
	case err != nil:
		d.fail(ctx, fmt.Errorf("create container: %w", err))
		return
	}
	d.mu.Lock()
	d.containerID = cid
	d.mu.Unlock()
	d.log = d.log.With("container_id", shortID(cid))
	d.startCreated(ctx)
}

// startCreated starts the dispatch's created container and follows it.
// It renews the claim first, which records the container and reads a
// cancel requested while Create ran (it can take seconds on a busy
// engine): a cancel before Start means no start, and the container is
// removed unstarted. A container whose start fails is removed too, so no
// runner ever adopts and starts it later; the failure is reported. Only a
// runner that stops while starting leaves the container for the next
// process to adopt.
func (d *dispatch) startCreated(ctx context.Context) {
	r := d.r
	d.renew(ctx)
	if d.isCancelled() {
		d.cancelBeforeStart(ctx)
		return
	}
	if err := r.cfg.Engine.Start(ctx, d.containerID); err != nil {
		if ctx.Err() != nil {
			d.log.Info("runner stopping while starting the container; the next runner process adopts it", "error", err)
			return
		}
		rctx := context.WithoutCancel(ctx)
		// Removed before the failure is published: a crash in between leaves
		// a request that is redelivered and run again, never a created
		// container with an outcome already recorded.
		if rerr := r.cfg.Engine.Remove(rctx, d.containerID); rerr != nil {
			d.log.Error("remove the container that did not start", "error", rerr)
		}
		d.conclude(rctx, d.lostEvent(exitEngineError, "start container: "+err.Error()))
		return
	}
	r.trace(d.id, PhaseStarted)
	d.log.Info("container started")
	d.follow(ctx)
}

// adopt takes over a container of this dispatch that this process did not
// create: found on restart (reconcile), or after it (resolveClaim, a
// create that found the name taken). A running or exited one is followed
// and settled; the claim is renewed first, which reads a cancel published
// while no runner process watched. A created one was never started — the
// process that created it stopped or died between create and start — so
// it is started, unless its outcome is recorded already or a cancel was
// requested.
func (d *dispatch) adopt(ctx context.Context, state string) {
	if d.req == nil {
		d.req = d.r.readRequestFile(d.id, d.log)
	}
	if state != "created" {
		d.renew(ctx)
		d.follow(ctx)
		return
	}
	ev, err := d.r.cfg.Bus.TerminalEvent(ctx, d.id)
	if err != nil {
		// Not knowing whether it is settled, do not start it: the request,
		// still unacknowledged, is redelivered and brings it back here.
		d.log.Warn("look up the terminal event of a created container; leaving it for the request's redelivery", "error", err)
		return
	}
	if ev != nil {
		d.log.Info("created container of a settled dispatch; removing it", "kind", ev.Kind)
		if err := d.r.cfg.Engine.Remove(ctx, d.containerID); err != nil {
			d.log.Error("remove container", "error", err)
		}
		d.finish(ctx)
		return
	}
	d.startCreated(ctx)
}
