package runner

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/schemas"
)

// The path of one delivery through these files is in doc.go.

// Exit code reported when the engine could not run the container at all
// (Docker's own convention for daemon errors).
const exitEngineError = 125

// retryLaterDelay is when a request whose outcome could not be stored is
// handed out again.
const retryLaterDelay = 10 * time.Second

// busRetryDelay is when a request is handed out again after the bus or the
// engine could not be asked about it.
const busRetryDelay = 5 * time.Second

// dispatch is one dispatch this runner holds, from claim to acknowledgement.
type dispatch struct {
	r   *Runner
	id  string
	log *slog.Logger
	// lease is the dispatch's claim (bus.Lease): Claim's for a delivered
	// request, one at no known revision for an adopted container.
	lease *bus.Lease

	mu          sync.Mutex
	req         *schemas.DispatchRequest // nil while adopting until the request file is read
	delivery    *bus.Delivery            // nil for an adopted container until redelivered
	containerID string
	settled     bool
	started     time.Time
	stdout      []schemas.Event // the worker's events, in order, from its stdout
	// unsigned is the failure an unsigned terminal line on stdout gave,
	// quoted (untrusted) in a worker-lost detail: a worker that could not
	// read its event key says why only that way.
	unsigned string
	// eventKey authenticates the worker's event lines (eventkey.go); nil
	// takes them unverified.
	eventKey []byte

	cancelOnce sync.Once
	cancelled  chan struct{}
	// workspaceOver says why the runner killed the container, when its
	// workspace grew past the maximum (limits.go).
	workspaceOver string

	// stoppedForCancel is set once the runner has marked the cancel and
	// stopped the container for it (cancel.go).
	stoppedForCancel atomic.Bool
}

// register records a dispatch this runner now holds, before anything is
// asked about it: a cancel published from then on reaches it live
// (onControl), and the bus calls that follow (Bus.Claim, Lease.Renew) read
// one published before. When the dispatch is held already (an adopted
// container, a redelivery), that one is returned as existing instead.
func (r *Runner) register(id string, req *schemas.DispatchRequest, del *bus.Delivery) (d, existing *dispatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.active[id]; d != nil {
		return nil, d
	}
	log := r.log.With("dispatch_id", id)
	if req != nil {
		log = log.With("task_id", req.Spec.TaskID, "round", req.Spec.EffectiveRound())
	}
	d = &dispatch{r: r, id: id, req: req, delivery: del, log: log, lease: r.cfg.Bus.Lease(id, r.cfg.ID), cancelled: make(chan struct{})}
	r.active[id] = d
	return d, nil
}

func (r *Runner) forget(d *dispatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[d.id] == d {
		delete(r.active, d.id)
	}
}

func (r *Runner) lookup(id string) *dispatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[id]
}

func (d *dispatch) requestCancel() { d.cancelOnce.Do(func() { close(d.cancelled) }) }

func (d *dispatch) isCancelled() bool {
	select {
	case <-d.cancelled:
		return true
	default:
		return false
	}
}

// renew refreshes the claim (with the container, once there is one) and
// takes a cancel the live watch has not delivered yet (Lease.Renew).
func (d *dispatch) renew(ctx context.Context) {
	d.mu.Lock()
	cid := d.containerID
	d.mu.Unlock()
	cancel, err := d.lease.Renew(ctx, cid)
	if err != nil {
		d.log.Warn("renew claim", "error", err)
	}
	if cancel && !d.isCancelled() {
		d.log.Info("cancel requested (read from the bus)")
		d.requestCancel()
	}
}

// attach hands a (re)delivered request to a dispatch already being
// followed; it is acknowledged once the outcome is recorded.
func (d *dispatch) attach(ctx context.Context, del *bus.Delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		d.ackLocked(ctx, del)
		return
	}
	d.delivery = del
	if d.req == nil {
		d.req = del.Request
	}
}

// acknowledge removes the request from the queue: its outcome is recorded.
func (d *dispatch) acknowledge(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ackLocked(ctx, d.delivery)
	d.delivery = nil
}

func (d *dispatch) ackLocked(ctx context.Context, del *bus.Delivery) {
	if del == nil {
		return
	}
	if err := del.Ack(ctx); err != nil {
		d.log.Warn("acknowledge request; it will be redelivered and found settled", "error", err)
	}
}

// handBack returns the request for another delivery after delay.
func (d *dispatch) handBack(delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.delivery != nil {
		_ = d.delivery.Nak(delay)
		d.delivery = nil
	}
}

// conclude stores the dispatch's terminal event and then finishes the
// dispatch (host files, claim, acknowledgement). When the runner stops
// before the event is stored, nothing is finished: the request is handed
// back and the next runner process settles it.
func (d *dispatch) conclude(ctx context.Context, ev schemas.Event) {
	if _, err := d.r.publishTerminal(ctx, d.log, ev); err != nil {
		d.retryLater(err)
		return
	}
	d.finish(ctx)
}

// retryLater hands the request back for another delivery: the dispatch's
// outcome could not be stored.
func (d *dispatch) retryLater(err error) {
	d.log.Warn("runner stopping before the outcome was stored; the request is left to settle again", "error", err)
	d.handBack(retryLaterDelay)
}

// finish removes the dispatch's files, marks the claim done and
// acknowledges the request: its outcome is recorded.
func (d *dispatch) finish(ctx context.Context) {
	r := d.r
	if d.eventKey == nil {
		d.loadEventKey()
	}
	egress := d.req == nil || d.req.NetworkMode() == schemas.NetworkEgress
	r.removeFiles(ctx, d.id, d.eventKey, egress, d.log)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settled = true
	if err := d.lease.Done(ctx, d.containerID); err != nil {
		d.log.Warn("mark claim done", "error", err)
	}
	d.ackLocked(ctx, d.delivery)
	d.delivery = nil
	r.trace(d.id, PhaseDone)
}

// removeLeftovers removes a settled dispatch's container and files, if any
// survived a crash between settling and acknowledging.
func (r *Runner) removeLeftovers(ctx context.Context, id string) {
	found, err := r.cfg.Engine.List(ctx, r.containerLabels(id))
	if err == nil {
		for _, c := range found {
			if err := r.cfg.Engine.Remove(ctx, c.ID); err != nil {
				r.log.Error("remove leftover container", "container_id", c.ID, "error", err)
			}
		}
	}
	key, _ := readKey(r.keyFile(id)) // none: there is no exchange to remove
	r.removeFiles(ctx, id, key, true, r.log.With("dispatch_id", id))
}

// containerLabels select this runner's container of dispatch id.
func (r *Runner) containerLabels(id string) map[string]string {
	return map[string]string{compute.LabelDispatchID: id, LabelRunner: r.cfg.ID}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
