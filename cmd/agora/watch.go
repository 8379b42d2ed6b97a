package main

import (
	"context"
	"io"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/view"
)

const watchSynopsis = "[TASK] [--json] [--server URL] [--token TOKEN]"

// watchResync is how often watch lists the tasks again, a safety net for
// changes made while its stream was being (re)opened.
const watchResync = 10 * time.Second

// watchVerb follows every task (or one) until interrupted: on a terminal
// the attention table redrawn on each change; otherwise a line per change
// of a task's state or round; with --json one wire.Change per line
// (the tasks there are first, as changes).
func watchVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, func(pos []string) error {
			if len(pos) > 1 {
				return usagef("want at most one TASK, got %d", len(pos))
			}
			return nil
		})
		if err != nil {
			return err
		}
		taskID := ""
		if len(pos) == 1 {
			taskID = pos[0]
		}
		set := client.NewTaskSet(taskID)
		w := view.NewWatcher(stdout, view.New(stdout, environ), a.json, a.server, set)
		if err := c.Mirror(ctx, set, watchResync, w.Show, w.Draw); err != nil {
			return a.explain(err, taskID)
		}
		return nil
	}
}
