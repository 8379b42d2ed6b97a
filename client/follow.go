package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agoradev/agora/wire"
)

// KeepWatching is Watch that does not give up: it calls fn with each change
// of task taskID (every task when empty) until ctx ends, reopening the
// stream after a growing pause (1 s to 10 s) whenever it breaks or cannot
// be opened. Changes made while the stream was down are not replayed: read
// the task (or list) again after a gap, as Follow does.
func (c *Client) KeepWatching(ctx context.Context, taskID string, fn func(wire.Change)) {
	pause := time.Second
	for {
		opened := time.Now()
		_ = c.Watch(ctx, taskID, fn)
		if ctx.Err() != nil {
			return
		}
		if time.Since(opened) > 10*time.Second {
			pause = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}

// FollowOptions tune Follow; the zero value is the CLI's behaviour.
type FollowOptions struct {
	// Poll is how often the task is read again besides following its
	// change stream, as a safety net (default 2 s).
	Poll time.Duration
	// GiveUp is how long Follow keeps trying while the server does not
	// answer (default 1 min).
	GiveUp time.Duration
	// Tick, when set, also calls OnUpdate this often without a change (a
	// display of the elapsed time).
	Tick time.Duration
	// OnUpdate is called with the task first, then with every newer
	// version (and on every Tick).
	OnUpdate func(*wire.Task)
	// OnTrouble is called when a read fails and Follow keeps trying.
	OnTrouble func(error)
}

// ErrRemoved is the error of Follow when the task is removed meanwhile.
var ErrRemoved = errors.New("task removed while following it")

// Follow follows task t until it ends (a terminal state) and returns it
// then. A question does not end it: the answer may come from anywhere
// (a person, a webhook, the route's default), and the task goes on. It
// follows the task's change stream, reopened when it breaks, and reads
// the task every Poll as well; a server away for less than GiveUp is
// ridden out. A removed task is ErrRemoved.
func (c *Client) Follow(ctx context.Context, t *wire.Task, opts FollowOptions) (*wire.Task, error) {
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.GiveUp <= 0 {
		opts.GiveUp = time.Minute
	}
	update := func(*wire.Task) {}
	if opts.OnUpdate != nil {
		update = opts.OnUpdate
	}
	changes := make(chan wire.Change, 64)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		c.KeepWatching(watchCtx, t.ID, func(ch wire.Change) {
			select {
			case changes <- ch:
			case <-watchCtx.Done():
			}
		})
	}()
	defer func() { stopWatch(); <-watched }()

	latest := t
	update(latest)
	poll := time.NewTicker(opts.Poll)
	defer poll.Stop()
	var tick <-chan time.Time
	if opts.Tick > 0 {
		ticker := time.NewTicker(opts.Tick)
		defer ticker.Stop()
		tick = ticker.C
	}
	removed := fmt.Errorf("task %s: %w", t.ID, ErrRemoved)
	lastContact := time.Now()
	for !latest.State.Terminal() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ch := <-changes:
			if ch.Removed {
				return nil, removed
			}
			if ch.Task != nil && ch.Task.Revision >= latest.Revision {
				latest = ch.Task
				lastContact = time.Now()
			}
		case <-poll.C:
			got, err := c.Get(ctx, t.ID)
			switch {
			case errors.Is(err, wire.ErrNotFound):
				return nil, removed
			case err != nil && ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil && time.Since(lastContact) > opts.GiveUp:
				return nil, err
			case err != nil:
				if opts.OnTrouble != nil {
					opts.OnTrouble(err)
				}
				continue
			case got.Revision >= latest.Revision:
				latest = got
			}
			lastContact = time.Now()
		case <-tick:
		}
		update(latest)
	}
	return latest, nil
}

// FollowAll reads and follows each task of ids at once until each ends,
// as Follow does, and returns them in the order of ids with the error of
// each (a task not found, ErrRemoved, ctx's end). An empty id is skipped:
// its task and error are nil. Each task holds one change stream open while
// it runs.
func (c *Client) FollowAll(ctx context.Context, ids []string, opts FollowOptions) ([]*wire.Task, []error) {
	tasks := make([]*wire.Task, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		if id == "" {
			continue
		}
		wg.Go(func() {
			t, err := c.Get(ctx, id)
			if err == nil {
				t, err = c.Follow(ctx, t, opts)
			}
			tasks[i], errs[i] = t, err
		})
	}
	wg.Wait()
	return tasks, errs
}
