package orchestrator

import (
	"context"
	"time"

	"github.com/agoradev/agora/wire"
)

// TaskStats is what the metrics read of one task: its state, whether it
// waits on a question, and per round how it ended, how long it ran and how
// long its answer took. The task cache keeps these few numbers for every
// task, finished ones included, so a scrape decodes nothing
// (EachTaskStats).
type TaskStats struct {
	State wire.State
	// OpenQuestion: the task waits for an answer to its last round's question.
	OpenQuestion bool
	Rounds       []RoundStats
}

// RoundStats is one round's share of TaskStats.
type RoundStats struct {
	// State is the round's state ("" for one this version does not know).
	State wire.State
	// Ended: the round's dispatch started and ended; Ran is EndedAt −
	// StartedAt (below zero when two hosts' clocks disagree).
	Ended bool
	Ran   time.Duration
	// Answered: the round's question has an accepted answer, after
	// AnswerWaitMS.
	Answered     bool
	AnswerWaitMS int64
}

// StatsOf is t's TaskStats.
func StatsOf(t *wire.Task) TaskStats {
	s := TaskStats{State: t.State, Rounds: make([]RoundStats, len(t.Rounds))}
	for i := range t.Rounds {
		r := &t.Rounds[i]
		rs := &s.Rounds[i]
		rs.State = r.State
		if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
			rs.Ended, rs.Ran = true, r.EndedAt.Sub(r.StartedAt)
		}
		if r.Answer != nil {
			rs.Answered, rs.AnswerWaitMS = true, r.Answer.WaitMS
		}
	}
	if r := currentRound(t); t.State == wire.StateNeedsInput && r != nil && r.Question != nil && r.Answer == nil {
		s.OpenQuestion = true
	}
	return s
}

// EachTaskStats calls fn with the stats of every stored task, from the
// task cache's index (no task is read or decoded) when it is current, else
// from an index built from the bucket. fn must not keep its argument.
func (o *Orchestrator) EachTaskStats(ctx context.Context, fn func(*TaskStats)) error {
	c, err := o.listing(ctx)
	if err != nil {
		return err
	}
	c.eachStats(fn)
	return nil
}
