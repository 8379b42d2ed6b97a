package view

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
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

// Count counts the results by how they went.
func (r *BulkReport) Count() {
	for _, it := range r.Results {
		switch it.Result {
		case client.BulkDone:
			r.Done++
		case client.BulkSkipped:
			r.Skipped++
		default:
			r.Failed++
		}
	}
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

// Confirm shows the count and asks on a terminal, wanting y or yes;
// without a terminal it refuses in one line, saying to add --yes.
func Confirm(in io.Reader, tty bool, out io.Writer, count, verb string, n int) error {
	if !tty {
		return exitcode.Usagef("%s; nothing changed: no terminal on stdin to confirm on, so add --yes to %s them", count, verb)
	}
	fmt.Fprintf(out, "%s\n%s %d task%s? [y/N] ", count, verb, n, PluralS(n))
	line, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
		return nil
	}
	return exitcode.Outcome{Code: 1, Msg: "not confirmed; nothing changed"}
}
