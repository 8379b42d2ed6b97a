package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// A watcher's queue holds lag changes; one that is full — its reader fell
// that far behind — is dropped and its watch ends with ErrWatchLagged,
// rather than hold the others back. The watch of the bucket runs while
// anyone watches.
type watchHub struct {
	mu   sync.Mutex
	subs map[*hubSub]struct{}
	// gen numbers the watches of the bucket, so a late change or loss from
	// a stopped one is ignored; stop ends the current one (nil: none).
	gen  int
	stop context.CancelFunc
	// lag is each watcher's queue; 0 is DefaultWatchLag.
	lag int
}

// hubSub is one watcher.
type hubSub struct {
	ch chan *hubChange
	// done is closed when the hub drops the watcher; err says why.
	done chan struct{}
	err  error
}

// hubChange is one change as every watcher gets it: the task (shared, not
// to be changed) and the change encoded as JSON.
type hubChange struct {
	change wire.Change
	json   []byte
}

// subscribe adds a watcher, starting the watch of the bucket if none runs.
// Every change written after it returns reaches the watcher.
func (o *Orchestrator) subscribe() (*hubSub, error) {
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
	if h.subs == nil {
		h.subs = map[*hubSub]struct{}{}
	}
	lag := h.lag
	if lag <= 0 {
		lag = DefaultWatchLag
	}
	s := &hubSub{ch: make(chan *hubChange, lag), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, nil
}

// unsubscribe removes a watcher; the last one stops the watch.
func (o *Orchestrator) unsubscribe(s *hubSub) {
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		h.drop(s, nil)
	}
}

// drop ends watcher s with err; h.mu is held.
func (h *watchHub) drop(s *hubSub, err error) {
	delete(h.subs, s)
	s.err = err
	close(s.done)
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
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
	hc := &hubChange{change: c, json: data}
	h := &o.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen != h.gen {
		return
	}
	for s := range h.subs {
		select {
		case s.ch <- hc:
		default:
			h.drop(s, fmt.Errorf("this stream %w (%d behind): reconnect, then read the state again", ErrWatchLagged, cap(s.ch)))
		}
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
	for s := range h.subs {
		h.drop(s, errWatchLost)
	}
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// watchEncoded is WatchReady whose fn also gets the change encoded as JSON
// (the same bytes for every watcher).
func (o *Orchestrator) watchEncoded(ctx context.Context, fn func(wire.Change, []byte), ready func()) error {
	id := caller(ctx)
	s, err := o.subscribe()
	if err != nil {
		return err
	}
	defer o.unsubscribe(s)
	if ready != nil {
		ready()
	}
	// seen: the tasks this caller saw in this watch, whose removal it is
	// told of (an admin or answerer is told of every removal).
	all := id.Admin || id.Answerer
	seen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return s.err
		case hc := <-s.ch:
			select {
			case <-s.done: // dropped: what is queued is no longer whole
				return s.err
			default:
			}
			c := hc.change
			if c.Removed {
				if seen[c.TaskID] || all {
					delete(seen, c.TaskID)
					fn(c, hc.json)
				}
				continue
			}
			if !id.sees(c.Task) {
				continue
			}
			if !all {
				seen[c.TaskID] = true
			}
			fn(c, hc.json)
		}
	}
}
