package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// TaskSet is a copy of the server's tasks — every one, or the one task it
// was made for — kept current with Apply from the changes Watch delivers.
// It is what a dashboard holds; Mirror keeps one up to date. It is not
// safe for concurrent use.
type TaskSet struct {
	only  string
	tasks map[string]*wire.Task
}

// NewTaskSet is an empty set of every task, or of task taskID alone.
func NewTaskSet(taskID string) *TaskSet {
	return &TaskSet{only: taskID, tasks: map[string]*wire.Task{}}
}

// Apply takes ch and reports whether it did. It leaves out a change of
// another task than the set's one, a version no newer (by Revision) than
// the one it holds — the stream and a list read again can deliver the same
// version twice, or an older one after a newer — and the removal of a task
// it does not hold.
func (s *TaskSet) Apply(ch wire.Change) bool {
	if s.only != "" && ch.TaskID != s.only {
		return false
	}
	old, known := s.tasks[ch.TaskID]
	switch {
	case ch.Removed && !known:
		return false
	case ch.Removed:
		delete(s.tasks, ch.TaskID)
	case ch.Task == nil || known && ch.Task.Revision <= old.Revision:
		return false
	default:
		s.tasks[ch.TaskID] = ch.Task
	}
	return true
}

// Resync reads the set's tasks again (ListAll, or Get of its one task)
// and applies what differs from what it holds, oldest first, as changes:
// fn is called with each one it took. A task gone from the server is a
// removal.
func (s *TaskSet) Resync(ctx context.Context, c *Client, fn func(wire.Change)) error {
	var list []*wire.Task
	if s.only != "" {
		t, err := c.Get(ctx, s.only)
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
	take := func(ch wire.Change) {
		if s.Apply(ch) && fn != nil {
			fn(ch)
		}
	}
	seen := map[string]bool{}
	for i := len(list) - 1; i >= 0; i-- { // lists are newest first
		seen[list[i].ID] = true
		take(wire.Change{TaskID: list[i].ID, Task: list[i]})
	}
	for id := range s.tasks {
		if !seen[id] {
			take(wire.Change{TaskID: id, Removed: true})
		}
	}
	return nil
}

// Tasks is every task the set holds, in no order.
func (s *TaskSet) Tasks() []*wire.Task {
	out := make([]*wire.Task, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out
}

// Summary counts the set's tasks by state and words the counts as the
// orchestrator's lists do: "2 running · 1 needs input", "no tasks".
func (s *TaskSet) Summary() wire.Summary {
	counts := map[wire.State]int{}
	for _, t := range s.tasks {
		counts[t.State]++
	}
	var parts []string
	for _, st := range wire.States {
		if n := counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(string(st), "_", " ")))
		}
	}
	text := strings.Join(parts, " · ")
	if text == "" {
		text = "no tasks"
	}
	return wire.Summary{Counts: counts, Text: text}
}

// Mirror keeps set current until ctx ends, then returns nil. It reads the
// tasks (Resync) — an error then is returned — and follows the event
// stream (KeepWatching, which reopens it), reading the tasks again every
// resync as a safety net for changes made while the stream was being
// reopened; a read that fails then is left for the next (a server away
// for a while is not an error). onChange is called with each change set
// took, and settled, when given, once after the first read and after each
// burst of changes or read again: the moment to draw.
func (c *Client) Mirror(ctx context.Context, set *TaskSet, resync time.Duration, onChange func(wire.Change), settled func()) error {
	if settled == nil {
		settled = func() {}
	}
	changes := make(chan wire.Change, 256)
	streamCtx, stopStream := context.WithCancel(ctx)
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		c.KeepWatching(streamCtx, set.only, func(ch wire.Change) {
			select {
			case changes <- ch:
			case <-streamCtx.Done():
			}
		})
	}()
	defer func() { stopStream(); <-streamed }()

	take := func(ch wire.Change) {
		if set.Apply(ch) && onChange != nil {
			onChange(ch)
		}
	}
	if err := set.Resync(ctx, c, onChange); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	settled()
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-changes:
			take(ch)
			// Take what else has come before settling once.
			for more := true; more; {
				select {
				case ch := <-changes:
					take(ch)
				default:
					more = false
				}
			}
		case <-tick.C:
			if err := set.Resync(ctx, c, onChange); err != nil {
				continue
			}
		}
		settled()
	}
}
