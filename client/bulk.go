package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agoradev/agora/wire"
)

// Selector picks the tasks of a bulk operation: those of Batch (when
// set), with every label of Labels (key=value), in any of States (none:
// every state). The server filters by the batch (or the first label) and
// by a single state; the rest is filtered here, page by page.
type Selector struct {
	Batch  string
	Labels []string
	States []wire.State
}

// Empty reports whether s selects nothing in particular (every task).
func (s Selector) Empty() bool { return s.Batch == "" && len(s.Labels) == 0 && len(s.States) == 0 }

// String is the selector as the CLI's flags: --batch b1 --state failed.
func (s Selector) String() string {
	var parts []string
	if s.Batch != "" {
		parts = append(parts, "--batch "+s.Batch)
	}
	for _, l := range s.Labels {
		parts = append(parts, "--label "+l)
	}
	for _, st := range s.States {
		parts = append(parts, "--state "+string(st))
	}
	return strings.Join(parts, " ")
}

// Check names the first malformed part of s.
func (s Selector) Check() error {
	for _, l := range s.Labels {
		if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
			return fmt.Errorf("label %q: want key=value", l)
		}
	}
	for _, st := range s.States {
		if !slices.Contains(wire.States, st) {
			names := make([]string, len(wire.States))
			for i, s := range wire.States {
				names[i] = string(s)
			}
			return fmt.Errorf("state %q: want one of %s", st, strings.Join(names, ", "))
		}
	}
	return nil
}

// Selected is one task a selector picked: its id and state when listed.
type Selected struct {
	TaskID string     `json:"task_id"`
	State  wire.State `json:"state"`
}

// Select pages through the tasks the token may see (the API's list, the
// most a page allows) and returns those s picks, newest first. Only ids
// and states are kept, so 2,000 tasks cost little.
func (c *Client) Select(ctx context.Context, s Selector) ([]Selected, error) {
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("agora api: select tasks: %w: %v", wire.ErrInvalidRequest, err)
	}
	labels := slices.Clone(s.Labels)
	if s.Batch != "" {
		labels = append([]string{wire.BatchLabel + "=" + s.Batch}, labels...)
	}
	opts := wire.ListOptions{Limit: wire.MaxPageLimit}
	if len(labels) > 0 {
		opts.Label = labels[0]
	}
	if len(s.States) == 1 {
		opts.State = s.States[0]
	}
	var out []Selected
	_, err := all(ctx, "", func(cursor string) ([]struct{}, string, error) {
		o := opts
		o.Cursor = cursor
		page, err := c.List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		for _, t := range page.Tasks {
			if s.picks(t, labels) {
				out = append(out, Selected{TaskID: t.ID, State: t.State})
			}
		}
		return nil, page.NextCursor, nil
	})
	return out, err
}

func (s Selector) picks(t *wire.Task, labels []string) bool {
	if len(s.States) > 0 && !slices.Contains(s.States, t.State) {
		return false
	}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if got, ok := t.Request.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// BulkItem is what a bulk operation did to one task.
type BulkItem struct {
	TaskID string `json:"task_id"`
	// Result is done, skipped (the operation does not fit the task's state
	// now: a cancel of a task that ended meanwhile) or failed.
	Result string     `json:"result"`
	State  wire.State `json:"state,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// Results of a BulkItem.
const (
	BulkDone    = "done"
	BulkSkipped = "skipped"
	BulkFailed  = "failed"
)

// BulkOptions tune Bulk.
type BulkOptions struct {
	// Workers is how many calls run at once (default 8).
	Workers int
	// Progress is called after each task, one call at a time.
	Progress func(BulkItem)
}

// Bulk calls op for each task id, Workers at a time, each call through
// the task's own endpoint — so the token's scope applies to every task as
// to one — and reports what became of each, in ids' order. A task whose
// state no longer fits (wire.ErrWrongState) is skipped, any other error
// fails that task only; ids not reached because ctx ended are failed.
func (c *Client) Bulk(ctx context.Context, ids []string, opts BulkOptions,
	op func(ctx context.Context, id string) (*wire.Task, error)) []BulkItem {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	out := make([]BulkItem, len(ids))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	work := make(chan int)
	for range opts.Workers {
		wg.Go(func() {
			for i := range work {
				item := BulkItem{TaskID: ids[i], Result: BulkDone}
				t, err := op(ctx, ids[i])
				switch {
				case errors.Is(err, wire.ErrWrongState):
					item.Result, item.Error = BulkSkipped, messageOf(err)
				case err != nil:
					item.Result, item.Error = BulkFailed, messageOf(err)
				case t != nil:
					item.State = t.State
				}
				mu.Lock()
				out[i] = item
				if opts.Progress != nil {
					opts.Progress(item)
				}
				mu.Unlock()
			}
		})
	}
	for i := range ids {
		select {
		case work <- i:
			continue
		case <-ctx.Done():
		}
		mu.Lock()
		out[i] = BulkItem{TaskID: ids[i], Result: BulkFailed, Error: "interrupted before it was reached"}
		mu.Unlock()
	}
	close(work)
	wg.Wait()
	return out
}

// messageOf is an API error's message without the client's wrapping.
func messageOf(err error) string {
	if e, ok := errors.AsType[*Error](err); ok && e.Code != "" {
		return e.Message
	}
	return err.Error()
}
