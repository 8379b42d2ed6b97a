// Package follow is agora dispatch --wait: it follows a submitted task to
// its end — its progress on stderr, its result alone on stdout (or with
// --json the final task) — cancels it when a signal ends the wait (unless
// --detach-on-signal), and chooses the exit its end calls for: 0 finished,
// 1 failed (with the failed round's last lines), 3 expired or cancelled,
// 128 + the signal's number.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/cmd/agora/internal/progress"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// Timings of dispatch --wait.
const (
	// Poll is how often --wait reads the task besides following its
	// changes: a safety net for a change made while the stream was being
	// (re)opened.
	Poll = 2 * time.Second
	// GiveUp is how long --wait keeps trying while the server does not
	// answer before it fails.
	GiveUp = time.Minute
	// heartbeatCheck is how often --wait looks whether a heartbeat is due
	// when stderr is no terminal (a terminal's status line ticks every
	// second anyway).
	heartbeatCheck = 5 * time.Second
	// CancelTimeout bounds the cancel --wait sends after a signal: well
	// inside the 7.5 s a GitHub Actions runner leaves between its SIGINT
	// and its SIGTERM, and the 10 s many runners wait before SIGKILL.
	CancelTimeout = 5 * time.Second
)

// Options are one wait's settings.
type Options struct {
	Server, Token string // the server called, for its errors' wording
	JSON          bool   // --json: the final task on stdout
	Detach        bool   // --detach-on-signal: a signal leaves the task running
	// Heartbeat is how often a question waiting for a person is told again.
	Heartbeat time.Duration
	UI        view.UI   // stderr's
	Start     time.Time // when the task was submitted
}

// Wait follows t to its end.
func Wait(ctx context.Context, c *client.Client, t *wire.Task, o Options, stdout, stderr io.Writer) error {
	p := progress.New(stderr, o.UI, o.Start, time.Now)
	p.Heartbeat = o.Heartbeat
	opts := client.FollowOptions{Poll: Poll, GiveUp: GiveUp, OnUpdate: p.Update, Tick: min(heartbeatCheck, o.Heartbeat),
		OnTrouble: func(error) { p.Note("the agora server does not answer; still trying") }}
	if o.UI.TTY {
		opts.Tick = time.Second
	}
	final, err := c.Follow(ctx, t, opts)
	p.Clear()
	if errors.Is(err, client.ErrRemoved) {
		return fmt.Errorf("task %s was removed while waiting for it", t.ID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Stop(ctx, c, o, t.ID, stderr)
		}
		return explain.Error(o.Server, o.Token, err, t.ID)
	}
	// stdout carries the result alone (docs/ci.md): out=$(agora dispatch
	// … --wait). With --json, the final task, its result read in.
	result, rerr := c.TaskResult(ctx, final)
	if o.JSON {
		if rerr == nil && len(result) > 0 {
			final.Result = result
		}
		err = view.JSON(stdout, final)
	} else {
		view.Ended(stderr, final, time.Since(o.Start))
		err = view.Result(stdout, result)
	}
	if err != nil {
		return err
	}
	if rerr != nil {
		return fmt.Errorf("task %s %s, but its result could not be read: %w", final.ID, view.StateLabel(final.State), rerr)
	}
	switch final.State {
	case wire.StateFinished:
		return nil
	case wire.StateFailed:
		writeOutputTail(ctx, c, final, stderr)
		return exitcode.Outcome{Code: exitcode.Failed, Msg: fmt.Sprintf("task %s failed: %s; 'agora logs %s' shows its output, 'agora respawn %s' runs it again",
			final.ID, view.OutcomeDetail(final), final.ID, final.ID)}
	}
	return exitcode.Outcome{Code: exitcode.Ended, Msg: fmt.Sprintf("task %s %s: %s; 'agora status %s' shows its timeline", final.ID, view.StateLabel(final.State), view.OutcomeDetail(final), final.ID)}
}

// Stop ends a dispatch --wait whose context was cancelled: by a
// signal (its cause, from main) or by whoever called run. By default it
// cancels the task — the caller's cancel reaches the work — with a call
// bounded by CancelTimeout that outlives the cancelled context, and exits
// 128 + the signal's number (130 SIGINT, 143 SIGTERM); with
// --detach-on-signal it leaves the task running and exits 1, as before.
func Stop(ctx context.Context, c *client.Client, o Options, id string, stderr io.Writer) error {
	sig, bySignal := exitcode.SignalOf(ctx)
	code, why := exitcode.Failed, "interrupted"
	if bySignal {
		code, why = exitcode.Signal(sig), exitcode.SignalName(sig)
	}
	if o.Detach {
		return fmt.Errorf("%s: stopped waiting; task %s goes on ('agora status %s' shows it, 'agora cancel %s' stops it)", why, id, id, id)
	}
	fmt.Fprintf(stderr, "agora dispatch: %s: cancelling task %s (--detach-on-signal would leave it running)\n", why, id)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelTimeout)
	defer cancel()
	t, err := c.Cancel(cctx, id)
	if errors.Is(err, wire.ErrNotFound) {
		return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("interrupted before task %s was submitted; nothing runs", id)}
	}
	if errors.Is(err, wire.ErrWrongState) {
		// It ended between the last update and the cancel.
		if got, gerr := c.Get(cctx, id); gerr == nil && got.State.Terminal() {
			return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("task %s had already ended: %s (%s)", id, view.StateLabel(got.State), view.OutcomeDetail(got))}
		}
	}
	if err != nil {
		return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("could not cancel task %s (%v); it may still run: 'agora cancel %s' stops it",
			id, view.Clip(explain.Cancel(o.Server, o.Token, err, id, CancelTimeout).Error(), 200), id)}
	}
	return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("task %s cancelled (%s); 'agora respawn %s' runs it again", id, view.OutcomeDetail(t), id)}
}

// tailLines is how much of a failed round's output dispatch --wait shows.
const tailLines = 20

// writeOutputTail writes the last lines of what the failed round of t
// printed (the worker's event lines left out), so that a CI log shows why
// it failed, not only its exit code. The output is read from the server;
// when it cannot be, one line says so.
func writeOutputTail(ctx context.Context, c *client.Client, t *wire.Task, w io.Writer) {
	if r := view.LastRound(t); r != nil {
		lines, cut, err := c.OutputTail(ctx, t.ID, r.N, tailLines)
		view.OutputTail(w, t.ID, r.N, tailLines, lines, cut, err)
	}
}
