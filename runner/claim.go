package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/agoradev/agora/internal/bus"
)

// handle takes one delivered request through claim, run and settle. The
// bus is asked once (Bus.Claim): whether the dispatch is settled already,
// whose claim it is, and whether a cancel was requested.
func (r *Runner) handle(ctx context.Context, del *bus.Delivery) {
	if del.Err != nil {
		r.log.Error("dropping a queue message that is not a valid dispatch request", "error", del.Err)
		if err := del.Term(); err != nil {
			r.log.Warn("drop request", "error", err)
		}
		return
	}
	id := del.Request.Spec.DispatchID
	d, existing := r.register(id, del.Request, del)
	if existing != nil {
		existing.attach(ctx, del) // adopted after a restart; redelivered meanwhile
		return
	}
	defer r.forget(d)

	lease, err := r.cfg.Bus.Claim(ctx, id, r.cfg.ID)
	if err != nil {
		d.log.Warn("claim dispatch; retrying later", "error", err)
		d.handBack(busRetryDelay)
		return
	}
	d.lease = lease
	if lease.CancelRequested {
		d.log.Info("cancel requested before this runner took the dispatch")
		d.requestCancel()
	}
	switch {
	case lease.Settled != nil:
		d.log.Info("request already settled", "kind", lease.Settled.Kind)
		r.removeLeftovers(ctx, id)
		d.acknowledge(ctx)
	case lease.Created:
		r.trace(id, PhaseClaimed)
		d.run(ctx)
	default:
		d.resolveClaim(ctx)
	}
}

// resolveClaim deals with a request whose claim was there already
// (Lease.Found): a cancel's, this runner's own from an earlier process,
// or another runner's.
func (d *dispatch) resolveClaim(ctx context.Context) {
	r, c := d.r, d.lease.Found
	switch {
	case c.State == bus.ClaimCancelled:
		// The cancel came first; it publishes the event, we make sure.
		if _, err := r.publishTerminalOnce(ctx, d.log, bus.CancelledBeforeStart(d.id)); err != nil {
			d.handBack(retryLaterDelay)
			return
		}
		d.acknowledge(ctx)
	case c.State == bus.ClaimDone:
		// Its runner stored the outcome before it marked the claim done;
		// the acknowledgement was lost (TestClusterFaults: "no responders"
		// while the queue consumer's leader was down). The outcome may be
		// on that runner's subject, which this one does not count, so the
		// claim says it: never take a done claim over.
		d.log.Info("request already settled by its runner (claim done)", "claim_runner", c.Runner)
		r.removeLeftovers(ctx, d.id)
		d.acknowledge(ctx)
	case c.State == bus.ClaimLost && c.Runner == r.cfg.ID:
		// This runner took it over as lost and stopped before its
		// worker-lost was stored (or before the acknowledgement): settle
		// it so again, never run it.
		ev := lostEvent(&d.req.Spec, 0, fmt.Sprintf("runner %s stopped renewing its claim; its container is presumed lost with its host", c.Previous))
		if _, err := r.publishTerminalOnce(ctx, d.log, ev, c.Previous); err != nil {
			d.handBack(retryLaterDelay)
			return
		}
		d.acknowledge(ctx)
	case c.Runner == r.cfg.ID:
		found, err := r.cfg.Engine.List(ctx, r.containerLabels(d.id))
		if err != nil {
			d.handBack(busRetryDelay)
			return
		}
		if len(found) == 0 {
			// The previous process died before it created the container:
			// the lease is at the claim's revision, take it over and start.
			r.trace(d.id, PhaseClaimed)
			d.run(ctx)
			return
		}
		// Our container, not followed by this process (it appeared after
		// reconcile): follow it now.
		d.mu.Lock()
		d.containerID = found[0].ID
		d.mu.Unlock()
		d.adopt(ctx, found[0].State)
	case time.Since(c.Heartbeat) > r.cfg.LeaseTimeout:
		if err := d.lease.TakeOver(ctx); err != nil {
			d.handBack(r.cfg.Heartbeat) // another runner settled it first
			return
		}
		ev := lostEvent(&d.req.Spec, 0, fmt.Sprintf("runner %s stopped renewing its claim at %s; its container is presumed lost with its host", c.Runner, c.Heartbeat.Format(time.RFC3339)))
		// Published only while no terminal event counts, the silent
		// runner's among them: it may have stored the outcome and
		// stopped before marking the claim done.
		if _, err := r.publishTerminalOnce(ctx, d.log, ev, c.Runner); err != nil {
			d.handBack(retryLaterDelay)
			return
		}
		d.acknowledge(ctx)
	default:
		// Another runner holds it and is alive: wait for it to settle.
		d.handBack(r.cfg.Heartbeat)
	}
}
