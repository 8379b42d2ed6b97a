package main

// agora stats: question quality and round economics per sub-agent
// (GET /v1/stats; docs/stats.md).

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/submitreq"
	"github.com/agoradev/agora/cmd/agora/internal/view"
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
			t, err := submitreq.Since(*since, now())
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
		return view.Stats(stdout, st)
	}
}
