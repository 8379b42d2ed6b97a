package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

const watchSynopsis = "[TASK] [--json] [--server URL] [--token TOKEN]"

// watchResync is how often watch lists the tasks again, a safety net for
// changes made while its stream was being (re)opened.
const watchResync = 10 * time.Second

func runWatch(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return verbExit(stderr, "agora watch", watchMain(ctx, args, environ, stdout))
}

// watchMain follows every task (or one) until interrupted: on a terminal
// the attention table redrawn on each change; otherwise a line per change
// of a task's state or round; with --json one wire.Change per line
// (the tasks there are first, as changes).
func watchMain(ctx context.Context, args, environ []string, stdout io.Writer) error {
	a := newAPIVerb("agora watch", watchSynopsis)
	c, pos, err := a.open(args, environ, stdout, func(pos []string) error {
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
	w := &watcher{out: stdout, ui: newUI(stdout, environ), json: a.json, server: a.server, taskID: taskID,
		tasks: map[string]*wire.Task{}, shown: map[string]string{}}

	changes := make(chan wire.Change, 256)
	streamCtx, stopStream := context.WithCancel(ctx)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		c.KeepWatching(streamCtx, taskID, func(ch wire.Change) {
			select {
			case changes <- ch:
			case <-streamCtx.Done():
			}
		})
	}()
	defer func() { stopStream(); <-streamed }()

	if err := w.resync(ctx, c); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return a.explain(err, taskID)
	}
	w.draw()
	resync := time.NewTicker(watchResync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-changes:
			w.apply(ch)
			// Take what else has come before drawing once.
			for more := true; more; {
				select {
				case ch := <-changes:
					w.apply(ch)
				default:
					more = false
				}
			}
		case <-resync.C:
			// A server that is away for a while is not an error: the
			// table stays as it was until it answers again.
			if err := w.resync(ctx, c); err != nil {
				continue
			}
		}
		w.draw()
	}
}

// watcher keeps the tasks it has seen and shows their changes.
type watcher struct {
	out            io.Writer
	ui             ui
	json           bool
	server, taskID string
	tasks          map[string]*wire.Task
	// shown is what the plain output last said of each task.
	shown map[string]string
	dirty bool
}

// resync lists the tasks and applies what differs from what it knows.
func (w *watcher) resync(ctx context.Context, c *client.Client) error {
	var list []*wire.Task
	if w.taskID != "" {
		t, err := c.Get(ctx, w.taskID)
		if err != nil {
			return err
		}
		list = []*wire.Task{t}
	} else {
		var err error
		if list, _, err = c.ListAll(ctx, wire.ListOptions{}); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i := len(list) - 1; i >= 0; i-- { // oldest first
		seen[list[i].ID] = true
		w.apply(wire.Change{TaskID: list[i].ID, Task: list[i]})
	}
	for id := range w.tasks {
		if !seen[id] {
			w.apply(wire.Change{TaskID: id, Removed: true})
		}
	}
	return nil
}

// apply takes one change unless it is older than what is known.
func (w *watcher) apply(ch wire.Change) {
	if w.taskID != "" && ch.TaskID != w.taskID {
		return
	}
	old, known := w.tasks[ch.TaskID]
	switch {
	case ch.Removed && !known:
		return
	case ch.Removed:
		delete(w.tasks, ch.TaskID)
	case ch.Task == nil || known && ch.Task.Revision <= old.Revision:
		return
	default:
		w.tasks[ch.TaskID] = ch.Task
	}
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
	tasks := make([]*wire.Task, 0, len(w.tasks))
	counts := map[wire.State]int{}
	for _, t := range w.tasks {
		tasks = append(tasks, t)
		counts[t.State]++
	}
	fmt.Fprint(w.out, "\x1b[H\x1b[2J")
	fmt.Fprintf(w.out, "%s  %s  %s\n\n", w.ui.paint(sgrBold, "agora watch"), w.server,
		w.ui.paint(sgrDim, time.Now().Format("15:04:05")+" · Ctrl-C to stop"))
	w.ui.writeAttention(w.out, tasks, summaryOf(counts), "")
}

// summaryOf counts as the orchestrator does: "2 running · 1 needs input".
func summaryOf(counts map[wire.State]int) wire.Summary {
	text := ""
	for _, s := range wire.States {
		if n := counts[s]; n > 0 {
			if text != "" {
				text += " · "
			}
			text += fmt.Sprintf("%d %s", n, stateLabel(s))
		}
	}
	if text == "" {
		text = "no tasks"
	}
	return wire.Summary{Counts: counts, Text: text}
}
