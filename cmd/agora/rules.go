package main

// agora rules: the remembered answers (rules made by 'agora answer
// --remember', the web page's checkbox or Slack's "Always answer this"):
// list them, show one, remove one.

import (
	"context"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/view"
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
				return a.show(stdout, rule, func() { view.Rule(stdout, rule) })
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
			view.New(stdout, environ).Rules(stdout, rules)
			return nil
		}
	}
}
