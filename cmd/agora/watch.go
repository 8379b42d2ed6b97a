package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
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
		w := &watcher{out: stdout, ui: newUI(stdout, environ), json: a.json, server: a.server,
			set: client.NewTaskSet(taskID), shown: map[string]string{}}
		if err := c.Mirror(ctx, w.set, watchResync, w.show, w.draw); err != nil {
			return a.explain(err, taskID)
		}
		return nil
	}
}

// watcher shows the changes of the tasks client.Mirror keeps in set.
type watcher struct {
	out    io.Writer
	ui     ui
	json   bool
	server string
	set    *client.TaskSet
	// shown is what the plain output last said of each task.
	shown map[string]string
	dirty bool
}

// show writes a change the set took: as JSON, or a plain line when not
// on a terminal (where draw redraws the table instead).
func (w *watcher) show(ch wire.Change) {
	w.dirty = true
	switch {
	case w.json:
		data, _ := json.Marshal(ch)
		fmt.Fprintf(w.out, "%s\n", data)
	case !w.ui.tty:
		w.plainLine(ch)
	}
}

// plainLine writes a line when a task's state or round changed.
func (w *watcher) plainLine(ch wire.Change) {
	now := time.Now().Format("15:04:05")
	if ch.Removed {
		delete(w.shown, ch.TaskID)
		fmt.Fprintf(w.out, "%s  %s  removed\n", now, ch.TaskID)
		return
	}
	t := ch.Task
	key := string(t.State) + "/" + roundText(lastRound(t))
	if w.shown[t.ID] == key {
		return
	}
	w.shown[t.ID] = key
	line := fmt.Sprintf("%s  %s  %s  round %s  %s", now, t.ID, stateLabel(t.State), roundText(lastRound(t)), needsText(t))
	if next := t.Attention.Action; next != "" {
		line += "  → " + next
	}
	fmt.Fprintln(w.out, line)
}

// draw redraws the table on a terminal.
func (w *watcher) draw() {
	if !w.dirty || w.json || !w.ui.tty {
		return
	}
	w.dirty = false
	fmt.Fprint(w.out, "\x1b[H\x1b[2J")
	fmt.Fprintf(w.out, "%s  %s  %s\n\n", w.ui.paint(sgrBold, "agora watch"), w.server,
		w.ui.paint(sgrDim, time.Now().Format("15:04:05")+" · Ctrl-C to stop"))
	w.ui.writeAttention(w.out, w.set.Tasks(), w.set.Summary(), "")
}
