package view

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

// NewWatcher is agora watch's output on out: JSON lines, plain lines, or on
// a terminal the attention table of set, redrawn; server names the API.
func NewWatcher(out io.Writer, u UI, json bool, server string, set *client.TaskSet) *Watcher {
	return &Watcher{out: out, ui: u, json: json, server: server, set: set, shown: map[string]string{}}
}

// Watcher shows the changes of the tasks client.Mirror keeps in set.
type Watcher struct {
	out    io.Writer
	ui     UI
	json   bool
	server string
	set    *client.TaskSet
	// shown is what the plain output last said of each task.
	shown map[string]string
	dirty bool
}

// Show writes a change the set took: as JSON, or a plain line when not
// on a terminal (where Draw redraws the table instead).
func (w *Watcher) Show(ch wire.Change) {
	w.dirty = true
	switch {
	case w.json:
		data, _ := json.Marshal(ch)
		fmt.Fprintf(w.out, "%s\n", data)
	case !w.ui.TTY:
		w.plainLine(ch)
	}
}

// plainLine writes a line when a task's state or round changed.
func (w *Watcher) plainLine(ch wire.Change) {
	now := time.Now().Format("15:04:05")
	if ch.Removed {
		delete(w.shown, ch.TaskID)
		fmt.Fprintf(w.out, "%s  %s  removed\n", now, ch.TaskID)
		return
	}
	t := ch.Task
	key := string(t.State) + "/" + RoundText(LastRound(t))
	if w.shown[t.ID] == key {
		return
	}
	w.shown[t.ID] = key
	line := fmt.Sprintf("%s  %s  %s  round %s  %s", now, t.ID, StateLabel(t.State), RoundText(LastRound(t)), NeedsText(t))
	if next := t.Attention.Action; next != "" {
		line += "  → " + next
	}
	fmt.Fprintln(w.out, line)
}

// Draw redraws the table on a terminal.
func (w *Watcher) Draw() {
	if !w.dirty || w.json || !w.ui.TTY {
		return
	}
	w.dirty = false
	fmt.Fprint(w.out, "\x1b[H\x1b[2J")
	fmt.Fprintf(w.out, "%s  %s  %s\n\n", w.ui.Paint(Bold, "agora watch"), w.server,
		w.ui.Paint(Dim, time.Now().Format("15:04:05")+" · Ctrl-C to stop"))
	w.ui.Attention(w.out, w.set.Tasks(), w.set.Summary(), "")
}
