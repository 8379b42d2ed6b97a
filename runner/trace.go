package runner

import "time"

// Phase names one step of a dispatch on the runner, as a Trace hook sees
// it. Benchmarks split a dispatch's time in the runner's slot by them
// (docs/benchmarks.md, "Throughput at the floor").
type Phase string

// The phases, in the order a dispatch that runs to its end passes them.
const (
	// PhaseFetched: the request came off the queue into a free slot.
	PhaseFetched Phase = "fetched"
	// PhaseClaimed: the dispatch's claim is this runner's.
	PhaseClaimed Phase = "claimed"
	// PhaseCreate: host files are ready; the engine's Create is called.
	PhaseCreate Phase = "create"
	// PhaseStarted: the engine's Start returned.
	PhaseStarted Phase = "started"
	// PhaseExited: the engine's Wait returned (the container ended).
	PhaseExited Phase = "exited"
	// PhaseDrained: the container's output is read to its end.
	PhaseDrained Phase = "drained"
	// PhasePublished: the terminal event is stored on the bus.
	PhasePublished Phase = "published"
	// PhaseRemoved: the engine's Remove returned.
	PhaseRemoved Phase = "removed"
	// PhaseDone: host files removed, claim marked done, request
	// acknowledged; the slot is free after this.
	PhaseDone Phase = "done"
)

// Trace, when set in Config, is called as each dispatch passes a Phase. It
// runs on the dispatch's goroutine and must return quickly.
type Trace func(dispatchID string, p Phase, at time.Time)

// trace calls the Trace hook, if any.
func (r *Runner) trace(dispatchID string, p Phase) {
	if r.cfg.Trace != nil {
		r.cfg.Trace(dispatchID, p, time.Now())
	}
}
