package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/wire"
)

// A watcher that stops reading is ended with ErrWatchLagged once it falls
// the hub's lag behind, and the others keep getting every change: one slow
// event stream holds nobody back. Before the shared watch each watcher had
// its own and was never ended.
func TestWatchLaggedEnds(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	o.hub.lag = 4
	ctx := t.Context()
	stuck := make(chan struct{})
	slowDone, slowReady, fastReady := make(chan error, 1), make(chan struct{}), make(chan struct{})
	go func() {
		slowDone <- o.WatchReady(ctx, func(wire.Change) {
			select {
			case <-stuck:
			case <-ctx.Done():
			}
		}, func() { close(slowReady) })
	}()
	// The reading watcher notes each task it has seen enqueued: the last
	// change of a submit. It may not see the change before (created): the
	// bucket keeps one revision a key, so a watch a moment behind is
	// handed the latest.
	var mu sync.Mutex
	enqueued := map[string]bool{}
	fastDone := make(chan error, 1)
	go func() {
		fastDone <- o.WatchReady(ctx, func(c wire.Change) {
			if c.Task == nil || len(c.Task.Rounds) == 0 || !c.Task.Rounds[len(c.Task.Rounds)-1].Enqueued {
				return
			}
			mu.Lock()
			enqueued[c.TaskID] = true
			mu.Unlock()
		}, func() { close(fastReady) })
	}()
	<-slowReady
	<-fastReady
	// One submit at a time, each waited for until the reading watcher has
	// seen it: at most two changes wait in its queue, under the lag of 4,
	// however slow the machine, while the stuck watcher's queue fills.
	const tasks = 10
	for i := range tasks {
		id := fmt.Sprintf("lag-%d", i)
		if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: id, Subagent: script("s", "true")}); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if err := testutil.Poll(ctx, time.Minute, 5*time.Millisecond, func() error {
			mu.Lock()
			defer mu.Unlock()
			if !enqueued[id] {
				return fmt.Errorf("the reading watcher has not seen %s enqueued (it saw %d tasks enqueued)", id, len(enqueued))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	close(stuck)
	select {
	case err := <-slowDone:
		if !errors.Is(err, ErrWatchLagged) {
			t.Errorf("the stuck watcher's WatchReady = %v, want ErrWatchLagged", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck watcher was not ended within 30 s of falling behind")
	}
	select {
	case err := <-fastDone:
		t.Errorf("the reading watcher ended: %v", err)
	default:
	}
}

// Follow hands each change with its JSON, the same bytes for every
// watcher, equal to the change encoded.
func TestFollowEncodesOnce(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a, b := Follow(ctx, o, nil, 16), Follow(ctx, o, nil, 16)
	<-a.Ready
	<-b.Ready
	if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: "enc-1", Subagent: script("s", "true")}); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	ca, cb := <-a.Changes, <-b.Changes
	want, err := json.Marshal(ca.Change)
	if err != nil {
		t.Fatal(err)
	}
	if string(ca.JSON) != string(want) {
		t.Errorf("JSON = %s, want %s", ca.JSON, want)
	}
	if len(ca.JSON) == 0 || &ca.JSON[0] != &cb.JSON[0] {
		t.Errorf("the two followers' JSON are not the same bytes: encoded twice")
	}
	cancel()
	<-a.Done
	<-b.Done
}

// A Follower whose reader does not read is dropped once its queue is full:
// Done says so at once, while its reader still does not read.
func TestFollowLagged(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	o.hub.lag = 3
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := Follow(ctx, o, nil, 0)
	<-f.Ready
	for i := range 3 {
		if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: fmt.Sprintf("flag-%d", i), Subagent: script("s", "true")}); err != nil {
			t.Fatalf("Submit: %v", err)
		}
	}
	select {
	case err := <-f.Done:
		if !errors.Is(err, ErrWatchLagged) {
			t.Errorf("Done = %v, want ErrWatchLagged", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a Follower 3 changes behind was not dropped within 30 s")
	}
}

// A submitter's watch is told of the removal of a task it owns, though it
// saw no change of that task itself (the shared watch did), and never of
// another owner's: the removal carries no task, so the hub remembers
// whose it was. Before, each watch kept the tasks it had seen, a map
// write per change per watcher, and missed this removal.
func TestFollowRemovalToOwner(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	alice, bob := WithIdentity(ctx, Identity{Name: "alice"}), WithIdentity(ctx, Identity{Name: "bob"})
	admin := Follow(ctx, o, nil, 0) // the operator's: the hub watches from here on
	<-admin.Ready
	if _, err := o.Submit(alice, wire.SubmitRequest{TaskID: "gone-1", Subagent: script("s", "true")}); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if _, err := o.Cancel(alice, "gone-1"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	// Its changes (created, marked enqueued, cancelled) through the hub
	// before the owners' watches start; the removal is the next.
	for range 3 {
		select {
		case <-admin.Changes:
		case <-time.After(30 * time.Second):
			t.Fatal("the operator's watch did not get the submitted task's changes within 30 s")
		}
	}
	a, b := Follow(alice, o, nil, 0), Follow(bob, o, nil, 0)
	<-a.Ready
	<-b.Ready
	if err := o.Remove(alice, "gone-1"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	var got *Followed
	for got == nil || !got.Removed {
		select {
		case got = <-a.Changes:
		case <-time.After(30 * time.Second):
			t.Fatal("the owner's watch was not told of the removal within 30 s")
		}
	}
	if got.TaskID != "gone-1" {
		t.Errorf("removal of %s, want gone-1", got.TaskID)
	}
	// The admin sees every change: once it has the removal, the hub has
	// handed it to every watcher it was for.
	for c := range admin.Changes {
		if c.Removed {
			break
		}
	}
	select {
	case c := <-b.Changes:
		t.Errorf("another owner's watch got %s (removed %v)", c.TaskID, c.Removed)
	default:
	}
}
