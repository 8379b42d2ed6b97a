package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agoradev/agora/wire"
)

// Stats is question quality and round economics per sub-agent, over the
// tasks the caller may see (every task for an admin or an answerer, its
// own for any other token) that opts chooses. It reads the task cache's
// index only: no task is read or decoded.
func (o *Orchestrator) Stats(ctx context.Context, opts wire.StatsOptions) (wire.Stats, error) {
	limit, err := wire.PageLimit(opts.Limit)
	if err != nil {
		return wire.Stats{}, err
	}
	f := taskFilter{}
	if opts.Label != "" {
		k, v, ok := strings.Cut(opts.Label, "=")
		if !ok || k == "" {
			return wire.Stats{}, fmt.Errorf("label %q: want key=value: %w", opts.Label, wire.ErrInvalidRequest)
		}
		f.key, f.value, f.label = k, v, true
	}
	if id := caller(ctx); !id.Admin && !id.Answerer {
		f.owner, f.scoped = id.Name, true
	}
	c, err := o.listing(ctx)
	if err != nil {
		return wire.Stats{}, err
	}
	total := &statsAcc{}
	per := map[string]*statsAcc{}
	c.eachStats(f, opts.Since, func(s *TaskStats) {
		if opts.Subagent != "" && s.Subagent != opts.Subagent {
			return
		}
		a := per[s.Subagent]
		if a == nil {
			a = &statsAcc{}
			a.out.Subagent = s.Subagent
			per[s.Subagent] = a
		}
		a.add(s)
		total.add(s)
	})
	return statsFrom(total, per, limit), nil
}

// statsFrom is the Stats body of the accumulated tasks: total and, most
// tasks first, at most limit of the sub-agents.
func statsFrom(total *statsAcc, per map[string]*statsAcc, limit int) wire.Stats {
	subs := make([]wire.SubagentStats, 0, len(per))
	for _, a := range per {
		subs = append(subs, a.result())
	}
	slices.SortFunc(subs, func(a, b wire.SubagentStats) int {
		if a.Tasks != b.Tasks {
			return b.Tasks - a.Tasks
		}
		return strings.Compare(a.Subagent, b.Subagent)
	})
	st := wire.Stats{Total: total.result(), Subagents: subs}
	if len(subs) > limit {
		st.Subagents, st.OmittedSubagents = subs[:limit], len(subs)-limit
	}
	return st
}

// statsAcc accumulates the TaskStats of one sub-agent (or all of them).
type statsAcc struct {
	out        wire.SubagentStats
	waits      []int64 // answer waits, ms
	coldStarts []int64 // ms
	rounds     []int   // of the ended tasks
	usage      wire.UsageStats
}

func (a *statsAcc) add(s *TaskStats) {
	a.out.Tasks++
	if s.State.Terminal() {
		a.out.EndedTasks++
		a.rounds = append(a.rounds, s.MaxRound)
	}
	a.out.Rounds += s.MaxRound
	a.out.Dispatches += len(s.Rounds)
	for _, r := range s.Rounds {
		if r.Started {
			a.coldStarts = append(a.coldStarts, max(r.ColdStart.Milliseconds(), 0))
		}
		if !r.Asked {
			continue
		}
		a.out.Questions++
		if r.WithOptions {
			a.out.WithOptions++
		}
		if r.WithDefault {
			a.out.WithDefault++
		}
		if !r.Answered {
			continue
		}
		a.out.Answered++
		a.waits = append(a.waits, max(r.AnswerWaitMS, 0))
		if r.WithDefault {
			a.out.AnsweredWithDefault++
		}
		if r.DefaultTaken {
			a.out.DefaultTaken++
		}
		if r.Assumed {
			a.out.DefaultAssumed++
		}
	}
	if u := s.Usage; u != nil {
		a.usage.Tasks++
		a.usage.InputTokens += u.InputTokens
		a.usage.OutputTokens += u.OutputTokens
		a.usage.CacheCreationInputTokens += u.CacheCreationInputTokens
		a.usage.CacheReadInputTokens += u.CacheReadInputTokens
		a.usage.CostUSD += u.CostUSD
	}
}

func (a *statsAcc) result() wire.SubagentStats {
	out := a.out
	out.QuestionsPerTask = ratio(out.Questions, out.Tasks)
	out.WithOptionsShare = ratio(out.WithOptions, out.Questions)
	out.WithDefaultShare = ratio(out.WithDefault, out.Questions)
	out.DefaultTakenShare = ratio(out.DefaultTaken, out.AnsweredWithDefault)
	out.AnswerWait = durationsOf(a.waits)
	out.ColdStart = durationsOf(a.coldStarts)
	out.RoundsPerTask = distributionOf(a.rounds)
	if a.usage.Tasks > 0 {
		u := a.usage
		tokens := u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		u.TokensPerTask = float64(tokens) / float64(u.Tasks)
		u.CostPerTaskUSD = u.CostUSD / float64(u.Tasks)
		out.Usage = &u
	}
	return out
}

func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// nearestRank is the index of the p-th percentile (0 < p ≤ 100) of n
// sorted values: the smallest value with at least p% of them at or below
// it.
func nearestRank(n, p int) int {
	return max((n*p+99)/100-1, 0)
}

func durationsOf(ms []int64) wire.Durations {
	if len(ms) == 0 {
		return wire.Durations{}
	}
	slices.Sort(ms)
	n, total := len(ms), int64(0)
	for _, v := range ms {
		total += v
	}
	return wire.Durations{Count: n, MedianMS: ms[nearestRank(n, 50)], P90MS: ms[nearestRank(n, 90)], MaxMS: ms[n-1], TotalMS: total}
}

func distributionOf(v []int) wire.Distribution {
	if len(v) == 0 {
		return wire.Distribution{}
	}
	slices.Sort(v)
	n, sum := len(v), 0
	for _, x := range v {
		sum += x
	}
	return wire.Distribution{Count: n, Mean: float64(sum) / float64(n), Median: v[nearestRank(n, 50)],
		P90: v[nearestRank(n, 90)], Max: v[n-1]}
}
