package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestRetentionExpiresOnlyEnded: a sweep after the retention removes an
// ended task's record, outputs and index entries, and its place in the
// listing; a running task and one waiting for an answer, however old, and a
// recently ended one stay, with their outputs.
func TestRetentionExpiresOnlyEnded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, st := bustest.Bus(t), storagetest.FileStore(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := base
	o, err := New(Config{Bus: b, Store: st, Logger: natstest.Logger(t), Retention: time.Hour,
		RetentionSweep: time.Hour, // the test sweeps itself
		Now:            func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })

	old := base.Add(-3 * time.Hour)
	tasks := []struct {
		id     string
		state  wire.State
		update time.Time
		expire bool
	}{
		{"old-finished", wire.StateFinished, old, true},
		{"old-failed", wire.StateFailed, old, true},
		{"old-cancelled", wire.StateCancelled, old, true},
		{"old-running", wire.StateRunning, old, false},
		{"old-needs-input", wire.StateNeedsInput, old, false},
		{"old-queued", wire.StateQueued, old, false},
		{"new-finished", wire.StateFinished, base.Add(-10 * time.Minute), false},
	}
	for _, tc := range tasks {
		d := tc.id + "-r1"
		round := wire.Round{N: 1, DispatchID: d, State: tc.state, QueuedAt: old, Enqueued: true}
		if tc.state == wire.StateNeedsInput {
			round.Question = &schemas.NeedsInput{Question: "Pick a colour?"}
			round.State = wire.StateNeedsInput
		}
		task := &wire.Task{ID: tc.id, State: tc.state, CreatedAt: old, UpdatedAt: tc.update, Rounds: []wire.Round{round}}
		if err := o.store.create(ctx, task); err != nil {
			t.Fatal(err)
		}
		if _, err := o.store.index.Put(ctx, d, []byte(tc.id)); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, schemas.DispatchKey(d, schemas.DispatchOutput), strings.NewReader("output of "+tc.id)); err != nil {
			t.Fatal(err)
		}
	}

	res, err := o.ExpireTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3; res.Expired != want || res.More {
		t.Errorf("sweep: %+v, want %d expired and no more", res, want)
	}
	page, err := o.List(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, task := range page.Tasks {
		listed[task.ID] = true
	}
	for _, tc := range tasks {
		d := tc.id + "-r1"
		_, err := o.store.get(ctx, tc.id)
		gone := errors.Is(err, wire.ErrNotFound)
		if err != nil && !gone {
			t.Fatal(err)
		}
		_, _, ierr := o.store.index.Get(ctx, d)
		indexGone := errors.Is(ierr, bus.ErrKeyNotFound)
		_, serr := st.Stat(ctx, schemas.DispatchKey(d, schemas.DispatchOutput))
		outputGone := errors.Is(serr, storage.ErrNotFound)
		if gone != tc.expire || indexGone != tc.expire || outputGone != tc.expire || listed[tc.id] == tc.expire {
			t.Errorf("%s (%s): record gone %v, index entry gone %v, output gone %v, listed %v; want removed=%v",
				tc.id, tc.state, gone, indexGone, outputGone, listed[tc.id], tc.expire)
		}
	}

	// An hour later the recently ended one is due too; the open ones never.
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if res, err := o.ExpireTasks(ctx); err != nil || res.Expired != 1 {
		t.Errorf("second sweep: %+v, %v; want the one newly due task expired", res, err)
	}
	if _, err := o.Get(ctx, "new-finished"); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("new-finished after its retention: %v, want not found", err)
	}
	for _, id := range []string{"old-running", "old-needs-input", "old-queued"} {
		if _, err := o.Get(ctx, id); err != nil {
			t.Errorf("%s after two sweeps: %v", id, err)
		}
	}
}

// TestRetentionConfig: a retention out of bounds is refused with the
// bound it broke; zero takes the default.
func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   time.Duration
		want string // "" for accepted
	}{
		{0, ""},
		{time.Minute, ""},
		{MaxRetention, ""},
		{-time.Hour, "negative"},
		{30 * time.Second, "under the minimum of 1m0s"},
		{MaxRetention + time.Hour, "over the maximum of 8760h0m0s"},
	} {
		err := CheckRetention(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckRetention(%s) = %v, want accepted", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckRetention(%s) = %v, want an error saying %q", tc.in, err, tc.want)
		}
		if tc.want != "" {
			if _, err := New(Config{Bus: &bus.Bus{}, Retention: tc.in}); err == nil || !strings.Contains(err.Error(), "retention") {
				t.Errorf("New with retention %s: %v, want a retention error", tc.in, err)
			}
		}
	}
	o, err := New(Config{Bus: &bus.Bus{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.retention(); got != DefaultRetention {
		t.Errorf("default retention %s, want %s", got, DefaultRetention)
	}
}

// TestTaskCacheDropsInBulk: removals only mark entries until an eighth of
// the order is dropped; listings, counts and stats never show a dropped
// one, and the order is compacted.
func TestTaskCacheDropsInBulk(t *testing.T) {
	c := newTaskCache(natstest.Logger(t))
	c.setReady(true)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 1000
	for i := range n {
		data, _ := json.Marshal(wire.Task{ID: fmt.Sprintf("t%04d", i), State: wire.StateFinished,
			CreatedAt: base.Add(time.Duration(i) * time.Second), UpdatedAt: base.Add(time.Duration(i) * time.Second)})
		c.put(fmt.Sprintf("t%04d", i), data, uint64(i+1))
	}
	for i := 0; i < n; i += 2 { // every other one, oldest first, as retention does
		c.remove(fmt.Sprintf("t%04d", i), 0)
		if i == 100 && len(c.order) != n {
			t.Errorf("after 51 removals the order holds %d, want %d (not yet compacted)", len(c.order), n)
		}
	}
	if len(c.order) >= n || c.dropped > len(c.order)/8+1 {
		t.Errorf("after %d removals: order %d, dropped %d; want it compacted", n/2, len(c.order), c.dropped)
	}
	sel, counts, _ := c.pageTasks(taskFilter{}, nil, 100)
	if len(sel) != 100 || sel[0].key.id != fmt.Sprintf("t%04d", n-1) || counts[wire.StateFinished] != n/2 {
		t.Fatalf("first page: %d tasks from %q, %v finished; want %d from t%04d, %d", len(sel), sel[0].key.id, counts[wire.StateFinished], 100, n-1, n/2)
	}
	for _, s := range sel {
		if _, err := fmt.Sscanf(s.key.id, "t%d", new(int)); err != nil || c.byID[s.key.id] == nil {
			t.Errorf("listed %q, which was removed", s.key.id)
		}
	}
	stats := 0
	c.eachStats(taskFilter{}, time.Time{}, func(*TaskStats) { stats++ })
	if ended := c.ended(base.Add(time.Hour), n); stats != n/2 || len(ended) != n/2 {
		t.Errorf("stats of %d tasks, %d ended; want %d each", stats, len(ended), n/2)
	}
}
