package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agoradev/agora/wire"
)

// DefaultWatchLag is how many task changes a watcher may fall behind the
// shared watch before it is ended with ErrWatchLagged.
const DefaultWatchLag = 4096

// ErrWatchLagged ends a watch whose reader fell too far behind: it missed
// changes, so it reconnects and reads the state again.
var ErrWatchLagged = errors.New("fell too far behind the task changes")

// errWatchLost ends every watch when the shared watch of the bucket ends.
var errWatchLost = errors.New("the watch of the tasks bucket ended")

// watchHub is the one watch of the tasks bucket that every Watch of this
// process shares (the API's and the web page's event streams, the Slack
// bot): each change is decoded, given its view and encoded once, then
// handed to every watcher. Before, each watcher had its own watch and
// decoded every change itself: with 200 event streams open that was 41% of
// serve's CPU, and the API stopped answering at 100 submits a second
// (docs/capacity.md, "The API under load").
//
// Each watcher's filter (what its caller may see, what it keeps) runs in
// the fan-out, and the changes it keeps go straight to its queue, which its
// reader (an event stream's handler) reads: no goroutine of its own woken
// per change. A queue holds lag changes; one that is full — its reader fell
// that far behind — is dropped and its watch ends with ErrWatchLagged,
// rather than hold the others back. The watch of the bucket runs while
// anyone watches.
type watchHub struct {
	mu sync.Mutex
	// subs are the watchers, in a slice: the fan-out walks it per change.
	subs []*hubSub
	// owners is the owner of each task as the watch last saw it, so its
	// removal (which carries no task) goes to the streams that may see
	// it: one map for the hub, where each watcher kept one of its own
	// (200 map writes per change with 200 streams open).
	owners map[string]string
	// gen numbers the watches of the bucket, so a late change or loss from
	// a stopped one is ignored; stop ends the current one (nil: none).
	gen  int
	stop context.CancelFunc
	// lag is each watcher's queue; 0 is DefaultWatchLag.
	lag int
}

// hubSub is one watcher.
type hubSub struct {
	ch chan *Followed
	// done is closed when the hub drops the watcher; err says why.
	done chan struct{}
	err  error
	// name is the caller's name (Identity.Name), keep its own filter
	// (nil: all); all says the caller sees every task (an admin, an
	// answerer), else it sees those name owns.
	name string
	keep func(wire.Change) bool
	all  bool
}

// accepts reports whether s is sent c, a change of a task owned by owner
// ("": unknown, a removal of a task the watch never saw); h.mu is held.
// Identity.sees, for a removal too.
func (s *hubSub) accepts(c *wire.Change, owner string) bool {
	if !s.all && (s.name == "" || owner != s.name) {
		return false
	}
	return s.keep == nil || s.keep(*c)
}

// subscribe adds a watcher for the caller of ctx, keeping what keep
// accepts (nil: all), starting the watch of the bucket if none runs. Every
// change written after it returns reaches the watcher.
func (o *Orchestrator) subscribe(ctx context.Context, keep func(wire.Change) bool) (*hubSub, error) {
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil {
		if o.store == nil {
			return nil, errors.New("watch task changes: the orchestrator is not started")
		}
		ctx, cancel := context.WithCancel(context.Background())
		h.gen++
		gen := h.gen
		err := o.store.tasks.WatchLost(ctx, func(key string, value []byte, rev uint64) { o.publish(gen, key, value, rev) },
			func() { o.watchLost(gen) })
		if err != nil {
			cancel()
			return nil, err
		}
		h.stop = cancel
	}
	if h.owners == nil {
		h.owners = map[string]string{}
	}
	lag := h.lag
	if lag <= 0 {
		lag = DefaultWatchLag
	}
	id := caller(ctx)
	s := &hubSub{ch: make(chan *Followed, lag), done: make(chan struct{}), name: id.Name, keep: keep,
		all: id.Admin || id.Answerer}
	h.subs = append(h.subs, s)
	return s, nil
}

// unsubscribe removes a watcher; the last one stops the watch.
func (o *Orchestrator) unsubscribe(s *hubSub) {
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.subs, s) {
		h.drop(s, nil)
	}
}

// drop ends watcher s with err; h.mu is held.
func (h *watchHub) drop(s *hubSub, err error) {
	h.subs = slices.DeleteFunc(h.subs, func(o *hubSub) bool { return o == s })
	s.err = err
	close(s.done)
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
		h.owners = nil
	}
}

// publish hands one change of watch gen to every watcher.
func (o *Orchestrator) publish(gen int, key string, value []byte, rev uint64) {
	c := wire.Change{TaskID: key, Removed: value == nil}
	if value != nil {
		var t wire.Task
		if err := json.Unmarshal(value, &t); err != nil {
			o.log.Warn("watch task changes: a task does not decode; its change is not sent", "task_id", key, "error", err)
			return
		}
		t.Revision = rev
		c.Task = o.view(&t)
	}
	data, err := json.Marshal(c)
	if err != nil {
		o.log.Warn("watch task changes: a change does not encode; it is not sent", "task_id", key, "error", err)
		return
	}
	f := &Followed{Change: c, JSON: data}
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen {
		return
	}
	var owner string
	if c.Removed {
		owner = h.owners[key]
		delete(h.owners, key)
	} else {
		owner = c.Task.Owner
		if h.owners[key] != owner {
			h.owners[key] = owner
		}
	}
	var lagged []*hubSub
	for _, s := range h.subs {
		if !s.accepts(&f.Change, owner) {
			continue
		}
		select {
		case s.ch <- f:
		default:
			lagged = append(lagged, s)
		}
	}
	for _, s := range lagged {
		h.drop(s, fmt.Errorf("this stream %w (%d behind): reconnect, then read the state again", ErrWatchLagged, cap(s.ch)))
	}
}

// watchLost ends every watcher of watch gen.
func (o *Orchestrator) watchLost(gen int) {
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen {
		return
	}
	for _, s := range slices.Clone(h.subs) {
		h.drop(s, errWatchLost)
	}
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// follow is Follow of this orchestrator: the watcher's queue is the
// Follower's Changes, filled by the fan-out; one goroutine waits for ctx
// or the drop to report on Done.
func (o *Orchestrator) follow(ctx context.Context, keep func(wire.Change) bool) Follower {
	ready := make(chan struct{})
	done := make(chan error, 1)
	s, err := o.subscribe(ctx, keep)
	if err != nil {
		done <- err
		return Follower{Changes: make(chan *Followed), Ready: ready, Done: done}
	}
	close(ready)
	go func() {
		select {
		case <-ctx.Done():
			o.unsubscribe(s)
			done <- nil
		case <-s.done:
			done <- s.err
		}
	}()
	return Follower{Changes: s.ch, Ready: ready, Done: done}
}

// watchReady is WatchReady: a follow whose changes are handed to fn.
func (o *Orchestrator) watchReady(ctx context.Context, fn func(wire.Change), ready func()) error {
	s, err := o.subscribe(ctx, nil)
	if err != nil {
		return err
	}
	defer o.unsubscribe(s)
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return s.err
		case f := <-s.ch:
			select {
			case <-s.done: // dropped: what is queued is no longer whole
				return s.err
			default:
			}
			fn(f.Change)
		}
	}
}
