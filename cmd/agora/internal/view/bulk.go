package view

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agoradev/agora/client"
)

// BulkReport is a bulk verb's --json output.
type BulkReport struct {
	Operation string `json:"operation"`
	Selector  string `json:"selector"`
	// Matched counts the tasks the selector picked; LeftAlone those the
	// operation does not apply to (not sent).
	Matched   int               `json:"matched"`
	LeftAlone int               `json:"left_alone"`
	Done      int               `json:"done"`
	Skipped   int               `json:"skipped"`
	Failed    int               `json:"failed"`
	Results   []client.BulkItem `json:"results"`
}

// BulkSummary writes, for the operation that did done to the tasks (cancelled)
// and left those in another state alone (already ended), the counts, then the tasks that were not
// changed, grouped by why.
func BulkSummary(w io.Writer, done, other string, r BulkReport) {
	fmt.Fprintf(w, "%s %d of %d task%s (%s)", done, r.Done, r.Matched, PluralS(r.Matched), r.Selector)
	if r.LeftAlone > 0 {
		fmt.Fprintf(w, " · %d %s, left alone", r.LeftAlone, other)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(w, " · %d skipped", r.Skipped)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, " · %d failed", r.Failed)
	}
	fmt.Fprintln(w)
	type group struct {
		result, err string
		ids         []string
	}
	var groups []*group
	for _, it := range r.Results {
		if it.Result == client.BulkDone {
			continue
		}
		// One line per cause, not per task: the task's id is left out.
		why := strings.ReplaceAll(it.Error, it.TaskID, "…")
		if it.Result == client.BulkSkipped {
			why = "its state changed meanwhile"
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.result == it.Result && g.err == why })
		if i < 0 {
			groups = append(groups, &group{result: it.Result, err: why})
			i = len(groups) - 1
		}
		groups[i].ids = append(groups[i].ids, it.TaskID)
	}
	for _, g := range groups {
		fmt.Fprintf(w, "  %s, %d task%s (%s): %s\n", g.result, len(g.ids), PluralS(len(g.ids)), TaskList(g.ids, 60), g.err)
	}
}
