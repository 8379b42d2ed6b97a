package view

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// Rule writes one remembered answer in full.
func Rule(w io.Writer, r *wire.Rule) {
	fmt.Fprintf(w, "rule %s\n", r.ID)
	fmt.Fprintf(w, "  question  %s\n", r.Question)
	if len(r.Options) > 0 {
		fmt.Fprintf(w, "  options   %s\n", strings.Join(r.Options, ", "))
	}
	fmt.Fprintf(w, "  answer    %s\n", r.Answer)
	fmt.Fprintf(w, "  scope     %s, on %s's tasks\n", r.Scope, orOperator(r.Owner))
	by := r.By
	if r.Via != "" {
		by += " via " + r.Via
	}
	fmt.Fprintf(w, "  made by   %s, %s (task %s round %d)\n", by, r.CreatedAt.Local().Format(time.RFC3339), r.FromTask, r.FromRound)
	fmt.Fprintf(w, "  expires   %s\n", r.ExpiresAt.Local().Format(time.RFC3339))
}

func orOperator(owner string) string {
	if owner == "" {
		return "the operator"
	}
	return owner
}

// Rules writes the remembered answers, one per row, and how to see or
// remove one.
func (u UI) Rules(w io.Writer, rules []wire.Rule) {
	if len(rules) == 0 {
		fmt.Fprintln(w, "no rules; 'agora answer TASK ANSWER --remember' makes one")
		return
	}
	rows := make([][]Cell, 0, len(rules))
	for _, r := range rules {
		rows = append(rows, []Cell{{r.ID, ""}, {Clip(r.Question, 60), ""}, {Clip(r.Answer, 30), ""},
			{r.Scope.String(), ""}, {orOperator(r.Owner), ""}, {r.By, ""}, {r.ExpiresAt.Local().Format(time.DateOnly), ""}})
	}
	u.Table(w, []string{"RULE", "QUESTION", "ANSWER", "SCOPE", "OWNER", "BY", "EXPIRES"}, rows)
	fmt.Fprintln(w, "\nshow one with 'agora rules show RULE', remove one with 'agora rules rm RULE'")
}
