package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// taskCache is what listing reads instead of decoding the bucket: a small
// index entry for every task — id, state, created_at, labels, and the few
// numbers the metrics need — in creation order, and the list view
// (ListView) of every open task (queued, running, needs_input) decoded. A
// terminal task's body is not kept: a page that shows it reads it from the
// bucket. So memory follows the open tasks, not every task ever run:
// docs/benchmarks.md, "Listing at scale".
//
// One ordered watch of the tasks bucket keeps it current (so changes by
// other replicas arrive too), and so do this process's own writes (so a
// caller reads what it just wrote). Until the watch has caught up, or
// after it is lost, listing builds the same index from the bucket for each
// call instead.
type taskCache struct {
	log *slog.Logger

	mu    sync.RWMutex
	ready bool
	// broken: a value did not decode; the cache is not trusted again.
	broken bool
	// caughtUp is closed the first time the watch has caught up.
	caughtUp chan struct{}
	once     sync.Once
	byID     map[string]*cacheEntry
	order    []*cacheEntry          // by sortKey (created_at, id), oldest first
	open     map[string]*cacheEntry // the entries of open tasks
	counts   map[State]int
	// gone holds the revision at which a task was removed, so an older
	// value still in flight does not bring it back.
	gone map[string]uint64
}

// cacheEntry is one task in the cache.
type cacheEntry struct {
	key    sortKey // created_at and id
	rev    uint64
	state  State
	labels []string // key, value, key, value, … (a map costs ten times more)
	rounds []roundStat
	// task is the list view of an open task; nil for a terminal one.
	task *Task
}

// roundStat is what the metrics need of one round (TaskStats).
type roundStat struct {
	state          uint8 // 1 + index in States; 0 for a state this version does not know
	ended, answers bool
	ranNS, waitMS  int64
}

func newTaskCache(log *slog.Logger) *taskCache {
	return &taskCache{log: log, caughtUp: make(chan struct{}), byID: map[string]*cacheEntry{},
		open: map[string]*cacheEntry{}, counts: map[State]int{}, gone: map[string]uint64{}}
}

