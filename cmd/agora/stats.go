package main

// agora stats: question quality and round economics per sub-agent
// (GET /v1/stats; docs/stats.md).

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/wire"
)

const statsSynopsis = "[--subagent NAME] [--batch ID | --label KEY=VALUE] [--since 7d|DURATION|TIME] [--limit N] [--json] [--server URL] [--token TOKEN]"

func statsVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	subagent := fs.String("subagent", "", "only the tasks of the sub-agent `NAME`")
	batch := fs.String("batch", "", "only the tasks of batch `ID` (label agora.batch=ID)")
	label := fs.String("label", "", "only the tasks with the label `KEY=VALUE`")
	since := fs.String("since", "", "only the tasks created in the last `PERIOD` (7d, 36h, 90m) or since an RFC 3339 time")
	limit := fs.Int("limit", 0, fmt.Sprintf("list at most `N` sub-agents, most tasks first (default %d, at most %d); the total counts all", wire.DefaultPageLimit, wire.MaxPageLimit))
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q; run 'agora stats -h' for the flags", args[0])
		}
		now := time.Now
		opts := wire.StatsOptions{Subagent: *subagent, Label: *label, Limit: *limit}
		switch {
		case *batch != "" && *label != "":
			return usagef("--batch and --label both given; --batch ID is --label %s=ID, give one", wire.BatchLabel)
		case *batch != "":
			opts.Label = wire.BatchLabel + "=" + *batch
		}
		if k, _, ok := strings.Cut(opts.Label, "="); opts.Label != "" && (!ok || k == "") {
			return usagef("--label %q: want KEY=VALUE, e.g. --label team=ops", opts.Label)
		}
		if *limit < 0 || *limit > wire.MaxPageLimit {
			return usagef("--limit %d: want 1 to %d", *limit, wire.MaxPageLimit)
		}
		if *since != "" {
			t, err := sinceTime(*since, now())
			if err != nil {
				return err
			}
			opts.Since = t
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		st, err := c.Stats(ctx, opts)
		if err != nil {
			return a.explain(err, "")
		}
		if a.json {
			return writeJSON(stdout, st)
		}
		return writeStats(stdout, st)
	}
}

// sinceTime reads --since: a period back from now (7d, 36h, 90m) or an
// RFC 3339 time.
func sinceTime(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--since %q: want a period back from now (7d, 36h, 90m) or an RFC 3339 time (2026-11-19T00:00:00Z)", s)
}

// writeStats prints a line about the people's time the questions took,
// then a row for all the tasks and one per sub-agent.
func writeStats(w io.Writer, st wire.Stats) error {
	tot := st.Total
	if tot.Tasks == 0 {
		_, err := fmt.Fprintln(w, "no tasks match (agora status lists the tasks you may see)")
		return err
	}
	fmt.Fprintf(w, "%s asked %s", statsPlural(tot.Tasks, "task"), statsPlural(tot.Questions, "question"))
	if tot.AnswerWait.Count > 0 {
		fmt.Fprintf(w, "; waiting for answers took %s in all", humanDuration(time.Duration(tot.AnswerWait.TotalMS)*time.Millisecond))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUB-AGENT\tTASKS\tQ/TASK\tOPTIONS\tDEFAULT\tTAKEN\tWAIT p50·p90\tROUNDS avg·p90\tCOLD START p50·p90\tTOKENS/TASK\tCOST/TASK")
	row := func(name string, s wire.SubagentStats) {
		rounds, tokens, cost := "–", "–", "–"
		if s.RoundsPerTask.Count > 0 {
			rounds = fmt.Sprintf("%.1f·%d", s.RoundsPerTask.Mean, s.RoundsPerTask.P90)
		}
		if u := s.Usage; u != nil {
			tokens, cost = strconv.FormatFloat(u.TokensPerTask, 'f', 0, 64), fmt.Sprintf("$%.4f", u.CostPerTaskUSD)
		}
		taken := statsShare(s.DefaultTakenShare, s.AnsweredWithDefault)
		if s.DefaultAssumed > 0 {
			taken += fmt.Sprintf(" (%d assumed)", s.DefaultAssumed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Tasks, s.QuestionsPerTask,
			statsShare(s.WithOptionsShare, s.Questions), statsShare(s.WithDefaultShare, s.Questions), taken,
			statsDurations(s.AnswerWait), rounds, statsDurations(s.ColdStart), tokens, cost)
	}
	row("(all)", tot)
	for _, s := range st.Subagents {
		row(clipText(s.Subagent, 40), s)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.OmittedSubagents > 0 {
		fmt.Fprintf(w, "%s with fewer tasks counted in (all) only; --limit lists more\n", statsPlural(st.OmittedSubagents, "more sub-agent"))
	}
	return nil
}

func statsPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// share prints a share as a percentage, "–" when there was nothing to share.
func statsShare(v float64, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

// durations prints median·p90, "–" for none.
func statsDurations(d wire.Durations) string {
	if d.Count == 0 {
		return "–"
	}
	return humanDuration(time.Duration(d.MedianMS)*time.Millisecond) + "·" + humanDuration(time.Duration(d.P90MS)*time.Millisecond)
}
