package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestTrustSnapshot: a snapshot is read only when it is of this format,
// of this very bucket, not from the future, and either young enough that
// no removal since can be forgotten or of an unchanged bucket.
func TestTrustSnapshot(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	created := now.Add(-48 * time.Hour)
	ttl := 30 * time.Minute
	good := snapshotMeta{Format: snapshotFormat, Bucket: TaskBucket, BucketCreated: created, Rev: 900, At: now.Add(-5 * time.Minute), Tasks: 10}
	bucket := bus.BucketState{Name: TaskBucket, Created: created, LastRev: 1000}
	for _, tt := range []struct {
		name   string
		change func(m *snapshotMeta, b *bus.BucketState)
		reason string // "" when trusted
	}{
		{"young, bucket changed since", func(*snapshotMeta, *bus.BucketState) {}, ""},
		{"just inside the age", func(m *snapshotMeta, _ *bus.BucketState) { m.At = now.Add(-20 * time.Minute) }, ""},
		{"too old, bucket changed since", func(m *snapshotMeta, _ *bus.BucketState) { m.At = now.Add(-21 * time.Minute) }, "too old"},
		{"old, bucket unchanged since", func(m *snapshotMeta, b *bus.BucketState) { m.At, b.LastRev = now.Add(-30*24*time.Hour), m.Rev }, ""},
		{"another format", func(m *snapshotMeta, _ *bus.BucketState) { m.Format = snapshotFormat + 1 }, "format"},
		{"another bucket", func(m *snapshotMeta, _ *bus.BucketState) { m.Bucket = "agora_other" }, "of bucket"},
		{"the bucket made again", func(_ *snapshotMeta, b *bus.BucketState) { b.Created = created.Add(time.Hour) }, "created"},
		{"revision from the future", func(m *snapshotMeta, _ *bus.BucketState) { m.Rev = 1001 }, "from the future"},
		{"revision from the future of an empty bucket", func(_ *snapshotMeta, b *bus.BucketState) { b.LastRev = 0 }, "from the future"},
		{"time from the future", func(m *snapshotMeta, _ *bus.BucketState) { m.At = now.Add(11 * time.Minute) }, "from the future"},
		{"a clock a little ahead", func(m *snapshotMeta, _ *bus.BucketState) { m.At = now.Add(time.Minute) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, b := good, bucket
			tt.change(&m, &b)
			err := trustSnapshot(m, b, now, ttl)
			switch {
			case tt.reason == "" && err != nil:
				t.Errorf("trustSnapshot = %v, want trusted", err)
			case tt.reason != "" && (err == nil || !strings.Contains(err.Error(), tt.reason)):
				t.Errorf("trustSnapshot = %v, want an error saying %q", err, tt.reason)
			}
		})
	}
}

// indexDump is everything a task cache answers with, as text: two caches
// with the same dump list, count, filter, expire and measure alike.
func indexDump(t *testing.T, c *taskCache, labels ...string) string {
	t.Helper()
	var b strings.Builder
	sel, counts, _ := c.pageTasks(taskFilter{}, nil, 1<<30)
	fmt.Fprintf(&b, "counts %v\n", counts)
	for _, s := range sel {
		view := "-"
		if s.open != nil {
			v, err := s.open.task()
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			view = fmt.Sprintf("%s %+v", data, *s.open)
		}
		fmt.Fprintf(&b, "%d %s %s\n", s.key.at, s.key.id, view)
	}
	c.eachStats(taskFilter{}, time.Time{}, func(s *TaskStats) {
		usage := "-"
		if s.Usage != nil {
			usage = fmt.Sprintf("%+v", *s.Usage)
		}
		fmt.Fprintf(&b, "stats %s %s %d %v %s %+v\n", s.State, s.Subagent, s.MaxRound, s.OpenQuestion, usage, s.Rounds)
	})
	fmt.Fprintf(&b, "ended %v\n", c.ended(time.Now().Add(time.Hour), 1<<30))
	for _, l := range labels {
		sel, _, _ := c.pageTasks(filterOf(wire.ListOptions{Label: l}), nil, 1<<30)
		fmt.Fprintf(&b, "label %s:", l)
		for _, s := range sel {
			fmt.Fprintf(&b, " %s", s.key.id)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "owner alice %v\n", c.ownerCounts("alice"))
	return b.String()
}

// scratchIndex is the index built from every task in the bucket.
func scratchIndex(t *testing.T, o *Orchestrator) *taskCache {
	t.Helper()
	c := newTaskCache(o.log)
	if err := o.store.tasks.Each(t.Context(), func(id string, value []byte, rev uint64) error { c.put(id, value, rev); return nil }); err != nil {
		t.Fatal(err)
	}
	c.setReady(true)
	return c
}

// snapshotStarter gives a bus and starts orchestrators, each stopped in t.Cleanup, on one
// bus and store (the second start reads what the first saved); snapshots
// are saved at start and stop, and then only every MaxIndexSnapshotEvery.
func snapshotStarter(t *testing.T) (*bus.Bus, func() *Orchestrator) {
	b, st := bustest.Bus(t), storagetest.FileStore(t)
	return b, func() *Orchestrator {
		o, err := New(Config{Bus: b, Store: st, Logger: natstest.Logger(t), IndexSnapshotEvery: MaxIndexSnapshotEvery})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Stop(context.Background()) })
		return o
	}
}

