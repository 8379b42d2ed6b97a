package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
	"github.com/cenkalti/backoff/v5"
)

// Exit code reported when the engine could not run the container at all
// (Docker's own convention for daemon errors).
const exitEngineError = 125

// retryLaterDelay is when a request whose outcome could not be stored is
// handed out again.
const retryLaterDelay = 10 * time.Second

// dispatch is one dispatch this runner holds, from claim to acknowledgement.
type dispatch struct {
	r   *Runner
	id  string
	log *slog.Logger

	mu          sync.Mutex
	req         *schemas.DispatchRequest // nil while adopting until the request file is read
	delivery    *bus.Delivery            // nil for an adopted container until redelivered
	containerID string
	claimRev    uint64
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

func (d *dispatch) requestCancel() { d.cancelOnce.Do(func() { close(d.cancelled) }) }

func (d *dispatch) isCancelled() bool {
	select {
	case <-d.cancelled:
		return true
	default:
		return false
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

func (d *dispatch) ackLocked(ctx context.Context, del *bus.Delivery) {
	if del == nil {
		return
	}
	if err := del.Ack(ctx); err != nil {
		d.log.Warn("acknowledge request; it will be redelivered and found settled", "error", err)
	}
}

// handle takes one delivered request through claim, run and settle.
func (r *Runner) handle(ctx context.Context, del *bus.Delivery) {
	if del.Err != nil {
		r.log.Error("dropping a queue message that is not a valid dispatch request", "error", del.Err)
		if err := del.Term(); err != nil {
			r.log.Warn("drop request", "error", err)
		}
		return
	}
	req := del.Request
	id := req.Spec.DispatchID
	log := r.log.With("dispatch_id", id, "task_id", req.Spec.TaskID, "round", req.Spec.EffectiveRound())
	if d := r.lookup(id); d != nil {
		d.attach(ctx, del) // adopted after a restart; redelivered meanwhile
		return
	}
	if ev, err := r.cfg.Bus.TerminalEvent(ctx, id); err != nil {
		log.Warn("look up terminal event; retrying later", "error", err)
		_ = del.Nak(5 * time.Second)
		return
	} else if ev != nil {
		log.Info("request already settled", "kind", ev.Kind)
		r.removeLeftovers(ctx, id)
		if err := del.Ack(ctx); err != nil {
			log.Warn("acknowledge settled request", "error", err)
		}
		return
	}

	now := time.Now().UTC()
	rev, err := r.cfg.Bus.CreateClaim(ctx, id, bus.Claim{State: bus.ClaimRunning, Runner: r.cfg.ID, Heartbeat: now})
	if errors.Is(err, bus.ErrClaimed) {
		if !r.resolveClaim(ctx, del, log) {
			return
		}
		// Ours, with no container: the previous process died before creating
		// it. Take the claim over and start.
		c, err := r.cfg.Bus.GetClaim(ctx, id)
		if err != nil || c == nil {
			_ = del.Nak(5 * time.Second)
			return
		}
		rev = c.Revision
	} else if err != nil {
		log.Warn("claim dispatch; retrying later", "error", err)
		_ = del.Nak(5 * time.Second)
		return
	}

	r.trace(id, PhaseClaimed)
	d := r.newDispatch(ctx, id, del)
	defer r.forget(d)
	d.req, d.claimRev = req, rev
	d.run(ctx)
}

// resolveClaim deals with a request somebody has claimed already. It
// returns true when the claim is this runner's and no container exists, so
// the caller should start the dispatch.
func (r *Runner) resolveClaim(ctx context.Context, del *bus.Delivery, log *slog.Logger) bool {
	id := del.Request.Spec.DispatchID
	c, err := r.cfg.Bus.GetClaim(ctx, id)
	if err != nil || c == nil {
		_ = del.Nak(5 * time.Second)
		return false
	}
	switch {
	case c.State == bus.ClaimCancelled:
		// The cancel came first; it publishes the event, we make sure.
		if err := r.publish(ctx, log, bus.CancelledBeforeStart(id)); err != nil {
			_ = del.Nak(retryLaterDelay)
			return false
		}
		_ = del.Ack(ctx)
		return false
	case c.Runner == r.cfg.ID:
		found, err := r.cfg.Engine.List(ctx, map[string]string{compute.LabelDispatchID: id, LabelRunner: r.cfg.ID})
		if err != nil {
			_ = del.Nak(5 * time.Second)
			return false
		}
		if len(found) == 0 {
			return true
		}
		// Our container, not followed by this process (it appeared after
		// reconcile): follow it now.
		d := r.newDispatch(ctx, id, del)
		defer r.forget(d)
		d.req, d.containerID, d.claimRev = del.Request, found[0].ID, c.Revision
		d.adopt(ctx, found[0].State)
		return false
	case time.Since(c.Heartbeat) > r.cfg.LeaseTimeout:
		lost := c
		lost.State, lost.Runner, lost.Heartbeat = "lost", r.cfg.ID, time.Now().UTC()
		if _, err := r.cfg.Bus.UpdateClaim(ctx, id, *lost, c.Revision); err != nil {
			_ = del.Nak(r.cfg.Heartbeat) // another runner settled it first
			return false
		}
		ev := lostEvent(&del.Request.Spec, 0, fmt.Sprintf("runner %s stopped renewing its claim at %s; its container is presumed lost with its host", c.Runner, c.Heartbeat.Format(time.RFC3339)))
		if err := r.publish(ctx, log, ev); err != nil {
			_ = del.Nak(retryLaterDelay)
			return false
		}
		_ = del.Ack(ctx)
		return false
	default:
		// Another runner holds it and is alive: wait for it to settle.
		_ = del.Nak(r.cfg.Heartbeat)
		return false
	}
}

// run prepares the host side, creates and starts the container, then
// follows it. A cancel seen before Start means no start.
func (d *dispatch) run(ctx context.Context) {
	r, req := d.r, d.req
	fail := func(reason schemas.FailureReason, detail string) {
		if ctx.Err() != nil {
			// The runner is stopping and nothing was started: the request is
			// redelivered to the next runner process, which starts over (or
			// adopts a container created meanwhile).
			d.log.Info("runner stopping before the container started; the request is left for the next runner", "detail", detail)
			return
		}
		ev := d.lostEvent(exitEngineError, detail)
		ev.Failure.Reason = reason
		d.conclude(ctx, ev)
	}
	if err := checkLimits(req, r.cfg); err != nil {
		fail(schemas.ReasonWorkerFailed, err.Error())
		return
	}
	if r.cfg.NoHostMounts {
		d.runRemote(ctx, fail)
		return
	}
	if err := d.writeHostFiles(ctx); err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	if from := restoreFrom(req); from != "" {
		if err := d.restore(ctx, from); err != nil {
			if d.cancelRequested(ctx) {
				d.cancelBeforeStart(ctx)
				return
			}
			fail(schemas.ReasonFetchFailed, fmt.Sprintf("restore the workspace of %s: %v", from, err))
			return
		}
	}
	if d.cancelRequested(ctx) {
		d.cancelBeforeStart(ctx)
		return
	}
	secrets, err := d.prepareSecrets(ctx)
	if err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	if err := d.prepareEventKey(); err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	natsCreds, err := d.prepareNATSCreds(req)
	if err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	if err := d.prepareCancelDir(); err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	if req.NetworkMode() == schemas.NetworkEgress {
		if err := d.prepareEgress(ctx); err != nil {
			fail(schemas.ReasonWorkerLost, "prepare the dispatch's egress proxy: "+err.Error())
			return
		}
	}
	d.createAndStart(ctx, compileContainer(req, r.cfg, hostPaths{SpecDir: r.specDir(d.id), Workspace: r.workspace(d.id),
		StageDir: r.stageDir(d.id), Secrets: secrets, KeyDir: r.keyDir(d.id), NATSCreds: natsCreds, CancelDir: r.cancelDir(d.id)}), fail)
}

// runRemote prepares a dispatch for an engine without host mounts: its
// files go to its exchange in storage (exchange.go) instead of this host.
func (d *dispatch) runRemote(ctx context.Context, fail func(schemas.FailureReason, string)) {
	if err := d.writeRequestFile(); err != nil {
		fail(schemas.ReasonWorkerLost, "prepare the dispatch on the runner host: "+err.Error())
		return
	}
	if d.cancelRequested(ctx) {
		d.cancelBeforeStart(ctx)
		return
	}
	rf, reason, err := d.prepareExchange(ctx)
	if err != nil {
		if d.cancelRequested(ctx) {
			d.cancelBeforeStart(ctx)
			return
		}
		fail(reason, err.Error())
		return
	}
	if d.cancelRequested(ctx) {
		d.cancelBeforeStart(ctx)
		return
	}
	d.createAndStart(ctx, compileContainer(d.req, d.r.cfg, hostPaths{Remote: &rf}), fail)
}

// createAndStart creates the dispatch's container, or adopts the one that
// exists already, then starts and follows it.
func (d *dispatch) createAndStart(ctx context.Context, spec compute.ContainerSpec, fail func(schemas.FailureReason, string)) {
	r := d.r
	r.trace(d.id, PhaseCreate)
	cid, err := r.cfg.Engine.Create(ctx, spec)
	switch {
	case errors.Is(err, compute.ErrAlreadyExists):
		found, lerr := r.cfg.Engine.List(ctx, map[string]string{compute.LabelDispatchID: d.id, LabelRunner: r.cfg.ID})
		if lerr != nil {
			fail(schemas.ReasonWorkerLost, fmt.Sprintf("container %s exists; list it: %v", spec.Name, lerr))
			return
		}
		if len(found) == 0 {
			fail(schemas.ReasonWorkerLost, fmt.Sprintf("container %s exists but is not this runner's (no %s=%s label); remove it or give this runner another id", spec.Name, LabelRunner, r.cfg.ID))
			return
		}
		d.mu.Lock()
		d.containerID = found[0].ID
		d.mu.Unlock()
		d.log.Info("container exists already; adopting it", "state", found[0].State)
		d.adopt(ctx, found[0].State)
		return
	case errors.Is(err, compute.ErrImageNotFound):
		fail(schemas.ReasonWorkerLost, fmt.Sprintf("image %s not found on this host; build it with `agora image build` (nothing is pulled)", spec.Image))
		return
	case err != nil:
		fail(schemas.ReasonWorkerLost, "create container: "+err.Error())
		return
	}
	d.mu.Lock()
	d.containerID = cid
	d.mu.Unlock()
	d.log = d.log.With("container_id", shortID(cid))
	d.renewClaim(ctx)
	d.startCreated(ctx)
}

// startCreated starts the dispatch's created container and follows it.
// A cancel requested before Start (Create can take seconds on a busy
// engine) means no start: the container is removed unstarted. A container
// whose start fails is removed too, so no runner ever adopts and starts it
// later; the failure is reported. Only a runner that stops while starting
// leaves the container for the next process to adopt.
func (d *dispatch) startCreated(ctx context.Context) {
	r := d.r
	if d.cancelRequested(ctx) {
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
// and settled. A created one was never started — the process that created
// it stopped or died between create and start — so it is started, unless
// its outcome is recorded already or a cancel was requested.
func (d *dispatch) adopt(ctx context.Context, state string) {
	if state != "created" {
		d.follow(ctx)
		return
	}
	if d.req == nil {
		d.req = d.r.readRequestFile(d.id, d.log)
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

func restoreFrom(req *schemas.DispatchRequest) string {
	if req.Fresh() || req.Workspace == nil {
		return ""
	}
	return req.Workspace.RestoreFrom
}

// cancelRequested checks both a command seen live and the durable one.
func (d *dispatch) cancelRequested(ctx context.Context) bool {
	if d.isCancelled() {
		return true
	}
	ok, err := d.r.cfg.Bus.CancelRequested(ctx, d.id)
	if err != nil {
		d.log.Warn("check for a cancel", "error", err)
	}
	return ok
}

// writeHostFiles lays out the spec (mounted read-only), the request (kept
// for adoption after a restart), the workspace directory and, with S3
// storage, the staged store the worker reads its blobs from.
func (d *dispatch) writeHostFiles(ctx context.Context) error {
	r := d.r
	workerSpec := d.req.Spec
	if dir := r.stageDir(d.id); dir != "" {
		staged, err := r.stage(ctx, dir, workerSpec)
		if err != nil {
			return err
		}
		workerSpec = staged
	}
	spec, err := json.Marshal(workerSpec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.specDir(d.id), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.specDir(d.id), "spec.json"), spec, 0o644); err != nil {
		return err
	}
	if err := d.writeRequestFile(); err != nil {
		return err
	}
	return prepareDir(r.workspace(d.id))
}

// writeRequestFile keeps the request on this host for adoption after a
// restart.
func (d *dispatch) writeRequestFile() error {
	request, err := json.Marshal(d.req)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.r.dispatchesDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(d.r.requestFile(d.id), request, 0o600)
}

func (r *Runner) requestFile(id string) string {
	return filepath.Join(r.dispatchesDir(), id+".request.json")
}

// restore fills the workspace from the snapshot the round before left,
// waiting a bounded time for its runner to record it.
func (d *dispatch) restore(ctx context.Context, from string) error {
	rec, err := d.snapshotRecord(ctx, from)
	if err != nil {
		return err
	}
	return workspace.Restore(ctx, d.r.cfg.Store, rec.Archive, d.r.workspace(d.id), d.r.cfg.MaxWorkspaceBytes)
}

// follow streams the container's output, keeps its claim alive, enforces
// the backstop timeout and cancel, waits for it and settles the outcome.
func (d *dispatch) follow(ctx context.Context) {
	r := d.r
	if d.req == nil {
		d.req = r.readRequestFile(d.id, d.log)
	}
	if d.eventKey == nil {
		d.loadEventKey()
	}
	d.started = time.Now()
	cid := d.containerID
	egressMode := d.req != nil && d.req.NetworkMode() == schemas.NetworkEgress
	relay := r.cfg.WorkerNATSURL == "" || r.cfg.NoHostMounts || d.req == nil || d.req.NetworkMode() == schemas.NetworkNone || egressMode
	logs := newLogSink(r.cfg.LogCap, func(p []byte) {
		if err := r.cfg.Bus.PublishLog(d.id, p); err != nil {
			d.log.Debug("publish log chunk", "error", err)
		}
	})
	lines := &lineWriter{fn: func(line []byte) { d.onStdoutLine(ctx, line, relay) }}
	// Stored and streamed with the worker's lines marked (output.go).
	marker := newOutputMarker(logs, d.eventKey)
	stdout, stderr := marker.stream(), marker.stream()
	logsDone := make(chan error, 1)
	go func() { logsDone <- r.cfg.Engine.Logs(ctx, cid, true, io.MultiWriter(stdout, lines), stderr) }()

	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	if !r.cfg.NoHostMounts { // else the workspace is the task's, bounded by its storage
		go d.watchWorkspace(followCtx, cid)
	}
	if egressMode {
		go d.followEgress(followCtx, logs)
	}
	var timedOut atomic.Bool
	timeout := r.cfg.DefaultTimeout
	if d.req != nil {
		timeout = d.req.Spec.Timeout(r.cfg.DefaultTimeout)
	}
	// The worker enforces the dispatch timeout itself; this backstop catches
	// a worker that cannot.
	backstop := time.NewTimer(timeout + r.cfg.Grace + 30*time.Second)
	defer backstop.Stop()
	heartbeat := time.NewTicker(r.cfg.Heartbeat)
	defer heartbeat.Stop()
	go func() {
		for {
			select {
			case <-followCtx.Done():
				return
			case <-heartbeat.C:
				d.mu.Lock()
				del := d.delivery
				d.mu.Unlock()
				if del != nil {
					_ = del.InProgress()
				}
				d.renewClaim(followCtx)
			case <-d.cancelled:
				d.log.Info("cancel requested; stopping the container", "grace", r.cfg.Grace)
				// The marker first: it tells the worker this SIGTERM is the
				// runner's cancel (cancel.go).
				d.markCancel(followCtx)
				d.stoppedForCancel.Store(true)
				if err := r.cfg.Engine.Stop(context.WithoutCancel(followCtx), cid, r.cfg.Grace); err != nil {
					d.log.Error("stop container", "error", err)
				}
				return
			case <-backstop.C:
				timedOut.Store(true)
				// No cancel marker: the worker ignores this SIGTERM and is
				// killed after the grace; the outcome is a timeout.
				d.log.Warn("container ran past the dispatch timeout; stopping it", "timeout", timeout)
				if err := r.cfg.Engine.Stop(context.WithoutCancel(followCtx), cid, r.cfg.Grace); err != nil {
					d.log.Error("stop container", "error", err)
				}
			}
		}
	}()

	res, waitErr := r.cfg.Engine.Wait(ctx, cid)
	r.trace(d.id, PhaseExited)
	if ctx.Err() != nil {
		d.log.Info("runner stopping; the container is left running for the next runner to adopt")
		return
	}
	select {
	case err := <-logsDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			d.log.Warn("read container output", "error", err)
		}
	case <-time.After(30 * time.Second):
		d.log.Warn("container output did not drain within 30s after exit")
	}
	lines.Flush()
	stdout.Flush()
	stderr.Flush()
	if !d.sawTerminal() {
		d.rereadOutput(ctx, cid)
	}
	r.trace(d.id, PhaseDrained)
	stopFollowing()
	// The container has ended: settle it fully even if the runner is stopping.
	d.settle(context.WithoutCancel(ctx), res, waitErr, timedOut.Load(), logs)
}

// sawTerminal reports whether the worker's terminal event came on its
// stdout.
func (d *dispatch) sawTerminal() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ev := range d.stdout {
		if ev.Kind.Terminal() {
			return true
		}
	}
	return false
}

// rereadOutput reads the ended container's stdout once more, whole, for
// event lines the follow stream missed. BenchmarkThroughput saw Docker
// Engine 20.10's follow stream end before the last line of a worker that
// exited at once (twice in about 6,700 dispatches, on a loaded machine):
// the worker had printed its terminal event and exited 0, yet the runner
// reported the dispatch worker-lost; the second time this read found the
// event. Only event lines are taken: the stored output stays what the
// stream gave.
func (d *dispatch) rereadOutput(ctx context.Context, cid string) {
	lines := &lineWriter{fn: func(line []byte) { d.onStdoutLine(ctx, line, false) }}
	if err := d.r.cfg.Engine.Logs(ctx, cid, false, lines, io.Discard); err != nil {
		d.log.Warn("read the container's output again for its terminal event", "error", err)
		return
	}
	lines.Flush()
	if d.sawTerminal() {
		d.log.Warn("the container's output stream ended before the worker's terminal event; a second read found it")
	}
}

// onStdoutLine takes the worker's event lines; in relay mode it publishes
// them at once.
func (d *dispatch) onStdoutLine(ctx context.Context, line []byte, relay bool) {
	if len(line) == 0 || line[0] != '{' {
		return
	}
	if d.eventKey != nil {
		data, ok := schemas.VerifyEventLine(d.eventKey, line)
		if !ok {
			d.log.Warn("ignoring an event line on stdout that the worker did not sign (written by the sub-agent?)", "line", truncate(string(line), 200))
			if ev, err := schemas.ParseEvent(line); err == nil && ev.DispatchID == d.id && ev.Kind.Terminal() && ev.Failure != nil {
				d.mu.Lock()
				d.unsigned = string(ev.Failure.Reason) + ": " + ev.Failure.Detail
				d.mu.Unlock()
			}
			return
		}
		line = data
	}
	ev, err := schemas.ParseEvent(line)
	if err != nil {
		d.log.Debug("stdout line is not an event", "error", err)
		return
	}
	if ev.DispatchID != d.id || !ev.Kind.Known() {
		d.log.Warn("ignoring an event line for another dispatch or of an unknown kind", "event_dispatch_id", ev.DispatchID, "kind", ev.Kind)
		return
	}
	d.mu.Lock()
	d.stdout = append(d.stdout, *ev)
	d.mu.Unlock()
	// The terminal event waits for settle, which stores the artifacts first.
	if relay && !ev.Kind.Terminal() {
		d.r.publish(ctx, d.log, *ev)
	}
}

// settle records the outcome: the events the bus lacks, or a worker-lost
// failure when the worker left no terminal event; then the workspace
// snapshot, the output, and the cleanup.
func (d *dispatch) settle(ctx context.Context, res exit.Result, waitErr error, timedOut bool, logs *logSink) {
	r := d.r
	// The container has ended: its secrets leave the host before its
	// outcome is published.
	r.removeSecrets(d.id, d.log)
	stored, err := r.cfg.Bus.Events(ctx, d.id)
	if err != nil {
		d.log.Warn("read stored events; publishing what stdout holds (msg-id keeps it single)", "error", err)
	}
	have := map[schemas.EventKind]bool{}
	var terminal *schemas.Event
	for i, ev := range stored {
		have[ev.Kind] = true
		if ev.Kind.Terminal() && terminal == nil {
			terminal = &stored[i]
		}
	}
	d.mu.Lock()
	fromStdout := append([]schemas.Event(nil), d.stdout...)
	d.mu.Unlock()
	// What is missing from the bus, in order; the terminal event goes out
	// last, after the workspace snapshot and the output are stored, so a
	// consumer that sees it finds them.
	var missing []schemas.Event
	for i, ev := range fromStdout {
		if have[ev.Kind] || (ev.Kind.Terminal() && terminal != nil) {
			continue
		}
		missing = append(missing, ev)
		have[ev.Kind] = true
		if ev.Kind.Terminal() {
			terminal = &fromStdout[i]
		}
	}
	if terminal == nil {
		var ev schemas.Event
		if d.stoppedForCancel.Load() {
			// The runner stopped it for a cancel and the worker could not
			// report it (the SIGTERM came before its handler): a cancel.
			ev = d.cancelledEvent(max(res.ExitCode, 0)) // -1: it never ran
			d.log.Info("container stopped for a cancel ended without a terminal event; reporting it cancelled", "exit_code", res.ExitCode)
		} else {
			ev = d.lost(res, waitErr, timedOut, logs.LastLine())
			d.log.Warn("container ended without a terminal event", "detail", ev.Failure.Detail)
		}
		missing = append(missing, ev)
		terminal = &ev
	}

	if r.cfg.NoHostMounts {
		d.settleExchange(ctx, terminal.Kind)
	} else if terminal.Kind == schemas.KindNeedsInput && d.req != nil && !d.req.Fresh() {
		rec := workspace.Record{}
		ref, err := workspace.Snapshot(ctx, r.cfg.Store, r.workspace(d.id), r.cfg.MaxWorkspaceBytes)
		if err != nil {
			d.log.Error("snapshot workspace", "error", err)
			rec.Error = err.Error()
		} else {
			rec.Archive = ref
		}
		if err := workspace.WriteRecord(ctx, r.cfg.Store, snapshotKey(d.id), rec); err != nil {
			d.log.Error("record workspace snapshot", "error", err)
		}
	}
	if terminal.Kind == schemas.KindFinished && !r.cfg.NoHostMounts {
		d.keepAnswerFile(ctx)
	}
	if err := r.cfg.Store.Put(ctx, logKey(d.id), bytesReader(logs.Bytes())); err != nil {
		d.log.Error("store output", "error", err)
	}
	if dir := r.stageDir(d.id); dir != "" {
		var spec *schemas.DispatchSpec
		if d.req != nil {
			spec = &d.req.Spec
		}
		uris, err := r.unstage(ctx, dir, spec)
		if err != nil {
			d.log.Error("upload what the worker stored", "error", err)
		}
		for i := range missing {
			pointAtStorage(&missing[i], uris)
		}
	}
	// Publish before removing: a crash in between leaves an exited
	// container to settle again (msg-id keeps the events single), never a
	// dispatch with no container and no outcome.
	for _, ev := range missing {
		d.log.Debug("publishing an event the bus lacks", "kind", ev.Kind)
		if !ev.Kind.Terminal() {
			_ = r.publish(ctx, d.log, ev)
			continue
		}
		if err := r.publishTerminal(ctx, d.log, ev); err != nil {
			// Stopping: the exited container stays, and settling it again
			// finds the events on its stdout.
			d.retryLater(err)
			return
		}
		r.trace(d.id, PhasePublished)
	}
	if err := r.cfg.Engine.Remove(ctx, d.containerID); err != nil {
		d.log.Error("remove container", "error", err)
	}
	r.trace(d.id, PhaseRemoved)
	d.log.Info("dispatch settled", "kind", terminal.Kind, "exit_code", res.ExitCode)
	d.finish(ctx)
}

// keepAnswerFile stores a finished dispatch's .agora/answer.json (how an
// answering sub-agent hands over its answer) before the workspace goes.
func (d *dispatch) keepAnswerFile(ctx context.Context) {
	root, err := os.OpenRoot(d.r.workspace(d.id))
	if err != nil {
		return
	}
	defer root.Close()
	fi, err := root.Lstat(".agora/answer.json")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return
	}
	data, err := root.ReadFile(".agora/answer.json")
	if err != nil {
		return
	}
	if err := d.r.cfg.Store.Put(ctx, answerKey(d.id), bytesReader(data)); err != nil {
		d.log.Warn("store answer.json", "error", err)
	}
}

// lost is the failure the runner reports for a container that ended
// without the worker's terminal event.
func (d *dispatch) lost(res exit.Result, waitErr error, timedOut bool, lastLine string) schemas.Event {
	detail := fmt.Sprintf("container exited with code %d", res.ExitCode)
	switch {
	case waitErr != nil:
		detail = "waiting for the container failed: " + waitErr.Error()
	case res.ExitCode < 0:
		detail = "the container never ran"
		res.ExitCode = exitEngineError
	case res.OOMKilled:
		detail += " (OOMKilled: it reached its memory limit)"
	case res.Signal == "SIGKILL":
		// Docker loses some OOM events (containerd/containerd#8893):
		// a SIGKILL nobody here sent is most often the memory limit.
		detail += " (killed by SIGKILL: most likely its memory limit — the engine does not always report an OOM kill — or a kill from outside)"
	case res.Signal != "":
		detail += " (killed by " + res.Signal + ")"
	}
	if res.Err != nil && waitErr == nil {
		detail += " (" + res.Err.Error() + ")"
	}
	detail += " and the worker left no terminal event"
	d.mu.Lock()
	unsigned := d.unsigned
	d.mu.Unlock()
	if unsigned != "" {
		// A worker without its key (it could not read it) reports unsigned.
		detail += "; an unsigned terminal event on its output (not trusted: the sub-agent could have written it) says: " + truncate(unsigned, 300)
	}
	if lastLine != "" {
		detail += "; last output: " + truncate(lastLine, 300)
	}
	ev := d.lostEvent(res.ExitCode, detail)
	if waitErr != nil && ev.ExitCode != nil && *ev.ExitCode == 0 {
		*ev.ExitCode = exitEngineError
	}
	if timedOut {
		ev.Failure.Reason = schemas.ReasonTimeout
		ev.Failure.Detail = "the container ran past the dispatch timeout and was stopped by the runner; " + detail
	}
	d.workspaceFailure(&ev)
	ms := time.Since(d.started).Milliseconds()
	ev.DurationMS = &ms
	return ev
}

// lostEvent is a dispatch.failed (worker-lost) from the runner for this
// dispatch, with its spec's fields when the request is known.
func (d *dispatch) lostEvent(exitCode int, detail string) schemas.Event {
	var spec *schemas.DispatchSpec
	if d.req != nil {
		spec = &d.req.Spec
	}
	ev := lostEvent(spec, exitCode, detail)
	ev.DispatchID = d.id
	return ev
}

// lostEvent is a dispatch.failed (worker-lost) from the runner.
func lostEvent(spec *schemas.DispatchSpec, exitCode int, detail string) schemas.Event {
	code, ms := exitCode, int64(0)
	ev := schemas.Event{Kind: schemas.KindFailed, Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms,
		Failure: &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: detail}}
	if spec != nil {
		ev.DispatchID, ev.TaskID, ev.Round = spec.DispatchID, spec.TaskID, spec.EffectiveRound()
		ev.Subagent, ev.Runtime = spec.Subagent.Name, spec.Subagent.Runtime
	}
	return ev
}

// finish removes the host files, marks the claim done and acknowledges the
// request: its outcome is recorded.
func (d *dispatch) finish(ctx context.Context) {
	r := d.r
	if d.eventKey == nil {
		d.loadEventKey()
	}
	r.removeExchange(ctx, d.eventKey, d.log)
	if d.req == nil || d.req.NetworkMode() == schemas.NetworkEgress {
		r.removeEgress(ctx, d.id)
	}
	for _, p := range r.hostFiles(d.id) {
		if err := os.RemoveAll(p); err != nil {
			d.log.Error("remove dispatch files", "path", p, "error", err)
		}
	}
	r.removeSecrets(d.id, d.log)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settled = true
	if err := d.updateClaimLocked(ctx, bus.Claim{State: "done", Runner: r.cfg.ID, Container: d.containerID, Heartbeat: time.Now().UTC()}); err != nil {
		d.log.Warn("mark claim done", "error", err)
	}
	d.ackLocked(ctx, d.delivery)
	d.delivery = nil
	r.trace(d.id, PhaseDone)
}

// renewClaim refreshes the claim's heartbeat (and container id).
func (d *dispatch) renewClaim(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := bus.Claim{State: bus.ClaimRunning, Runner: d.r.cfg.ID, Container: d.containerID, Heartbeat: time.Now().UTC()}
	if err := d.updateClaimLocked(ctx, c); err != nil {
		d.log.Warn("renew claim", "error", err)
	}
}

// updateClaimLocked replaces the dispatch's claim at the revision this
// runner last wrote. Adopted dispatches start without the revision: it is
// read once, and taken only while the claim is this runner's.
func (d *dispatch) updateClaimLocked(ctx context.Context, c bus.Claim) error {
	rev, err := d.r.cfg.Bus.UpdateClaim(ctx, d.id, c, d.claimRev)
	if err != nil {
		if cur, gerr := d.r.cfg.Bus.GetClaim(ctx, d.id); gerr == nil && cur != nil && cur.Runner == d.r.cfg.ID {
			rev, err = d.r.cfg.Bus.UpdateClaim(ctx, d.id, c, cur.Revision)
		}
	}
	if err != nil {
		return err
	}
	d.claimRev = rev
	return nil
}

// publish stores ev within the runner's window, logging a failure. A
// caller whose terminal event failed must not acknowledge the request:
// its outcome is not recorded.
func (r *Runner) publish(ctx context.Context, log *slog.Logger, ev schemas.Event) error {
	if _, err := r.cfg.Bus.PublishEventRetry(ctx, ev, r.cfg.PublishWindow); err != nil {
		log.Error("publish event", "kind", ev.Kind, "error", err)
		return err
	}
	return nil
}

// publishTerminal stores a dispatch's terminal event, trying again (every
// few seconds, holding the slot) until it is stored or the runner stops:
// an outcome is never given up on while the runner runs.
func (r *Runner) publishTerminal(ctx context.Context, log *slog.Logger, ev schemas.Event) error {
	// Only the runner's stop ends the tries, not ctx: each publish is
	// bounded by its own window.
	tries, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-r.stopping:
			stop()
		case <-tries.Done():
		}
	}()
	var last error
	attempt := 0
	_, err := backoff.Retry(tries, func() (struct{}, error) {
		attempt++
		last = r.publish(ctx, log, ev)
		return struct{}{}, last
	}, backoff.WithBackOff(&linearBackOff{step: time.Second, max: 10 * time.Second}),
		backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, pause time.Duration) {
			log.Warn("the terminal event is not stored yet; trying again", "kind", ev.Kind, "attempt", attempt, "retry_in", pause)
		}))
	if err != nil {
		return last // the runner stopped: the publish's error, not the stop's
	}
	return nil
}

