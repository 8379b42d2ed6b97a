package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

const (
	// logStoreWait is how long Logs waits for a round that ran to have its
	// output stored after the round ended: a cancelled round's container
	// stops within the runner's grace period, and a worker that publishes
	// its own events may be a moment ahead of the runner's upload.
	logStoreWait = 15 * time.Second
	// logPollInterval is how often Logs looks for the stored output while
	// waiting for it.
	logPollInterval = 200 * time.Millisecond
	// logRecheck is how often a follow reads the task again, a safety net
	// for a change its watch did not deliver.
	logRecheck = 5 * time.Second
	// liveTailBytes is how much of the live output Logs keeps to find
	// where it ends in the stored copy.
	liveTailBytes = 64 << 10
)

// OutputKey is the storage key of a dispatch's output.
func OutputKey(dispatchID string) string {
	return schemas.DispatchKey(dispatchID, schemas.DispatchOutput)
}

// Logs writes the output of round n of task taskID to w (n 0: the task's
// current round; a respawned round: its latest attempt). A round that
// never started has no output: nothing is written.
//
//   - A round that has ended (finished, failed, cancelled, or paused with a
//     question) has its output in storage at OutputKey(dispatch id); the
//     runner stores it, up to its log cap, before it publishes the round's
//     terminal event. Logs copies it (waiting up to logStoreWait for a
//     round that ran and whose output is not stored yet).
//   - A round that has not ended is ErrWrongState without follow. With
//     follow, Logs subscribes to the round's live log subject
//     (agora.logs.<dispatch id>, fire and forget) and writes each chunk as
//     it comes, until a watch of the task sees the round end. Then it
//     finishes with what storage has that the live chunks did not carry.
//
// Duplicates: the live chunks are the same bytes, in the same order, as
// the stored copy, so Logs finds where the live bytes end in it (see
// unseenOutput) and writes only the rest — chunks in flight when the round
// ended. A follower that joined from the round's start gets the whole
// output exactly once. One that joined while the round was printing gets
// the output from when it joined: what came before is not repeated out of
// order (Logs without follow, once the round has ended, has all of it).
// When the live bytes are not in the stored copy — output over the
// runner's log cap, of which storage keeps the start — nothing more is
// written rather than something twice.
func (o *Orchestrator) Logs(ctx context.Context, taskID string, n int, follow bool, w io.Writer) error {
	if o.cfg.Store == nil {
		return fmt.Errorf("output of task %s: this orchestrator has no storage (start it with --storage, the runners' storage)", taskID)
	}
	t, err := o.visible(ctx, taskID)
	if err != nil {
		return err
	}
	r, err := roundOf(t, n)
	if err != nil {
		return err
	}
	if roundEnded(r) {
		return o.copyOutput(ctx, r, w)
	}
	if !follow {
		return fmt.Errorf("task %s round %d is %s: its output is stored when it ends; follow it live instead: %w",
			t.ID, r.N, stateLabel(r.State), wire.ErrWrongState)
	}
	return o.followOutput(ctx, t.ID, r.DispatchID, w)
}

// roundOf is round n of t (its latest attempt), or the current round for 0.
func roundOf(t *wire.Task, n int) (*wire.Round, error) {
	if n == 0 {
		if r := currentRound(t); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("task %s has no rounds: %w", t.ID, wire.ErrInvalidRequest)
	}
	for i := len(t.Rounds) - 1; i >= 0; i-- {
		if t.Rounds[i].N == n {
			return &t.Rounds[i], nil
		}
	}
	last := currentRound(t)
	return nil, fmt.Errorf("%w: task %s has no round %d (its rounds are 1 to %d)", wire.ErrInvalidRequest, t.ID, n, last.N)
}

// roundEnded reports whether r's dispatch is over, so its output is (or is
// about to be) in storage.
func roundEnded(r *wire.Round) bool { return r.State.Terminal() || r.State == wire.StateNeedsInput }

// copyOutput writes the stored output of an ended round.
func (o *Orchestrator) copyOutput(ctx context.Context, r *wire.Round, w io.Writer) error {
	data, err := o.storedOutput(ctx, r)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// storedOutput reads r's stored output. A round that ran but whose output
// is not stored yet is waited for, up to logStoreWait after it ended; one
// that never started, or whose output never came, has none.
func (o *Orchestrator) storedOutput(ctx context.Context, r *wire.Round) ([]byte, error) {
	// A fork's copied round did not run again: its output is the
	// original dispatch's (gone once that task is removed).
	key := OutputKey(orDefault(r.CopiedFrom, r.DispatchID))
	for {
		rc, err := o.cfg.Store.Get(ctx, key)
		if err == nil {
			data, rerr := io.ReadAll(rc)
			rc.Close()
			if rerr != nil {
				return nil, fmt.Errorf("read output of %s: %w", r.DispatchID, rerr)
			}
			return data, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("read output of %s: %w", r.DispatchID, err)
		}
		ended := r.EndedAt
		if ended.IsZero() {
			ended = o.now()
		}
		if r.StartedAt.IsZero() || o.now().After(ended.Add(logStoreWait)) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(logPollInterval):
		}
	}
}