// taskHead is the part of a stored task the index keeps; decoding only
// these fields skips the request's input and the rounds' partial_state
// without copying them.
type taskHead struct {
	State     State     `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	Request   struct {
		Labels map[string]string `json:"labels"`
	} `json:"request"`
	Rounds []struct {
		State     State     `json:"state"`
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
		Answer    *struct {
			WaitMS int64 `json:"wait_ms"`
		} `json:"answer"`
	} `json:"rounds"`
}

// newEntry decodes the stored value of task id at revision rev.
func newEntry(id string, value []byte, rev uint64) (*cacheEntry, error) {
	var h taskHead
	if err := json.Unmarshal(value, &h); err != nil {
		return nil, err
	}
	e := &cacheEntry{key: keyOf(h.CreatedAt, id), rev: rev, state: canonicalState(h.State)}
	if n := len(h.Request.Labels); n > 0 {
		e.labels = make([]string, 0, 2*n)
		for k, v := range h.Request.Labels {
			e.labels = append(e.labels, k, v)
		}
	}
	e.rounds = make([]roundStat, len(h.Rounds))
	for i, r := range h.Rounds {
		s := &e.rounds[i]
		s.state = stateIndex(r.State)
		if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
			s.ended, s.ranNS = true, int64(r.EndedAt.Sub(r.StartedAt))
		}
		if r.Answer != nil {
			s.answers, s.waitMS = true, r.Answer.WaitMS
		}
	}
	if !e.state.Terminal() {
		var t Task
		if err := json.Unmarshal(value, &t); err != nil {
			return nil, err
		}
		t.ID, t.Revision, t.State = id, rev, e.state
		e.task = ListView(&t)
	}
	return e, nil
}

// canonicalState returns the State constant equal to s, so a hundred
// thousand entries do not each hold a copy of "finished".
func canonicalState(s State) State {
	if i := stateIndex(s); i > 0 {
		return States[i-1]
	}
	return s
}

func stateIndex(s State) uint8 {
	if i := slices.Index(States, s); i >= 0 {
		return uint8(i + 1)
	}
	return 0
}

// put stores the task value of revision rev unless a newer one is there.
// A value that does not decode makes the cache untrusted (listing reads
// the bucket, where the same value is an error the caller sees).
func (c *taskCache) put(id string, value []byte, rev uint64) {
	if err := c.load(id, value, rev); err != nil {
		c.log.Warn("task cache: a task does not decode; listing reads the bucket", "task_id", id, "error", err)
		c.mu.Lock()
		c.ready, c.broken = false, true
		c.mu.Unlock()
	}
}

// load is put that returns a value that does not decode.
func (c *taskCache) load(id string, value []byte, rev uint64) error {
	e, err := newEntry(id, value, rev)
	if err != nil {
		return fmt.Errorf("decode task %s: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.byID[id]
	if cur != nil && cur.rev >= rev {
		return nil
	}
	if g, ok := c.gone[id]; ok {
		if rev <= g {
			return nil
		}
		delete(c.gone, id)
	}
	if cur != nil {
		c.drop(cur)
	}
	c.add(e)
	return nil
}

// remove drops a task removed at revision rev; 0 means "whatever is
// cached now" (a removal by this process, whose revision it does not get).
func (c *taskCache) remove(id string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.byID[id]
	if rev == 0 && cur != nil {
		rev = cur.rev
	}
	if rev > c.gone[id] {
		c.gone[id] = rev
	}
	if cur != nil {
		c.drop(cur)
	}
}

// add indexes e; the caller holds the lock.
func (c *taskCache) add(e *cacheEntry) {
	id := e.key.id
	c.byID[id] = e
	i := c.position(e.key)
	c.order = slices.Insert(c.order, i, e)
	if e.task != nil {
		c.open[id] = e
	}
	c.counts[e.state]++
}

// drop unindexes e; the caller holds the lock.
func (c *taskCache) drop(e *cacheEntry) {
	id := e.key.id
	delete(c.byID, id)
	delete(c.open, id)
	if i := c.position(e.key); i < len(c.order) && c.order[i] == e {
		c.order = slices.Delete(c.order, i, i+1)
	}
	if c.counts[e.state]--; c.counts[e.state] <= 0 {
		delete(c.counts, e.state)
	}
}

// position is the index of the first entry whose key is not below k.
func (c *taskCache) position(k sortKey) int {
	return sort.Search(len(c.order), func(i int) bool { return c.order[i].key.compare(k) >= 0 })
}

// setReady says whether the watch has caught up (and is still there). A
// cache that failed to decode a task stays untrusted.
func (c *taskCache) setReady(ready bool) {
	c.mu.Lock()
	c.ready = ready && !c.broken
	c.mu.Unlock()
	if ready {
		c.settled()
	}
}

// settled ends waitCaughtUp: the watch has caught up, or is lost.
func (c *taskCache) settled() { c.once.Do(func() { close(c.caughtUp) }) }

func (c *taskCache) current() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// taskFilter is List's filters.
type taskFilter struct {
	state      State
	key, value string
	label      bool
}

func filterOf(opts ListOptions) taskFilter {
	f := taskFilter{state: opts.State}
	if opts.Label != "" {
		f.key, f.value, _ = strings.Cut(opts.Label, "=")
		f.label = true
	}
	return f
}

func (f taskFilter) matchEntry(e *cacheEntry) bool {
	if f.state != "" && e.state != f.state {
		return false
	}
	if !f.label {
		return true
	}
	for i := 0; i+1 < len(e.labels); i += 2 {
		if e.labels[i] == f.key {
			return e.labels[i+1] == f.value
		}
	}
	return false
}

func (f taskFilter) matchTask(t *Task) bool {
	if f.state != "" && t.State != f.state {
		return false
	}
	if !f.label {
		return true
	}
	v, ok := t.Request.Labels[f.key]
	return ok && v == f.value
}

// selected is one task a page shows: the list view of an open task, or
// only the key of a terminal one, whose body the bucket holds.
type selected struct {
	key  sortKey
	task *Task
}

// pageTasks selects up to limit tasks matching f, newest first, from the
// one after the cursor key on (every task when after is nil). Open tasks
// come as copies of their list view (the caller may set the copy's own
// fields, not what they point to). more says whether another match
// follows; counts are every task's by state.
func (c *taskCache) pageTasks(f taskFilter, after *sortKey, limit int) (sel []selected, counts map[State]int, more bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	i := len(c.order) - 1
	if after != nil {
		i = c.position(*after) - 1
	}
	for ; i >= 0; i-- {
		e := c.order[i]
		if !f.matchEntry(e) {
			continue
		}
		if len(sel) == limit {
			more = true
			break
		}
		s := selected{key: e.key}
		if e.task != nil {
			cp := *e.task
			s.task = &cp
		}
		sel = append(sel, s)
	}
	return sel, maps.Clone(c.counts), more
}

// eachOpen calls fn with a copy of the list view of every open task.
func (c *taskCache) eachOpen(fn func(*Task)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.open {
		cp := *e.task
		fn(&cp)
	}
}

// eachStats calls fn with the stats of every task; fn must not keep s.
func (c *taskCache) eachStats(fn func(s *TaskStats)) {
	var s TaskStats
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.order {
		s.State = e.state
		s.OpenQuestion = false
		if t := e.task; t != nil && t.State == StateNeedsInput {
			if r := t.current(); r != nil && r.Question != nil && r.Answer == nil {
				s.OpenQuestion = true
			}
		}
		s.Rounds = s.Rounds[:0]
		for _, r := range e.rounds {
			rs := RoundStats{Ended: r.ended, Ran: time.Duration(r.ranNS), Answered: r.answers, AnswerWaitMS: r.waitMS}
			if r.state > 0 {
				rs.State = States[r.state-1]
			}
			s.Rounds = append(s.Rounds, rs)
		}
		fn(&s)
	}
}

// waitCaughtUp waits until the watch has caught up once; false when ctx
// ends first.
func (c *taskCache) waitCaughtUp(ctx context.Context) bool {
	select {
	case <-c.caughtUp:
		return true
	case <-ctx.Done():
		return false
	}
}
