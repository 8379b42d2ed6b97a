package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestTaskCacheOrdering(t *testing.T) {
	c := newTaskCache(natstest.Logger(t))
	value := func(state wire.State) []byte {
		data, _ := json.Marshal(wire.Task{ID: "t", State: state})
		return data
	}
	count := func() (n int, state wire.State) {
		sel, _, _ := c.pageTasks(taskFilter{}, nil, wire.MaxPageLimit)
		for _, s := range sel {
			n++
			state = c.byID[s.key.id].state()
		}
		return n, state
	}
	if c.current() {
		t.Fatal("a cache that has not caught up claims to be current")
	}
	c.setReady(true)
	c.put("t", value(wire.StateRunning), 5)
	c.put("t", value(wire.StateQueued), 4) // older, arriving late
	if n, s := count(); n != 1 || s != wire.StateRunning {
		t.Errorf("after an older value: %d tasks, %s; want the newer running", n, s)
	}
	c.remove("t", 0)
	c.put("t", value(wire.StateRunning), 5) // the watch delivering what was removed
	if n, _ := count(); n != 0 || len(c.counts) != 0 || len(c.open) != 0 {
		t.Errorf("a removed task came back with an older value: %d listed, counts %v, %d open", n, c.counts, len(c.open))
	}
	c.put("t", value(wire.StateQueued), 9) // the same id submitted again
	if n, s := count(); n != 1 || s != wire.StateQueued {
		t.Errorf("a task submitted again after removal: %d tasks, %s", n, s)
	}
	c.put("t", value(wire.StateFinished), 10) // it ends: out of the open set
	if n, s := count(); n != 1 || s != wire.StateFinished || len(c.open) != 0 || c.byID["t"].open != nil {
		t.Errorf("a finished task: %d tasks, %s, %d open, body kept %v", n, s, len(c.open), c.byID["t"].open != nil)
	}
	c.put("u", value(wire.StateQueued), 12)
	c.put("t", []byte("not json"), 11)
	if !c.current() {
		t.Error("one task that does not decode made the whole cache untrusted")
	}
	if n, s := count(); n != 1 || s != wire.StateQueued {
		t.Errorf("after a bad record: %d tasks, %s; want only the other task", n, s)
	}
}

// A revision the cache holds already — this process's own write, put by
// the store, coming back on the cache's watch — is not decoded again: a
// value that would not decode shows it.
func TestTaskCacheSkipsHeldRevision(t *testing.T) {
	c := newTaskCache(natstest.Logger(t))
	c.setReady(true)
	data, _ := json.Marshal(wire.Task{ID: "t", State: wire.StateQueued})
	c.put("t", data, 5)
	c.remove("u", 7)
	for _, tc := range []struct {
		id      string
		rev     uint64
		decoded bool
	}{{"t", 4, false}, {"t", 5, false}, {"u", 7, false}, {"t", 6, true}, {"u", 8, true}} {
		err := c.load(tc.id, []byte("not json"), tc.rev)
		if decoded := err != nil; decoded != tc.decoded {
			t.Errorf("load(%s, rev %d) = %v: decoded %v, want %v", tc.id, tc.rev, err, decoded, tc.decoded)
		}
	}
}

// TestTaskCacheOrder: the bucket arrives in the order of its last writes;
// the cache lists by creation (then id), newest first, whatever the order
// of arrival, before and after catching up.
func TestTaskCacheOrder(t *testing.T) {
	c := newTaskCache(natstest.Logger(t))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(id string, minute int, state wire.State, rev uint64) {
		data, _ := json.Marshal(wire.Task{ID: id, State: state, CreatedAt: base.Add(time.Duration(minute) * time.Minute)})
		c.put(id, data, rev)
	}
	list := func() string {
		sel, _, _ := c.pageTasks(taskFilter{}, nil, wire.MaxPageLimit)
		var ids []string
		for _, s := range sel {
			ids = append(ids, s.key.id)
		}
		return strings.Join(ids, ",")
	}
	put("c", 3, wire.StateFinished, 1)
	put("a", 1, wire.StateFinished, 2)
	put("d", 3, wire.StateQueued, 3) // same minute as c: the id decides
	put("b", 2, wire.StateFinished, 4)
	put("a", 1, wire.StateRunning, 5) // an update keeps its place
	c.setReady(true)
	if got := list(); got != "d,c,b,a" {
		t.Errorf("after catching up: %s, want d,c,b,a", got)
	}
	put("e", 9, wire.StateQueued, 6)
	put("bb", 2, wire.StateQueued, 7) // created back then by another replica's clock
	c.remove("c", 0)
	put("b", 2, wire.StateCancelled, 8)
	if got := list(); got != "e,d,bb,b,a" {
		t.Errorf("after changes: %s, want e,d,bb,b,a", got)
	}
	if want := map[wire.State]int{wire.StateQueued: 3, wire.StateCancelled: 1, wire.StateRunning: 1}; !mapsEqual(c.counts, want) {
		t.Errorf("counts = %v, want %v", c.counts, want)
	}
}

