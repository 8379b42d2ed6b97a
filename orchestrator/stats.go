package orchestrator

import (
	"context"
	"time"

	"github.com/agoradev/agora/wire"
)

// TaskStats is what the metrics and Stats read of one task: its state and
// sub-agent, whether it waits on a question, the usage its runtime
// reported, and per round (each dispatch) how it started, ended, asked and
// was answered. The task cache keeps these few numbers for every task,
// finished ones included, so a scrape decodes nothing (EachTaskStats).
type TaskStats struct {
	State wire.State
	// Subagent is the sub-agent's name.
	Subagent string
	// OpenQuestion: the task waits for an answer to its last round's question.
	OpenQuestion bool
	// MaxRound is the highest round number: the rounds the task ran,
	// however many dispatches retry and respawn made of them.
	MaxRound int
	// Usage sums what the runtime reported over the rounds; nil when it
	// reported nothing.
	Usage  *UsageSum
	Rounds []RoundStats
}

// RoundStats is one round's (one dispatch's) share of TaskStats.
type RoundStats struct {
	// State is the round's state ("" for one this version does not know).
	State wire.State
	// Ended: the round's dispatch started and ended; Ran is EndedAt −
	// StartedAt (below zero when two hosts' clocks disagree).
	Ended bool
	Ran   time.Duration
	// Started: the round's dispatch started; ColdStart is StartedAt −
	// the time it was put on the queue (QueuedAt, or RetryAt after a
	// retry's backoff).
	Started   bool
	ColdStart time.Duration
	// Asked: the round asked a question; WithOptions and WithDefault say
	// whether it gave options and a default.
	Asked, WithOptions, WithDefault bool
	// Answered: the round's question has an accepted answer, after
	// AnswerWaitMS. DefaultTaken: the answer is the question's default;
	// Assumed: nobody answered and the default was taken.
	Answered     bool
	AnswerWaitMS int64
	DefaultTaken bool
	Assumed      bool
}

// UsageSum is the usage a task's runtime reported, summed over its rounds.
type UsageSum struct {
	Turns                    int
	CostUSD                  float64
	InputTokens              int64
	OutputTokens             int64
	CacheCreationInputTokens int64
	CacheReadInputTokens     int64
}

// add returns s (a new one when nil) with one round's usage added; a round
// that reported no number leaves s as it is.
func (s *UsageSum) add(turns int, cost float64, in, out, cacheCreation, cacheRead int64) *UsageSum {
	if turns == 0 && cost == 0 && in == 0 && out == 0 && cacheCreation == 0 && cacheRead == 0 {
		return s
	}
	if s == nil {
		s = &UsageSum{}
	}
	s.Turns += turns
	s.CostUSD += cost
	s.InputTokens += in
	s.OutputTokens += out
	s.CacheCreationInputTokens += cacheCreation
	s.CacheReadInputTokens += cacheRead
	return s
}

// Tokens is the four token counts summed.
func (s *UsageSum) Tokens() int64 {
	return s.InputTokens + s.OutputTokens + s.CacheCreationInputTokens + s.CacheReadInputTokens
}

// roundStatsOf is the timing part of a round's RoundStats.
func roundStatsOf(state wire.State, queued, retryAt, started, ended time.Time) RoundStats {
	rs := RoundStats{State: canonicalState(state)}
	if !started.IsZero() && !ended.IsZero() {
		rs.Ended, rs.Ran = true, ended.Sub(started)
	}
	if !started.IsZero() && !queued.IsZero() {
		rs.Started, rs.ColdStart = true, started.Sub(later(queued, retryAt))
	}
	return rs
}

// StatsOf is t's TaskStats.
func StatsOf(t *wire.Task) TaskStats {
	s := TaskStats{State: t.State, Subagent: t.Request.Subagent.Name, Rounds: make([]RoundStats, len(t.Rounds))}
	for i := range t.Rounds {
		r := &t.Rounds[i]
		rs := roundStatsOf(r.State, r.QueuedAt, r.RetryAt, r.StartedAt, r.EndedAt)
		if q := r.Question; q != nil {
			rs.Asked, rs.WithOptions, rs.WithDefault = true, len(q.Options) > 0, q.Default != nil
		}
		if a := r.Answer; a != nil {
			rs.Answered, rs.AnswerWaitMS, rs.Assumed = true, a.WaitMS, a.Assumed
			rs.DefaultTaken = r.Question != nil && r.Question.Default != nil && a.Value == *r.Question.Default
		}
		s.Rounds[i] = rs
		s.MaxRound = max(s.MaxRound, r.N)
		if u := r.Usage; u != nil {
			s.Usage = s.Usage.add(u.Turns, u.CostUSD, u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
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
	c.eachStats(taskFilter{}, time.Time{}, fn)
	return nil
}
