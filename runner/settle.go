package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/cenkalti/backoff/v5"
)

// settle records the outcome of an ended container: it gathers what is
// known (exitFacts), decides (decideOutcome, pure), has the transport keep
// what the worker left, stores the output, publishes the events the bus
// lacks — the terminal one last, so a consumer that sees it finds the rest
// — and only then removes the container and finishes.
func (d *dispatch) settle(ctx context.Context, exit containerExit, logs *logSink) {
	r := d.r
	stored, err := r.cfg.Bus.Events(ctx, d.id)
	if err != nil {
		d.log.Warn("read stored events; publishing what stdout holds (msg-id keeps it single)", "error", err)
	}
	d.mu.Lock()
	facts := exitFacts{
		containerExit:    exit,
		Stored:           stored,
		Stdout:           append([]schemas.Event(nil), d.stdout...),
		StoppedForCancel: d.stoppedForCancel.Load(),
		WorkspaceOver:    d.workspaceOver,
		Unsigned:         d.unsigned,
		LastLine:         logs.LastLine(),
		Ran:              time.Since(d.started),
	}
	d.mu.Unlock()
	out := decideOutcome(d.id, d.spec(), facts, time.Now().UTC())
	switch {
	case out.ByRunner && out.Terminal.Kind == schemas.KindCancelled:
		d.log.Info("container stopped for a cancel ended without a terminal event; reporting it cancelled", "exit_code", exit.Result.ExitCode)
	case out.ByRunner:
		d.log.Warn("container ended without a terminal event", "detail", out.Terminal.Failure.Detail)
	}

	r.transport.collect(ctx, d, out.Terminal.Kind, out.Missing)
	if err := r.cfg.Store.Put(ctx, logKey(d.id), bytesReader(logs.Bytes())); err != nil {
		d.log.Error("store output", "error", err)
	}
	// Publish before removing: a crash in between leaves an exited
	// container to settle again (msg-id keeps the events single), never a
	// dispatch with no container and no outcome.
	for _, ev := range out.Missing {
		d.log.Debug("publishing an event the bus lacks", "kind", ev.Kind)
		if !ev.Kind.Terminal() {
			_ = r.publish(ctx, d.log, ev)
			continue
		}
		settled, err := r.publishTerminal(ctx, d.log, ev)
		if err != nil {
			// Stopping: the exited container stays, and settling it again
			// finds the events on its stdout.
			d.retryLater(err)
			return
		}
		if settled != nil {
			// Stored meanwhile (a runner that took the claim over as lost):
			// that one is the outcome.
			out.Terminal = *settled
		}
		r.trace(d.id, PhasePublished)
	}
	if err := r.cfg.Engine.Remove(ctx, d.containerID); err != nil {
		d.log.Error("remove container", "error", err)
	}
	r.trace(d.id, PhaseRemoved)
	d.log.Info("dispatch settled", "kind", out.Terminal.Kind, "exit_code", exit.Result.ExitCode)
	d.finish(ctx)
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

// publishTerminalOnce stores a dispatch's terminal event within the
// runner's window, unless the dispatch has one that counts already, which
// it returns (bus.PublishTerminal: the server refuses a publish that
// raced another runner's). holders are the runners whose terminal events
// count besides this one's (the one whose claim it took over).
func (r *Runner) publishTerminalOnce(ctx context.Context, log *slog.Logger, ev schemas.Event, holders ...string) (*schemas.Event, error) {
	_, settled, err := r.cfg.Bus.PublishTerminal(ctx, ev, r.cfg.PublishWindow, holders...)
	if err != nil {
		log.Error("publish terminal event", "kind", ev.Kind, "error", err)
		return nil, err
	}
	if settled != nil {
		log.Info("the dispatch has a terminal event already; not publishing another", "kind", ev.Kind, "stored_kind", settled.Kind)
	}
	return settled, nil
}

// publishTerminal stores a dispatch's terminal event as
// publishTerminalOnce does, trying again (every few seconds, holding the
// slot) until it is stored, or found stored, or the runner stops: an
// outcome is never given up on while the runner runs.
func (r *Runner) publishTerminal(ctx context.Context, log *slog.Logger, ev schemas.Event) (*schemas.Event, error) {
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
	settled, err := backoff.Retry(tries, func() (*schemas.Event, error) {
		attempt++
		settled, err := r.publishTerminalOnce(ctx, log, ev)
		last = err
		return settled, err
	}, backoff.WithBackOff(&linearBackOff{step: time.Second, max: 10 * time.Second}),
		backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, pause time.Duration) {
			log.Warn("the terminal event is not stored yet; trying again", "kind", ev.Kind, "attempt", attempt, "retry_in", pause)
		}))
	if err != nil {
		return nil, last // the runner stopped: the publish's error, not the stop's
	}
	return settled, nil
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
