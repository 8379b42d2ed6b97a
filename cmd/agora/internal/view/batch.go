package view

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/wire"
)

// BatchSummary writes what became of the lines.
func BatchSummary(w io.Writer, r *batchreport.Report) {
	fmt.Fprintf(w, "batch %s from %s: %d line%s · %d submitted · %d already there · %d failed\n",
		r.Batch, r.File, r.Lines, PluralS(r.Lines), r.Submitted, r.Existing, r.Failed)
	if r.Failed > 0 {
		fmt.Fprintln(w, "failed:")
		for _, g := range r.GroupFailures() {
			fmt.Fprintf(w, "  %s: %s\n", batchreport.LineList(g.Lines), g.Err)
		}
	}
	if r.Submitted+r.Existing > 0 {
		fmt.Fprintf(w, "next: agora batch status %s\n", r.Batch)
	}
}

// QuestionGroups writes one row per group; withBatch adds the batch
// column.
func (u UI) QuestionGroups(w io.Writer, groups []wire.QuestionGroup, withBatch bool) {
	if len(groups) == 0 {
		fmt.Fprintln(w, "no open questions")
		return
	}
	header := []string{"COUNT", "QUESTION", "OPTIONS", "TASKS", "IF UNANSWERED", "ANSWER ALL WITH"}
	if withBatch {
		header = append([]string{"COUNT", "BATCH"}, header[1:]...)
	}
	rows := make([][]Cell, 0, len(groups))
	for _, g := range groups {
		row := []Cell{{fmt.Sprint(g.Count), Bold}}
		if withBatch {
			row = append(row, Cell{OrDash(g.Batch), ""})
		}
		row = append(row, Cell{Clip(g.Question, 60), Yellow}, Cell{strings.Join(g.Options, " / "), ""},
			Cell{TaskList(g.TaskIDs, 50), ""}, Cell{IfUnansweredText(g.IfUnanswered, time.Now()), ""}, Cell{g.Action, Bold})
		rows = append(rows, row)
	}
	u.Table(w, header, rows)
}

// TaskList joins ids up to about n characters, then says how many more.
func TaskList(ids []string, n int) string {
	s := ""
	for i, id := range ids {
		next := s
		if i > 0 {
			next += ","
		}
		next += id
		if len(next) > n && i > 0 {
			return fmt.Sprintf("%s,… (+%d)", s, len(ids)-i)
		}
		s = next
	}
	return s
}
