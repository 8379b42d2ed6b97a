package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

const logsSynopsis = "TASK [--round N] [-f] [--worker] [--json] [--server URL] [--token TOKEN]"

// logsVerb prints a round's output (the current round's by default): what
// storage keeps of a round that has ended; with -f a round that has not
// ended is followed live until it ends. --json wraps the output in
// {"task_id", "round", "dispatch_id", "output"}, one object per chunk
// with -f.
func logsVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	round := fs.Int("round", 0, "the round `N` (default: the current round; a respawned round: its latest attempt)")
	var follow bool
	fs.BoolVarP(&follow, "follow", "f", false, "follow a round that has not ended until it ends")
	worker := fs.Bool("worker", false, "also show agora's own lines (the worker's lifecycle events as JSON, its log lines); by default only what the sub-agent printed")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, func(pos []string) error {
			if len(pos) != 1 {
				return usagef("want one TASK, e.g. agora logs t-42 -f ('agora status' lists the tasks)")
			}
			if *round < 0 {
				return usagef("--round %d: want a round number (1, 2, …)", *round)
			}
			return nil
		})
		if err != nil {
			return err
		}
		id := pos[0]
		// Read the task first: an unknown task, or round, is said plainly,
		// and --json names the round.
		t, err := c.Get(ctx, id)
		if err != nil {
			return a.explain(err, id)
		}
		r := view.LastRound(t)
		if *round > 0 {
			r = nil
			for i := range t.Rounds {
				if t.Rounds[i].N == *round {
					r = &t.Rounds[i]
				}
			}
			if r == nil {
				return fmt.Errorf("task %s has no round %d (its rounds are 1 to %d); 'agora status %s' shows them", id, *round, view.LastRound(t).N, id)
			}
		}
		out := stdout
		var whole *strings.Builder
		if a.json {
			if follow {
				out = view.LogsJSON{TaskID: id, Round: r.N, DispatchID: r.DispatchID}.Chunks(stdout)
			} else {
				whole = &strings.Builder{}
				out = whole
			}
		}
		err = c.Logs(ctx, id, r.N, follow, &schemas.OutputFilter{W: out, All: *worker})
		switch {
		case errors.Is(err, context.Canceled):
			return nil // interrupted while following: that is how it ends
		case errors.Is(err, wire.ErrWrongState):
			return fmt.Errorf("round %d of %s is %s: its output is stored when it ends; follow it live with: agora logs %s -f",
				r.N, id, view.StateLabel(r.State), id)
		case err != nil:
			return a.explain(err, id)
		}
		if whole != nil {
			return writeJSON(stdout, view.LogsJSON{TaskID: id, Round: r.N, DispatchID: r.DispatchID, Output: whole.String()})
		}
		return nil
	}
}