// linearBackOff waits step, 2×step, … up to max: a terminal event is
// retried soon at first, then at a steady pace.
type linearBackOff struct {
	step, max, next time.Duration
}

func (b *linearBackOff) Reset() { b.next = 0 }

func (b *linearBackOff) NextBackOff() time.Duration {
	b.next = min(b.next+b.step, b.max)
	return b.next
}

// conclude stores the dispatch's terminal event and then finishes the
// dispatch (host files, claim, acknowledgement). When the runner stops
// before the event is stored, nothing is finished: the request is handed
// back and the next runner process settles it.
func (d *dispatch) conclude(ctx context.Context, ev schemas.Event) {
	if err := d.r.publishTerminal(ctx, d.log, ev); err != nil {
		d.retryLater(err)
		return
	}
	d.finish(ctx)
}

// retryLater hands the request back for another delivery: the dispatch's
// outcome could not be stored.
func (d *dispatch) retryLater(err error) {
	d.log.Warn("runner stopping before the outcome was stored; the request is left to settle again", "error", err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.delivery != nil {
		_ = d.delivery.Nak(retryLaterDelay)
		d.delivery = nil
	}
}

// readRequestFile reads the request kept on the host for an adopted
// container; nil when it is gone.
func (r *Runner) readRequestFile(id string, log *slog.Logger) *schemas.DispatchRequest {
	data, err := os.ReadFile(r.requestFile(id))
	if err != nil {
		log.Warn("request of an adopted container is missing; settling without it", "error", err)
		return nil
	}
	req, err := schemas.ParseDispatchRequest(data)
	if err != nil {
		log.Warn("request of an adopted container does not parse", "error", err)
		return nil
	}
	return req
}

// removeLeftovers removes a settled dispatch's container and files, if any
// survived a crash between settling and acknowledging.
func (r *Runner) removeLeftovers(ctx context.Context, id string) {
	found, err := r.cfg.Engine.List(ctx, map[string]string{compute.LabelDispatchID: id, LabelRunner: r.cfg.ID})
	if err == nil {
		for _, c := range found {
			if err := r.cfg.Engine.Remove(ctx, c.ID); err != nil {
				r.log.Error("remove leftover container", "container_id", c.ID, "error", err)
			}
		}
	}
	if key, err := readKey(r.keyFile(id)); err == nil {
		r.removeExchange(ctx, key, r.log.With("dispatch_id", id))
	}
	r.removeEgress(ctx, id)
	for _, p := range r.hostFiles(id) {
		if err := os.RemoveAll(p); err != nil {
			r.log.Error("remove leftover dispatch files", "dispatch_id", id, "path", p, "error", err)
		}
	}
	r.removeSecrets(id, r.log)
}

// hostFiles are the paths a dispatch occupies on this host, besides its
// secrets.
func (r *Runner) hostFiles(id string) []string {
	var paths []string
	for _, p := range []string{r.specDir(id), r.workspace(id), r.requestFile(id), r.stageDir(id), r.keyDir(id), r.keyFile(id), r.cancelDir(id)} {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths
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