// followOutput writes dispatchID's live output until its round ends, then
// the stored output the live chunks did not carry.
func (o *Orchestrator) followOutput(ctx context.Context, taskID, dispatchID string, w io.Writer) error {
	live := &liveOutput{ready: make(chan struct{}, 1)}
	stop, err := o.cfg.Bus.SubscribeLogs(dispatchID, live.add)
	if err != nil {
		return err
	}
	defer stop()

	// ended receives the round once it has ended, or nil when the task is
	// removed.
	ended := make(chan *wire.Round, 1)
	var once sync.Once
	end := func(r *wire.Round) { once.Do(func() { ended <- r }) }
	check := func(t *wire.Task) {
		for i := range t.Rounds {
			if r := &t.Rounds[i]; r.DispatchID == dispatchID && roundEnded(r) {
				end(r)
			}
		}
	}
	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	err = o.store.tasks.Watch(watchCtx, func(key string, value []byte, _ uint64) {
		if key != taskID {
			return
		}
		if value == nil {
			end(nil)
			return
		}
		var t wire.Task
		if json.Unmarshal(value, &t) == nil {
			check(&t)
		}
	})
	if err != nil {
		return err
	}
	// The round may have ended between the first read and the watch.
	recheck := func() error {
		t, err := o.store.get(ctx, taskID)
		switch {
		case errors.Is(err, wire.ErrNotFound):
			end(nil)
		case err != nil:
			return err
		default:
			check(t)
		}
		return nil
	}
	if err := recheck(); err != nil {
		return err
	}
	ticker := time.NewTicker(logRecheck)
	defer ticker.Stop()

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
			if err := recheck(); err != nil && ctx.Err() == nil {
				o.log.Warn("read task while following its output", "task_id", taskID, "error", err)
			}
		case <-live.ready:
			if err := live.flush(w); err != nil {
				return err
			}
		case r := <-ended:
			stop()
			if err := live.flush(w); err != nil {
				return err
			}
			if r == nil {
				return fmt.Errorf("task %s was removed while its output was followed: %w", taskID, wire.ErrNotFound)
			}
			stored, err := o.storedOutput(ctx, r)
			if err != nil {
				return err
			}
			rest := unseenOutput(stored, live.total, live.tail)
			if len(rest) == 0 {
				return nil
			}
			_, err = w.Write(rest)
			return err
		}
	}
}

// liveOutput collects live chunks from the subscription's goroutine for
// the writer's.
type liveOutput struct {
	mu      sync.Mutex
	pending []byte
	ready   chan struct{}
	// Written by flush only (the writer's goroutine).
	total int64
	tail  []byte
}

func (l *liveOutput) add(chunk []byte) {
	l.mu.Lock()
	l.pending = append(l.pending, chunk...)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// flush writes what came since the last flush and remembers its end.
func (l *liveOutput) flush(w io.Writer) error {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(p) == 0 {
		return nil
	}
	l.total += int64(len(p))
	l.tail = append(l.tail, p...)
	if len(l.tail) > liveTailBytes {
		l.tail = append(l.tail[:0:0], l.tail[len(l.tail)-liveTailBytes:]...)
	}
	_, err := w.Write(p)
	return err
}

// unseenOutput is the part of stored after the live output a follower has
// written: total bytes in all, the last of them being tail. Pure.
//
// A follower that joined before the round printed anything has written
// stored's first total bytes, so the rest starts at total. One that joined
// later has written a stretch from the middle that ends at or after total;
// its end is found by searching for tail from there. Nothing found (the
// stored copy was cut at the log cap) gives nothing.
func unseenOutput(stored []byte, total int64, tail []byte) []byte {
	if total == 0 {
		return stored
	}
	from := total - int64(len(tail))
	if from < 0 || from > int64(len(stored)) {
		return nil
	}
	if total <= int64(len(stored)) && bytes.Equal(stored[from:total], tail) {
		return stored[total:]
	}
	i := bytes.Index(stored[from:], tail)
	if i < 0 {
		return nil
	}
	return stored[from+int64(i)+int64(len(tail)):]
}
