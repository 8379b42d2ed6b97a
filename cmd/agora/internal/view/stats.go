package view

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/agoradev/agora/wire"
)

// Stats prints a line about the people's time the questions took,
// then a row for all the tasks and one per sub-agent.
func Stats(w io.Writer, st wire.Stats) error {
	tot := st.Total
	if tot.Tasks == 0 {
		_, err := fmt.Fprintln(w, "no tasks match (agora status lists the tasks you may see)")
		return err
	}
	fmt.Fprintf(w, "%s asked %s", statsPlural(tot.Tasks, "task"), statsPlural(tot.Questions, "question"))
	if tot.AnswerWait.Count > 0 {
		fmt.Fprintf(w, "; waiting for answers took %s in all", HumanDuration(time.Duration(tot.AnswerWait.TotalMS)*time.Millisecond))
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
		row(Clip(s.Subagent, 40), s)
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
	return HumanDuration(time.Duration(d.MedianMS)*time.Millisecond) + "·" + HumanDuration(time.Duration(d.P90MS)*time.Millisecond)
}