// newListingOrchestrator starts an orchestrator on a fresh embedded NATS
// server, with no runner (rounds stay queued), and waits until its task
// cache has caught up.
func newListingOrchestrator(t *testing.T) *Orchestrator {
	t.Helper()
	o, err := New(Config{Bus: bustest.Bus(t), Store: storagetest.FileStore(t), Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	if !o.store.cache.current() {
		t.Fatal("the task cache has not caught up when Start returns")
	}
	return o
}

// storeTask writes a task in state as Submit and apply would leave it,
// created at created, with a large input and (when it asked) a large
// partial_state.
func storeTask(t *testing.T, o *Orchestrator, id string, state wire.State, created time.Time, labels map[string]string) {
	t.Helper()
	storeTaskIn(t, o.store, id, state, created, labels)
}

// storeTaskIn is storeTask through a store of its own.
func storeTaskIn(t *testing.T, s *store, id string, state wire.State, created time.Time, labels map[string]string) {
	t.Helper()
	big := strings.Repeat("x", 64<<10)
	req := wire.SubmitRequest{TaskID: id, Subagent: script("lister", "true"), Labels: labels,
		Input: json.RawMessage(`{"blob":"` + big + `"}`)}
	task := &wire.Task{ID: id, Request: req, SubagentHash: subagentHash(req), State: state, CreatedAt: created, UpdatedAt: created}
	r := wire.Round{N: 1, Attempt: 1, DispatchID: dispatchIDOf(task, 1, 1), State: state, QueuedAt: created, Enqueued: true}
	if state != wire.StateQueued {
		r.StartedAt = created.Add(time.Second)
	}
	switch state {
	case wire.StateNeedsInput:
		r.EndedAt, r.AskedAt = created.Add(2*time.Second), created.Add(2*time.Second)
		r.StepDeadline = created.Add(24 * time.Hour)
		r.Question = &schemas.NeedsInput{Question: "Which? " + id, Options: []string{"a", "b"}, Context: "ctx",
			PartialState: json.RawMessage(`{"notes":"` + big + `"}`)}
	case wire.StateFinished, wire.StateFailed, wire.StateCancelled, wire.StateExpired:
		r.EndedAt = created.Add(3 * time.Second)
		task.Outcome = &wire.Outcome{Reason: string(state), Detail: "round 1 " + string(state)}
	}
	task.Rounds = []wire.Round{r}
	if err := s.create(t.Context(), task); err != nil {
		t.Fatal(err)
	}
}

// TestTaskCacheKeepsTerminalTasksOut: an ended task is only an index entry
// in memory, yet List still shows it, filters it by state and label,
// counts it, and reads its body from the bucket — in the list view,
// without the input and partial_state that Get still has.
func TestTaskCacheKeepsTerminalTasksOut(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx := t.Context()
	base := time.Now().UTC().Add(-time.Hour)
	states := []wire.State{wire.StateFinished, wire.StateQueued, wire.StateFailed, wire.StateNeedsInput, wire.StateRunning, wire.StateCancelled, wire.StateExpired, wire.StateFinished}
	for i, st := range states {
		storeTask(t, o, fmt.Sprintf("k-%d", i), st, base.Add(time.Duration(i)*time.Minute), map[string]string{"batch": fmt.Sprint(i % 2)})
	}

	c := o.store.cache
	c.mu.RLock()
	for id, e := range c.byID {
		if open := !e.state().Terminal(); open != (e.open != nil) || open != (c.open[id] != nil) {
			t.Errorf("cache entry %s (%s): body kept %v, in the open set %v; want both %v", id, e.state(), e.open != nil, c.open[id] != nil, open)
		}
		if e.open == nil {
			continue
		}
		if v, err := e.open.task(); err != nil || len(v.Request.Input) > 0 || v.Rounds[0].Question != nil && len(v.Rounds[0].Question.PartialState) > 0 {
			t.Errorf("cache entry %s holds the input or partial_state (or its view does not decode: %v)", id, err)
		}
	}
	c.mu.RUnlock()

	ids := func(tasks []*wire.Task) []string {
		var out []string
		for _, t := range tasks {
			out = append(out, t.ID)
		}
		return out
	}
	wantCounts := map[wire.State]int{wire.StateFinished: 2, wire.StateQueued: 1, wire.StateFailed: 1, wire.StateNeedsInput: 1, wire.StateRunning: 1, wire.StateCancelled: 1, wire.StateExpired: 1}
	for _, tt := range []struct {
		opts wire.ListOptions
		want []string
	}{
		{wire.ListOptions{}, []string{"k-7", "k-6", "k-5", "k-4", "k-3", "k-2", "k-1", "k-0"}},
		{wire.ListOptions{State: wire.StateFinished}, []string{"k-7", "k-0"}},
		{wire.ListOptions{Label: "batch=1"}, []string{"k-7", "k-5", "k-3", "k-1"}},
		{wire.ListOptions{State: wire.StateFailed, Label: "batch=0"}, []string{"k-2"}},
		{wire.ListOptions{State: wire.StateFailed, Label: "batch=1"}, nil},
		{wire.ListOptions{Label: "nobatch=1"}, nil},
	} {
		page, err := o.List(ctx, tt.opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", tt.opts, err)
		}
		if got := ids(page.Tasks); !slices.Equal(got, tt.want) || page.NextCursor != "" {
			t.Errorf("List(%+v) = %v, next %q; want %v and no next page", tt.opts, got, page.NextCursor, tt.want)
		}
		if !mapsEqual(page.Summary.Counts, wantCounts) {
			t.Errorf("List(%+v) counts = %v, want %v (every task, whatever the filters)", tt.opts, page.Summary.Counts, wantCounts)
		}
		for _, task := range page.Tasks {
			if len(task.Request.Input) > 0 {
				t.Errorf("List: %s carries its input in the list view", task.ID)
			}
			if q := task.Rounds[0].Question; q != nil && (len(q.PartialState) > 0 || q.Question == "") {
				t.Errorf("List: %s's question in the list view = %+v; want the question without partial_state", task.ID, q)
			}
			if task.Attention.Kind == "" || task.Revision == 0 {
				t.Errorf("List: %s has no attention or revision: %+v", task.ID, task.Attention)
			}
		}
	}
	full, err := o.Get(ctx, "k-3")
	if err != nil || len(full.Request.Input) < 64<<10 || len(full.Rounds[0].Question.PartialState) < 64<<10 {
		t.Errorf("Get(k-3) lacks its input or partial_state: %v", err)
	}

	// A terminal task removed, or changed so that it no longer matches,
	// behind the index is left out of its page, not an error.
	got, err := o.readPage(ctx, []selected{{key: sortKey{id: "k-gone"}}, {key: sortKey{id: "k-2"}}, {key: sortKey{id: "k-0"}}},
		taskFilter{state: wire.StateFinished})
	if err != nil || !slices.Equal(ids(got), []string{"k-0"}) {
		t.Errorf("readPage of a removed, a failed and a finished task for state=finished = %v, %v; want k-0", ids(got), err)
	}

	// Metrics read every task's stats from the index, terminal ones too.
	n, rounds, ended := 0, 0, 0
	if err := o.EachTaskStats(ctx, func(s *TaskStats) {
		n++
		rounds += len(s.Rounds)
		if s.State.Terminal() && s.Rounds[0].Ended && s.Rounds[0].Ran == 2*time.Second {
			ended++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(states) || rounds != n || ended != 5 {
		t.Errorf("EachTaskStats: %d tasks, %d rounds, %d ended after 2s; want %d tasks of one round, 5 ended", n, rounds, ended, len(states))
	}

	// Without the cache (the watch lost), listing reads the bucket and
	// answers the same.
	o.store.cache.setReady(false)
	defer o.store.cache.setReady(true)
	page, err := o.List(ctx, wire.ListOptions{Label: "batch=1"})
	if got := ids(page.Tasks); err != nil || !slices.Equal(got, []string{"k-7", "k-5", "k-3", "k-1"}) {
		t.Errorf("List from the bucket = %v, %v", got, err)
	}
}

func mapsEqual(a, b map[wire.State]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestListPages: a walk by cursor returns every task exactly once, newest
// first, while tasks are submitted and removed between pages; limits are
// bounded; a cursor of another list, or none at all, is refused.
func TestListPages(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx := t.Context()
	base := time.Now().UTC().Add(-time.Hour)
	const n = 23
	for i := range n {
		st := wire.StateFinished
		if i%4 == 0 {
			st = wire.StateQueued
		}
		// Pairs share a created_at: the id breaks the tie.
		storeTask(t, o, fmt.Sprintf("p-%02d", i), st, base.Add(time.Duration(i/2)*time.Second), nil)
	}
	seen := map[string]int{}
	var order []string
	cursor, pages := "", 0
	for {
		page, err := o.List(ctx, wire.ListOptions{Limit: 5, Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if len(page.Tasks) > 5 {
			t.Fatalf("page %d has %d tasks, limit 5", pages, len(page.Tasks))
		}
		for _, task := range page.Tasks {
			seen[task.ID]++
			order = append(order, task.ID)
		}
		// Between pages: a new task (newest, so never on a later page) and
		// one an earlier page showed removed.
		storeTask(t, o, fmt.Sprintf("new-%d", pages), wire.StateQueued, time.Now().UTC(), nil)
		if pages == 2 {
			if err := o.Remove(ctx, order[0]); err != nil {
				t.Fatal(err)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
		if pages > 10 {
			t.Fatal("more than 10 pages of 5 for 23 tasks")
		}
	}
	if pages != 5 {
		t.Errorf("%d pages of at most 5 for %d tasks; want 5", pages, n)
	}
	for i := range n {
		if id := fmt.Sprintf("p-%02d", i); seen[id] != 1 {
			t.Errorf("%s listed %d times, want once", id, seen[id])
		}
	}
	for id := range seen {
		if strings.HasPrefix(id, "new-") {
			t.Errorf("%s, submitted after the walk began, showed on a later page", id)
		}
	}
	want := slices.Clone(order)
	slices.SortFunc(want, func(a, b string) int { return -strings.Compare(a, b) }) // newest first, then id
	if !slices.Equal(order, want) {
		t.Errorf("walk order = %v, want newest first %v", order, want)
	}

	// The default page, the maximum, and what is refused.
	page, err := o.List(ctx, wire.ListOptions{})
	if err != nil || page.NextCursor != "" || len(page.Tasks) != n-1+pages {
		t.Errorf("List with the default limit = %d tasks, next %q, %v; want all %d on one page", len(page.Tasks), page.NextCursor, err, n-1+pages)
	}
	qs, err := o.Questions(ctx, wire.PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		err   error
		param string
	}{
		{"limit above the maximum", func() error { _, err := o.List(ctx, wire.ListOptions{Limit: wire.MaxPageLimit + 1}); return err }(), "limit"},
		{"negative limit", func() error { _, err := o.Questions(ctx, wire.PageOptions{Limit: -1}); return err }(), "limit"},
		{"not a cursor", func() error { _, err := o.List(ctx, wire.ListOptions{Cursor: "!!"}); return err }(), "cursor"},
		{"a questions cursor for tasks", func() error {
			_, err := o.List(ctx, wire.ListOptions{Cursor: encodeCursor(cursorQuestions, sortKey{1, "x"})})
			return err
		}(), "cursor"},
	} {
		pe, ok := errors.AsType[*wire.PageError](tt.err)
		if !ok || pe.Param != tt.param || !errors.Is(tt.err, wire.ErrInvalidRequest) {
			t.Errorf("%s: %v; want a PageError naming %s that is an ErrInvalidRequest", tt.name, tt.err, tt.param)
		}
	}
	if len(qs.Questions) != 0 || qs.NextCursor != "" {
		t.Errorf("Questions = %+v; want none", qs)
	}
	if _, err := o.List(ctx, wire.ListOptions{Limit: wire.MaxPageLimit}); err != nil {
		t.Errorf("List at the maximum limit: %v", err)
	}
}

// TestQuestionPages: open questions page oldest first, by when they were
// asked; one asked between pages comes on a later page, none twice.
func TestQuestionPages(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx := t.Context()
	base := time.Now().UTC().Add(-time.Hour)
	for i := range 7 {
		storeTask(t, o, fmt.Sprintf("q-%d", i), wire.StateNeedsInput, base.Add(time.Duration(i)*time.Minute), nil)
	}
	storeTask(t, o, "done", wire.StateFinished, base, nil)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := o.Questions(ctx, wire.PageOptions{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Questions) > 3 {
			t.Fatalf("a page of %d questions, limit 3", len(page.Questions))
		}
		for _, q := range page.Questions {
			got = append(got, q.TaskID)
			if q.Action == "" || q.Question == "" {
				t.Errorf("question %+v lacks its text or action", q)
			}
		}
		if pages == 0 {
			storeTask(t, o, "q-late", wire.StateNeedsInput, time.Now().UTC(), nil)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	want := []string{"q-0", "q-1", "q-2", "q-3", "q-4", "q-5", "q-6", "q-late"}
	if !slices.Equal(got, want) {
		t.Errorf("question walk = %v, want %v", got, want)
	}
	if _, err := o.Questions(ctx, wire.PageOptions{Cursor: encodeCursor(cursorTasks, sortKey{1, "x"})}); !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("Questions with a tasks cursor = %v, want ErrInvalidRequest", err)
	}
}

// TestTaskCacheAcrossReplicas: a listing reflects this process's writes at
// once and another replica's as soon as the watch brings them.
func TestTaskCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	start := func() *Orchestrator {
		o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Stop(context.Background()) })
		return o
	}
	one, two := start(), start()
	ids := func(o *Orchestrator) map[string]wire.State {
		page, err := o.List(t.Context(), wire.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]wire.State{}
		for _, task := range page.Tasks {
			out[task.ID] = task.State
		}
		return out
	}
	testutil.Eventually(t, 10*time.Second, "both caches current", func() bool {
		return one.store.cache.current() && two.store.cache.current()
	})
	sub := schemas.Subagent{Name: "s", Runtime: schemas.RuntimeExec, Command: []string{"true"}}
	if _, err := one.Submit(t.Context(), wire.SubmitRequest{TaskID: "c-1", Subagent: sub}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ids(one)["c-1"]; !ok {
		t.Error("the replica that submitted does not list the task right away")
	}
	testutil.Eventually(t, 10*time.Second, "the other replica lists the task", func() bool { _, ok := ids(two)["c-1"]; return ok })
	if _, err := two.Cancel(t.Context(), "c-1"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the first replica sees the cancel", func() bool { return ids(one)["c-1"] == wire.StateCancelled })
	if err := one.Remove(t.Context(), "c-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ids(one)["c-1"]; ok {
		t.Error("the replica that removed the task still lists it")
	}
	testutil.Eventually(t, 10*time.Second, "the other replica drops the task", func() bool { _, ok := ids(two)["c-1"]; return !ok })
}

// TestCacheEntryPacking: labels and round stats survive their packing.
func TestCacheEntryPacking(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"batch": "b-7", "": "empty key", "k\x00": "v\x00=", "long": strings.Repeat("v", 300)}
	enc := encodeLabels(labels)
	for k, v := range labels {
		if !labelIs(enc, k, v) {
			t.Errorf("labelIs(%q, %q) = false", k, v)
		}
		if labelIs(enc, k, v+"x") {
			t.Errorf("labelIs(%q, %q+x) = true", k, v)
		}
	}
	if labelIs(enc, "b-7", "batch") || labelIs("", "batch", "") || labelIs(encodeLabels(nil), "a", "") {
		t.Error("labelIs matched what is not there")
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		state          wire.State
		started, ended time.Time
		answered       bool
		wait           int64
		want           RoundStats
	}{
		{wire.StateFinished, t0, t0.Add(1500 * time.Millisecond), false, 0, RoundStats{State: wire.StateFinished, Ended: true, Ran: 1500 * time.Millisecond, Started: true, ColdStart: 2 * time.Second}},
		{wire.StateNeedsInput, t0, t0.Add(time.Second), true, 90_000, RoundStats{State: wire.StateNeedsInput, Ended: true, Ran: time.Second, Answered: true, AnswerWaitMS: 90_000, Started: true, ColdStart: 2 * time.Second}},
		{wire.StateCancelled, t0, t0.Add(-time.Second), true, -5, RoundStats{State: wire.StateCancelled, Ended: true, Ran: -time.Second, Answered: true, Started: true, ColdStart: 2 * time.Second}},
		{wire.StateRunning, t0, time.Time{}, false, 0, RoundStats{State: wire.StateRunning, Started: true, ColdStart: 2 * time.Second}},
		{wire.State("paused"), time.Time{}, time.Time{}, true, 30 * 24 * 3600 * 1000, RoundStats{Answered: true, AnswerWaitMS: 30 * 24 * 3600 * 1000}},
	} {
		rs := roundStatsOf(tt.state, t0.Add(-2*time.Second), time.Time{}, tt.started, tt.ended)
		rs.Answered, rs.AnswerWaitMS = tt.answered, tt.wait
		if got := roundStatOf(rs).stats(); got != tt.want {
			t.Errorf("round %s: stats = %+v, want %+v", tt.state, got, tt.want)
		}
	}
	// Every question flag survives the packing on its own.
	for _, want := range []RoundStats{
		{Asked: true}, {Asked: true, WithOptions: true}, {Asked: true, WithDefault: true},
		{Asked: true, WithDefault: true, Answered: true, DefaultTaken: true, AnswerWaitMS: 7},
		{Asked: true, WithDefault: true, Answered: true, DefaultTaken: true, Assumed: true, AnswerWaitMS: 1<<48 - 1},
	} {
		if got := roundStatOf(want).stats(); got != want {
			t.Errorf("stats of %+v = %+v", want, got)
		}
	}
	// A retry's backoff is not cold start: it counts from RetryAt.
	if got := roundStatsOf(wire.StateRunning, t0, t0.Add(time.Minute), t0.Add(time.Minute+3*time.Second), time.Time{}); got.ColdStart != 3*time.Second {
		t.Errorf("cold start after a retry backoff = %s, want 3s", got.ColdStart)
	}
}

// TestFeedAtItsEnd: a value handed to a feed as its ctx ends is either
// applied or not counted at all — never left pending for good, never
// counted as delivered unapplied — so a follow from delivered+1 (the
// stop's catch-up) misses nothing, and waiting for the decoders ends.
func TestFeedAtItsEnd(t *testing.T) {
	t.Parallel()
	const n = 50
	value := func(i int) []byte {
		return fmt.Appendf(nil, `{"state":"finished","created_at":"2026-11-29T00:00:%02dZ"}`, i)
	}
	for range 200 {
		c := newTaskCache(nil)
		ctx, cancel := context.WithCancel(t.Context())
		put, _ := c.feed(ctx)
		for i := range n {
			if i == n/2 {
				cancel()
			}
			put(fmt.Sprintf("t%02d", i), value(i), uint64(i+1))
		}
		put("t00", nil, n+1) // a removal after the end
		wait, stop := context.WithTimeout(t.Context(), 30*time.Second)
		decoded := c.waitDecoded(wait)
		stop()
		if !decoded {
			t.Fatalf("%d values stay pending after the feed ended", c.pending.Load())
		}
		delivered := c.delivered.Load()
		c.mu.RLock()
		for i := range n {
			_, cached := c.byID[fmt.Sprintf("t%02d", i)]
			removed := i == 0 && delivered > n
			if uint64(i+1) <= delivered && cached == removed {
				t.Errorf("delivered is %d, yet task t%02d (revision %d) cached = %v", delivered, i, i+1, cached)
			}
		}
		c.mu.RUnlock()
		cancel()
	}
}
