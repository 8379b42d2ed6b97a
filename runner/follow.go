package runner

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/schemas"
)

// follow streams the container's output, keeps its claim alive, enforces
// the backstop timeout and cancel, waits for it and settles the outcome.
func (d *dispatch) follow(ctx context.Context) {
	r := d.r
	if d.eventKey == nil {
		d.loadEventKey()
	}
	d.started = time.Now()
	cid := d.containerID
	relay := !r.transport.workerPublishes(d.req)
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
	go r.transport.watch(followCtx, d, cid)
	if d.req != nil && d.req.NetworkMode() == schemas.NetworkEgress {
		go d.followEgress(followCtx, logs)
	}
	var timedOut atomic.Bool
	go d.guard(followCtx, cid, &timedOut)

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
	d.settle(context.WithoutCancel(ctx), containerExit{res, waitErr, timedOut.Load()}, logs)
}

// guard runs beside a running container until ctx ends: it renews the
// request and the claim every heartbeat, stops the container for a cancel
// (marker first), and stops it when it runs past the backstop timeout.
func (d *dispatch) guard(ctx context.Context, cid string, timedOut *atomic.Bool) {
	r := d.r
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-heartbeat.C:
			d.mu.Lock()
			del := d.delivery
			d.mu.Unlock()
			if del != nil {
				_ = del.InProgress()
			}
			d.renew(ctx)
		case <-d.cancelled:
			d.log.Info("cancel requested; stopping the container", "grace", r.cfg.Grace)
			// The marker first: it tells the worker this SIGTERM is the
			// runner's cancel (cancel.go).
			r.transport.markCancel(ctx, d)
			d.stoppedForCancel.Store(true)
			if err := r.cfg.Engine.Stop(context.WithoutCancel(ctx), cid, r.cfg.Grace); err != nil {
				d.log.Error("stop container", "error", err)
			}
			return
		case <-backstop.C:
			timedOut.Store(true)
			// No cancel marker: the worker ignores this SIGTERM and is
			// killed after the grace; the outcome is a timeout.
			d.log.Warn("container ran past the dispatch timeout; stopping it", "timeout", timeout)
			if err := r.cfg.Engine.Stop(context.WithoutCancel(ctx), cid, r.cfg.Grace); err != nil {
				d.log.Error("stop container", "error", err)
			}
		}
	}
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
		_ = d.r.publish(ctx, d.log, *ev)
	}
}
