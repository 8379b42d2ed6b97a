package view

import (
	"encoding/json"
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

// BatchStatus is batch status's --json output.
type BatchStatus struct {
	Batch     string               `json:"batch"`
	Tasks     int                  `json:"tasks"`
	Counts    map[wire.State]int   `json:"counts"`
	Questions []wire.QuestionGroup `json:"questions"`
}

// BatchStatus writes the batch's tasks counted by state, where its failed
// ones are, and its open questions grouped.
func (u UI) BatchStatus(w io.Writer, st BatchStatus) {
	var parts []string
	for _, s := range []wire.State{wire.StateQueued, wire.StateRunning, wire.StateNeedsInput,
		wire.StateFinished, wire.StateFailed, wire.StateCancelled, wire.StateExpired} {
		if n := st.Counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, u.State(s)))
		}
	}
	fmt.Fprintf(w, "batch %s: %d task%s · %s\n", u.Paint(Bold, st.Batch), st.Tasks, PluralS(st.Tasks), strings.Join(parts, " · "))
	if n := st.Counts[wire.StateFailed]; n > 0 {
		fmt.Fprintf(w, "failed: agora status --label %s=%s --state failed\n", wire.BatchLabel, st.Batch)
	}
	fmt.Fprintln(w)
	u.QuestionGroups(w, st.Questions, false)
}

// AllLike writes what answer --all-like did with each question like the
// task's, and the counts.
func AllLike(w io.Writer, rep wire.GroupAnswerResult) {
	for _, res := range rep.Results {
		switch res.Result {
		case wire.GroupAnswered:
			fmt.Fprintf(w, "%s round %d: answered %s; now %s\n", res.TaskID, res.Round, rep.Answer, StateLabel(res.State))
		case wire.GroupAlreadyAnswered:
			fmt.Fprintf(w, "%s round %d: already answered (%s)\n", res.TaskID, res.Round, res.Error)
		default:
			fmt.Fprintf(w, "%s round %d: failed: %s\n", res.TaskID, res.Round, res.Error)
		}
	}
	fmt.Fprintf(w, "%d answered · %d already answered · %d failed\n", rep.Answered, rep.AlreadyAnswered, rep.Failed)
}

// BatchResult is one line of agora batch results.
type BatchResult struct {
	ID        string          `json:"id"`
	State     wire.State      `json:"state"`
	Outcome   *wire.Outcome   `json:"outcome,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Artifacts []wire.Artifact `json:"artifacts,omitempty"`
	// Error says why the result of a task that has one could not be read.
	Error string `json:"error,omitempty"`
}
