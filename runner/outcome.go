package runner

import (
	"fmt"
	"time"

	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/schemas"
)

// containerExit is how a dispatch's container ended.
type containerExit struct {
	Result exit.Result
	// WaitErr is the engine's error waiting for it.
	WaitErr error
	// TimedOut: the runner's backstop stopped it.
	TimedOut bool
}

// exitFacts is everything settle knows once a dispatch's container has
// ended: the input of decideOutcome.
type exitFacts struct {
	containerExit
	// Stored are the dispatch's events on the bus; Stdout the worker's
	// (verified) event lines from its output, in order.
	Stored, Stdout []schemas.Event
	// StoppedForCancel: the runner stopped the container for a cancel.
	StoppedForCancel bool
	// WorkspaceOver says why the runner killed the container for its
	// workspace (limits.go), "" when it did not.
	WorkspaceOver string
	// Unsigned is the failure an unsigned terminal line gave (eventkey.go).
	Unsigned string
	// LastLine is the last line of the container's output.
	LastLine string
	// Ran is how long the container was followed.
	Ran time.Duration
}

// outcome is what settle records.
type outcome struct {
	// Missing are the events the bus lacks, in order; the terminal event,
	// when missing, is last.
	Missing []schemas.Event
	// Terminal is the dispatch's terminal event: the stored one, the
	// worker's, or the runner's.
	Terminal schemas.Event
	// ByRunner: the worker left no terminal event; the runner made it.
	ByRunner bool
}

// decideOutcome is the settle decision, pure: the first terminal event the
// bus holds counts, else the worker's from its output, else the runner
// makes one — dispatch.cancelled when it stopped the container for a
// cancel, else dispatch.failed (worker-lost, timeout, or provider-failed
// for a workspace over its maximum) saying how the container ended. Every
// event of the worker's output the bus lacks goes out once, in order.
// spec is nil when the request is not known (an adopted container whose
// request file is gone).
func decideOutcome(id string, spec *schemas.DispatchSpec, f exitFacts, now time.Time) outcome {
	have := map[schemas.EventKind]bool{}
	var terminal *schemas.Event
	for i, ev := range f.Stored {
		have[ev.Kind] = true
		if ev.Kind.Terminal() && terminal == nil {
			terminal = &f.Stored[i]
		}
	}
	var out outcome
	for i, ev := range f.Stdout {
		if have[ev.Kind] || (ev.Kind.Terminal() && terminal != nil) {
			continue
		}
		out.Missing = append(out.Missing, ev)
		have[ev.Kind] = true
		if ev.Kind.Terminal() {
			terminal = &f.Stdout[i]
		}
	}
	if terminal != nil {
		out.Terminal = *terminal
		return out
	}
	var ev schemas.Event
	if f.StoppedForCancel {
		// The worker could not report it (the SIGTERM came before its
		// handler): a cancel. -1: it never ran.
		ev = cancelledEvent(id, spec, max(f.Result.ExitCode, 0), f.Ran, now)
	} else {
		ev = lostOutcome(id, spec, f, now)
	}
	out.Missing = append(out.Missing, ev)
	out.Terminal, out.ByRunner = ev, true
	return out
}

// lostOutcome is the failure the runner reports for a container that
// ended without the worker's terminal event.
func lostOutcome(id string, spec *schemas.DispatchSpec, f exitFacts, now time.Time) schemas.Event {
	res := f.Result
	detail := fmt.Sprintf("container exited with code %d", res.ExitCode)
	switch {
	case f.WaitErr != nil:
		detail = "waiting for the container failed: " + f.WaitErr.Error()
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
	if res.Err != nil && f.WaitErr == nil {
		detail += " (" + res.Err.Error() + ")"
	}
	detail += " and the worker left no terminal event"
	if f.Unsigned != "" {
		// A worker without its key (it could not read it) reports unsigned.
		detail += "; an unsigned terminal event on its output (not trusted: the sub-agent could have written it) says: " + truncate(f.Unsigned, 300)
	}
	if f.LastLine != "" {
		detail += "; last output: " + truncate(f.LastLine, 300)
	}
	code := res.ExitCode
	if f.WaitErr != nil && code == 0 {
		code = exitEngineError
	}
	ev := failedEvent(id, spec, code, detail, now)
	switch {
	case f.WorkspaceOver != "":
		// The sub-agent did it: provider-failed, with the size and limit.
		ev.Failure.Reason, ev.Failure.Detail = schemas.ReasonProviderFailed, f.WorkspaceOver
	case f.TimedOut:
		ev.Failure.Reason = schemas.ReasonTimeout
		ev.Failure.Detail = "the container ran past the dispatch timeout and was stopped by the runner; " + detail
	}
	ms := f.Ran.Milliseconds()
	ev.DurationMS = &ms
	return ev
}

// failedEvent is a dispatch.failed (worker-lost) from the runner, with the
// spec's fields when the request is known.
func failedEvent(id string, spec *schemas.DispatchSpec, exitCode int, detail string, now time.Time) schemas.Event {
	code, ms := exitCode, int64(0)
	ev := schemas.Event{Kind: schemas.KindFailed, DispatchID: id, Time: now, ExitCode: &code, DurationMS: &ms,
		Failure: &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: detail}}
	withSpec(&ev, spec)
	return ev
}

// cancelledEvent is the dispatch.cancelled the runner publishes when the
// worker did not: the dispatch was cancelled before its container started
// (ran 0), or its container ended without a terminal event after the
// runner stopped it for a cancel. exitCode is the container's, 0 when none
// ran.
func cancelledEvent(id string, spec *schemas.DispatchSpec, exitCode int, ran time.Duration, now time.Time) schemas.Event {
	code, ms := exitCode, ran.Milliseconds()
	ev := schemas.Event{Kind: schemas.KindCancelled, DispatchID: id, Time: now, ExitCode: &code, DurationMS: &ms}
	withSpec(&ev, spec)
	return ev
}

func withSpec(ev *schemas.Event, spec *schemas.DispatchSpec) {
	if spec != nil {
		ev.TaskID, ev.Round = spec.TaskID, spec.EffectiveRound()
		ev.Subagent, ev.Runtime = spec.Subagent.Name, spec.Subagent.Runtime
	}
}

// lostEvent is a dispatch.failed (worker-lost) from the runner, now.
func lostEvent(spec *schemas.DispatchSpec, exitCode int, detail string) schemas.Event {
	return failedEvent(spec.DispatchID, spec, exitCode, detail, time.Now().UTC())
}

// lostEvent is a dispatch.failed (worker-lost) from the runner for this
// dispatch, now.
func (d *dispatch) lostEvent(exitCode int, detail string) schemas.Event {
	return failedEvent(d.id, d.spec(), exitCode, detail, time.Now().UTC())
}

// spec is the dispatch's spec, nil while its request is not known.
func (d *dispatch) spec() *schemas.DispatchSpec {
	if d.req == nil {
		return nil
	}
	return &d.req.Spec
}