// TestStartFromSnapshot: a start from the snapshot and the changes made
// after it (tasks added, changed, removed) has the very index a start
// from every task in the bucket has; a snapshot cut short is not read,
// and the start builds the same index from the bucket.
func TestStartFromSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, start := snapshotStarter(t)
	o := start()
	if o.indexFrom != 0 {
		t.Fatalf("the first start read a snapshot (revision %d)", o.indexFrom)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	states := []wire.State{wire.StateQueued, wire.StateRunning, wire.StateNeedsInput, wire.StateFinished, wire.StateFailed, wire.StateCancelled}
	for i := range 30 {
		storeTask(t, o, fmt.Sprintf("snap-%02d", i), states[i%len(states)], base.Add(time.Duration(i)*time.Minute),
			map[string]string{"batch": fmt.Sprintf("b%d", i%3)})
	}
	defaultX := "x"
	// One task with usage, an owner and a question with a default.
	used := &wire.Task{ID: "snap-used", Owner: "alice", State: wire.StateFinished, CreatedAt: base.Add(-time.Hour), UpdatedAt: base,
		Request: wire.SubmitRequest{TaskID: "snap-used", Subagent: script("user", "true")},
		Rounds: []wire.Round{{N: 1, Attempt: 1, State: wire.StateFinished, QueuedAt: base, StartedAt: base.Add(time.Second), EndedAt: base.Add(time.Minute),
			Question: &schemas.NeedsInput{Question: "q", Default: &defaultX}, Answer: &wire.Answer{Value: "x", WaitMS: 1234},
			Usage: &schemas.Usage{Turns: 3, CostUSD: 0.25, InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 7}}}}
	if err := o.store.create(ctx, used); err != nil {
		t.Fatal(err)
	}
	// Once the watch has handed over every write, a snapshot covers them
	// all, and a second with nothing changed is not written.
	if err := testutil.Poll(ctx, 10*time.Second, 20*time.Millisecond, func() error {
		st, err := o.store.tasks.State(ctx)
		if err != nil {
			return err
		}
		if got := o.store.cache.delivered.Load(); got != st.LastRev {
			return fmt.Errorf("the watch handed over revision %d of %d", got, st.LastRev)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Poll(ctx, 10*time.Second, 20*time.Millisecond, func() error {
		_, err := o.writeSnapshot(ctx)
		if err == nil && o.snapshotRev.Load() != o.store.cache.delivered.Load() {
			err = errors.New("no snapshot of the last revision yet")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if wrote, err := o.writeSnapshot(ctx); wrote || err != nil {
		t.Errorf("a second writeSnapshot with nothing changed = %v, %v; want no write", wrote, err)
	}
	// Stopped, it saves no other snapshot: nothing changed since.
	if err := o.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Changes after the snapshot (made while no orchestrator runs, so no
	// snapshot covers them): added, changed, removed.
	storeTask(t, o, "snap-new", wire.StateQueued, base.Add(time.Hour), map[string]string{"batch": "b9"})
	storeTask(t, o, "snap-old", wire.StateFinished, base.Add(-2*time.Hour), map[string]string{"batch": "b0"})
	for _, id := range []string{"snap-03", "snap-10"} {
		if err := o.store.tasks.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.store.update(ctx, "snap-00", func(task *wire.Task) error {
		task.State, task.Rounds[0].State, task.Rounds[0].EndedAt, task.UpdatedAt = wire.StateFinished, wire.StateFinished, base.Add(time.Hour), base.Add(time.Hour)
		task.Request.Labels = map[string]string{"batch": "b7"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	labels := []string{"batch=b0", "batch=b1", "batch=b2", "batch=b7", "batch=b9"}

	again := start()
	if again.indexFrom == 0 {
		t.Fatalf("the second start did not read the snapshot: %v", again.indexWhy)
	}
	if st, err := again.store.tasks.State(ctx); err != nil || again.indexFrom >= st.LastRev {
		t.Fatalf("the snapshot read covers revision %d, the bucket's last is %d (%v): the changes since are not exercised", again.indexFrom, st.LastRev, err)
	}
	if got, want := indexDump(t, again.store.cache, labels...), indexDump(t, scratchIndex(t, again), labels...); got != want {
		t.Errorf("the index started from the snapshot and the changes since is not the one built from the bucket:\n%s\nwant\n%s", got, want)
	}
	if err := again.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// The snapshot cut short: a chunk gone.
	kv, err := b.KeyValueMarkers(ctx, TaskIndexBucket, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := again.snapshots.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != TaskIndexKey {
			if err := kv.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	third := start()
	if third.indexFrom != 0 || !errors.Is(third.indexWhy, bus.ErrChunksBroken) {
		t.Fatalf("a start with the snapshot cut short read from revision %d (%v), want the whole bucket read for ErrChunksBroken", third.indexFrom, third.indexWhy)
	}
	if got, want := indexDump(t, third.store.cache, labels...), indexDump(t, scratchIndex(t, third), labels...); got != want {
		t.Errorf("the index rebuilt past a broken snapshot differs from the bucket's:\n%s\nwant\n%s", got, want)
	}
}

// TestSnapshotEncoding: every field of an entry survives the encoding.
func TestSnapshotEncoding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 12, 0, 0, 123, time.UTC)
	var entries []newTask
	for i, state := range []wire.State{wire.StateQueued, wire.StateNeedsInput, wire.StateFinished, "paused"} {
		task := wire.Task{ID: fmt.Sprintf("t%d", i), Owner: "o", State: state, CreatedAt: at.Add(time.Duration(i) * time.Hour), UpdatedAt: at,
			Request: wire.SubmitRequest{Subagent: script("enc", "true"), Labels: map[string]string{"k": "v", "i": fmt.Sprint(i)}},
			Rounds: []wire.Round{{N: 1, State: state, QueuedAt: at, StartedAt: at.Add(time.Second), EndedAt: at.Add(time.Minute),
				Usage: &schemas.Usage{Turns: i, CostUSD: 1.5, InputTokens: -1, OutputTokens: 1 << 40}}}}
		if state == wire.StateNeedsInput {
			task.Rounds[0].Question = &schemas.NeedsInput{Question: "which?", Options: []string{"a"}}
		}
		value, err := json.Marshal(&task)
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEntry(task.ID, value, uint64(10+i))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	a := newTaskCache(nil)
	a.restore(entries, 1)
	a.setReady(true)
	cp, _, ok := a.capture()
	if !ok {
		t.Fatal("capture of a ready cache: not ok")
	}
	data, err := encodeSnapshot(cp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapshot(data, len(entries))
	if err != nil {
		t.Fatal(err)
	}
	b := newTaskCache(nil)
	b.restore(got, 1)
	b.setReady(true)
	if x, y := indexDump(t, a, "k=v", "i=2"), indexDump(t, b, "k=v", "i=2"); x != y {
		t.Errorf("decoded index:\n%s\nwant\n%s", y, x)
	}
	for _, n := range []int{len(entries) - 1, len(entries) + 1} {
		if _, err := decodeSnapshot(data, n); err == nil {
			t.Errorf("decodeSnapshot of %d entries as %d: no error", len(entries), n)
		}
	}
	if _, err := decodeSnapshot(data[:len(data)/2], len(entries)); err == nil {
		t.Error("decodeSnapshot of half the data: no error")
	}
}

// TestSnapshotAtStop: a stopping orchestrator saves the index covering
// the bucket's last revision, so the next start reads the snapshot and no
// change after it — however long the stop (TestTrustSnapshot: an
// unchanged bucket's snapshot is read at any age).
func TestSnapshotAtStop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, start := snapshotStarter(t)
	o := start()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		storeTask(t, o, fmt.Sprintf("stop-%d", i), wire.StateFinished, base.Add(time.Duration(i)*time.Minute), nil)
	}
	if err := testutil.Poll(ctx, 10*time.Second, 10*time.Millisecond, func() error {
		if sel, _, _ := o.store.cache.pageTasks(taskFilter{}, nil, 10); len(sel) != 5 {
			return fmt.Errorf("the cache lists %d of 5 tasks", len(sel))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := o.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	state, err := o.store.tasks.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again := start()
	if again.indexFrom != state.LastRev {
		t.Errorf("the start after a stop read from revision %d (%v), want the snapshot saved at stop, at the bucket's last %d", again.indexFrom, again.indexWhy, state.LastRev)
	}
}

// crashFixture runs orchestrators on one NATS server and store, each on
// a connection of its own that a test can close as a crash would.
type crashFixture struct {
	t   *testing.T
	srv *natsserver.Server
	st  storage.Store
}

func newCrashFixture(t *testing.T) *crashFixture {
	return &crashFixture{t: t, srv: natstest.Start(t), st: storagetest.FileStore(t)}
}

func (f *crashFixture) connect(name string) *bus.Bus {
	b, err := bus.Connect(f.t.Context(), f.srv.ClientURL(), bus.Options{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(b.Close)
	return b
}

func (f *crashFixture) start(b *bus.Bus, every time.Duration) *Orchestrator {
	o, err := New(Config{Bus: b, Store: f.st, Logger: natstest.Logger(f.t), IndexSnapshotEvery: every})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := o.Start(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = o.Stop(context.Background()) })
	return o
}

// savedThenCrashed stores twelve tasks named prefix-00…11 through an
// orchestrator saving its index every 20 ms, waits for a periodic save
// covering them all, and closes its connection: the crash (its Stop in
// t.Cleanup finds no connection to save through). It returns the save.
func (f *crashFixture) savedThenCrashed(prefix string) snapshotMeta {
	t, ctx := f.t, f.t.Context()
	crashing := f.connect("crashing")
	o := f.start(crashing, 20*time.Millisecond)
	states := []wire.State{wire.StateQueued, wire.StateRunning, wire.StateNeedsInput, wire.StateFinished, wire.StateFailed, wire.StateCancelled}
	for i := range 12 {
		storeTask(t, o, fmt.Sprintf("%s-%02d", prefix, i), states[i%len(states)], crashBase.Add(time.Duration(i)*time.Minute),
			map[string]string{"batch": fmt.Sprintf("b%d", i%3)})
	}
	var saved snapshotMeta
	if err := testutil.Poll(ctx, 20*time.Second, 10*time.Millisecond, func() error {
		b, err := o.store.tasks.State(ctx)
		if err != nil {
			return err
		}
		raw, _, err := o.snapshots.Get(ctx)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &saved); err != nil {
			return err
		}
		if saved.Rev != b.LastRev {
			return fmt.Errorf("the snapshot covers revision %d of %d", saved.Rev, b.LastRev)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	crashing.Close()
	return saved
}

// crashBase is when the crash fixtures' tasks were created.
var crashBase = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// changedWhileDown opens the tasks bucket apart from any orchestrator and
// adds prefix-new, moves prefix-00 and prefix-02 to finished with the
// label batch=b7, and removes removed.
func (f *crashFixture) changedWhileDown(prefix string, removed ...string) {
	t, ctx := f.t, f.t.Context()
	changer, err := openStore(ctx, f.connect("changer"), MarkerTTL, natstest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	storeTaskIn(t, changer, prefix+"-new", wire.StateQueued, crashBase.Add(time.Hour), map[string]string{"batch": "b9"})
	for _, id := range removed {
		if err := changer.tasks.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{prefix + "-00", prefix + "-02"} {
		if _, err := changer.update(ctx, id, func(task *wire.Task) error {
			task.State, task.Rounds[0].State, task.Rounds[0].EndedAt, task.UpdatedAt = wire.StateFinished, wire.StateFinished, crashBase.Add(time.Hour), crashBase.Add(time.Hour)
			task.Request.Labels = map[string]string{"batch": "b7"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// sameAsFromScratch fails t unless o's index is the one built from every
// task, holds prefix-new and the relabelled tasks, and none of removed.
func sameAsFromScratch(t *testing.T, o *Orchestrator, prefix string, removed ...string) {
	t.Helper()
	if !o.store.cache.current() {
		t.Fatal("the index is not in use after the start")
	}
	labels := []string{"batch=b0", "batch=b1", "batch=b2", "batch=b7", "batch=b9"}
	got := indexDump(t, o.store.cache, labels...)
	if want := indexDump(t, scratchIndex(t, o), labels...); got != want {
		t.Errorf("the index from the snapshot and the changes since is not the one built from the bucket:\n%s\nwant\n%s", got, want)
	}
	for _, want := range []string{prefix + "-new", fmt.Sprintf("label batch=b7: %s-02 %s-00\n", prefix, prefix)} {
		if !strings.Contains(got, want) {
			t.Errorf("the index misses %q:\n%s", want, got)
		}
	}
	for _, gone := range removed {
		if strings.Contains(got, gone) {
			t.Errorf("the index still has %s, removed after the snapshot:\n%s", gone, got)
		}
	}
}

// TestStartAfterCrash: an orchestrator that never stops — its process
// killed: its connection gone, no save at stop — leaves its last
// periodic snapshot, and the next start reads it and the changes made
// after it (tasks added, changed and removed while no orchestrator ran)
// and has the very index a start from every task in the bucket has.
func TestStartAfterCrash(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	saved := f.savedThenCrashed("crash")
	removed := []string{"crash-01", "crash-03"}
	f.changedWhileDown("crash", removed...)
	again := f.start(f.connect("next"), MaxIndexSnapshotEvery)
	if again.indexFrom != saved.Rev {
		t.Fatalf("the start after the crash read from revision %d (%v), want the periodic snapshot's %d", again.indexFrom, again.indexWhy, saved.Rev)
	}
	sameAsFromScratch(t, again, "crash", removed...)
}
