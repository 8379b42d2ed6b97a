package main

// agora rules: the remembered answers (rules made by 'agora answer
// --remember', the web page's checkbox or Slack's "Always answer this"):
// list them, show one, remove one.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/wire"
)

// rulesSynopses are the usage of agora rules and of each subcommand.
var rulesSynopses = map[string]string{
	"":     "[list | show RULE | rm RULE] [--json] [--server URL] [--token TOKEN]",
	"list": "[--json] [--server URL] [--token TOKEN]",
	"show": "RULE [--json] [--server URL] [--token TOKEN]",
	"rm":   "RULE [--server URL] [--token TOKEN]",
}

// rulesVerb is agora rules (which lists them) and its subcommand sub.
func rulesVerb(sub string) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		a := newAPIVerb(fs)
		return func(ctx context.Context, args, environ []string, stdout, _ io.Writer) error {
			sub := sub // agora rules is agora rules list
			c, pos, err := a.open(args, environ, func(pos []string) error {
				switch sub {
				case "":
					if len(pos) > 0 {
						return usagef("unknown rules command %q; want list, show RULE or rm RULE", pos[0])
					}
				case "list":
					if len(pos) > 0 {
						return usagef("unexpected argument %q; agora rules list takes none", pos[0])
					}
				case "show", "rm":
					if len(pos) != 1 {
						return usagef("want agora rules %s RULE, with RULE from 'agora rules'", sub)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if sub == "" {
				sub = "list"
			}
			if sub == "show" || sub == "rm" {
				pos = append([]string{sub}, pos...)
			}
			switch sub {
			case "show":
				rule, err := c.Rule(ctx, pos[1])
				if err != nil {
					return a.explain(err, "")
				}
				if a.json {
					return writeJSON(stdout, rule)
				}
				writeRule(stdout, rule)
				return nil
			case "rm":
				if err := c.RemoveRule(ctx, pos[1]); err != nil {
					return a.explain(err, "")
				}
				fmt.Fprintf(stdout, "rule %s removed; the next question like it goes along its route\n", pos[1])
				return nil
			}
			rules, err := c.RulesAll(ctx)
			if err != nil {
				return a.explain(err, "")
			}
			if a.json {
				if rules == nil {
					rules = []wire.Rule{}
				}
				return writeJSON(stdout, wire.RuleList{Rules: rules})
			}
			if len(rules) == 0 {
				fmt.Fprintln(stdout, "no rules; 'agora answer TASK ANSWER --remember' makes one")
				return nil
			}
			rows := make([][]cell, 0, len(rules))
			for _, r := range rules {
				rows = append(rows, []cell{{r.ID, ""}, {clipText(r.Question, 60), ""}, {clipText(r.Answer, 30), ""},
					{r.Scope.String(), ""}, {orOperator(r.Owner), ""}, {r.By, ""}, {r.ExpiresAt.Local().Format(time.DateOnly), ""}})
			}
			newUI(stdout, environ).writeTable(stdout, []string{"RULE", "QUESTION", "ANSWER", "SCOPE", "OWNER", "BY", "EXPIRES"}, rows)
			fmt.Fprintln(stdout, "\nshow one with 'agora rules show RULE', remove one with 'agora rules rm RULE'")
			return nil
		}
	}
}

func writeRule(w io.Writer, r *wire.Rule) {
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

// rememberOf is the Remember of 'agora answer --remember': nil without
// --remember; scope and for given without it are a usage error.
func rememberOf(remember bool, scope, forTime string) (*wire.Remember, error) {
	if !remember {
		if scope != "" || forTime != "" {
			return nil, usagef("--remember-scope and --remember-for go with --remember")
		}
		return nil, nil
	}
	rem := &wire.Remember{Scope: scope}
	if forTime != "" {
		d, err := parseDays(forTime)
		if err != nil || d < time.Second || d > wire.MaxRuleTTL {
			return nil, usagef("--remember-for %q: want a duration like 12h or 7d, at most %dd (default %dd)",
				forTime, int(wire.MaxRuleTTL/(24*time.Hour)), int(wire.DefaultRuleTTL/(24*time.Hour)))
		}
		rem.ExpiresInSeconds = int64(d / time.Second)
	}
	return rem, nil
}

// parseDays reads a Go duration or whole days ("7d").
func parseDays(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
