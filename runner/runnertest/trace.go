// Package runnertest helps benchmarks split a dispatch's time by the
// runner's phases: PhaseLog is a runner's Trace, and Split turns it and the
// tasks' own times into the rows BenchmarkThroughput (orchestrator) and
// BenchmarkCapacity (test/capacity) print. It imports the runner only, so
// the tasks' times come in as Task, not as the API's types.
package runnertest

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agoradev/agora/runner"
)

// PhaseLog is a runner's Trace (runner.Config.Trace = log.Note): when each
// dispatch first passed each phase. Safe for concurrent use.
type PhaseLog struct {
	mu sync.Mutex
	at map[string]map[runner.Phase]time.Time
}

// NewPhaseLog returns an empty log.
func NewPhaseLog() *PhaseLog { return &PhaseLog{at: map[string]map[runner.Phase]time.Time{}} }

// Note records that dispatch id passed p at at; a phase passed again (an
// adopted dispatch) keeps its first time.
func (l *PhaseLog) Note(id string, p runner.Phase, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.at[id]
	if m == nil {
		m = map[runner.Phase]time.Time{}
		l.at[id] = m
	}
	if _, ok := m[p]; !ok {
		m[p] = at
	}
}

// Reset forgets every dispatch.
func (l *PhaseLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = map[string]map[runner.Phase]time.Time{}
}

// Of is when dispatch id passed each phase; nil when it never reached a
// runner.
func (l *PhaseLog) Of(id string) map[runner.Phase]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.at[id])
}

// Span is the time between two phases of one dispatch.
type Span struct {
	Name     string
	From, To runner.Phase
}

// DispatchSpans split a dispatch's time in a runner's slot, in order.
var DispatchSpans = []Span{
	{Name: "claim: fetched → claimed", From: runner.PhaseFetched, To: runner.PhaseClaimed},
	{Name: "host files, restore: claimed → Create", From: runner.PhaseClaimed, To: runner.PhaseCreate},
	{Name: "create/start (engine)", From: runner.PhaseCreate, To: runner.PhaseStarted},
	{Name: "container runs: Start → Wait returns", From: runner.PhaseStarted, To: runner.PhaseExited},
	{Name: "relay: exited → output drained", From: runner.PhaseExited, To: runner.PhaseDrained},
	{Name: "settle: drained → terminal event stored", From: runner.PhaseDrained, To: runner.PhasePublished},
	{Name: "settle: remove (engine)", From: runner.PhasePublished, To: runner.PhaseRemoved},
	{Name: "settle: files, claim done, ack", From: runner.PhaseRemoved, To: runner.PhaseDone},
}

// Task is what Split reads of a two-round task's record.
type Task struct {
	CreatedAt, UpdatedAt time.Time
	Rounds               []Round
}

// Round is what Split reads of one round.
type Round struct {
	DispatchID        string
	QueuedAt, AskedAt time.Time
}

// Times are the durations Split found, one per dispatch unless said.
type Times struct {
	// Queue: queued → fetched by a slot. Slot: fetched → done.
	Queue, Slot []time.Duration
	// Spans holds DispatchSpans' durations, in their order.
	Spans [][]time.Duration
	// Apply: terminal event stored → the task updated by it.
	Apply []time.Duration
	// Answered, per question: asked → the next round queued.
	Answered []time.Duration
	// Total, per task: submitted → its last update.
	Total []time.Duration
}

// Split reads the dispatches of tasks (those of two rounds) from the log.
func (l *PhaseLog) Split(tasks []Task) Times {
	out := Times{Spans: make([][]time.Duration, len(DispatchSpans))}
	for _, t := range tasks {
		if len(t.Rounds) != 2 {
			continue
		}
		for i, r := range t.Rounds {
			ph := l.Of(r.DispatchID)
			if ph == nil {
				continue
			}
			for j, sp := range DispatchSpans {
				if a, ok := ph[sp.From]; ok {
					if z, ok := ph[sp.To]; ok {
						out.Spans[j] = append(out.Spans[j], z.Sub(a))
					}
				}
			}
			out.Slot = append(out.Slot, ph[runner.PhaseDone].Sub(ph[runner.PhaseFetched]))
			out.Queue = append(out.Queue, ph[runner.PhaseFetched].Sub(r.QueuedAt))
			stored := ph[runner.PhasePublished]
			if i == 0 {
				out.Apply = append(out.Apply, r.AskedAt.Sub(stored))
				// The answer's compare-and-swap appends round 2, queued
				// (its QueuedAt is the answer's time); the enqueue that
				// follows counts in round 2's queue row.
				out.Answered = append(out.Answered, t.Rounds[1].QueuedAt.Sub(r.AskedAt))
			} else {
				out.Apply = append(out.Apply, t.UpdatedAt.Sub(stored))
			}
		}
		out.Total = append(out.Total, t.UpdatedAt.Sub(t.CreatedAt))
	}
	return out
}

// Mean is the mean of ds, 0 for none.
func Mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// Percentile is the p-th percentile of ds (nearest rank), 0 for none.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)]
}
