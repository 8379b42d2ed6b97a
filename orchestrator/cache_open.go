package orchestrator

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/agoradev/agora/wire"
)

// An open task's list view is kept packed, as JSON, not decoded: decoded
// it is ~2.4 KB of Go values, its JSON half that, and of the 50,000 open
// tasks at a million stored only the hundred a page shows need it
// decoded (docs/capacity.md, "A million stored tasks"). What the scans of
// every open task read — the questions page's order, the question
// groups' keys, the outbox sweep, recovery, the stats — is kept beside
// it, decoded: a scan decodes no view.

// openEntry is what the cache keeps of an open task besides its entry.
// Like the entry, it does not change once made.
type openEntry struct {
	// view is the task's list view (ListView) as JSON, with its id,
	// revision and state set; never written to once made (a []byte, so a
	// decode does not copy it first).
	view []byte
	// asked is the current round's AskedAt as keyOf takes it: the
	// questions page's order.
	asked int64
	// due is when the current round's dispatch is due on the queue, the
	// later of its QueuedAt and RetryAt (Unix nanoseconds; math.MinInt64
	// for neither); retryAt is its RetryAt (0: none).
	due, retryAt int64
	// round is the current round's number.
	round int32
	flags uint8
	// group is the current round's question's QuestionGroupKey, and
	// failures its stepFailures ("" when none); for the question groups.
	group, failures string
	// state is the task's state when this version does not know it
	// (cacheEntry.st).
	state wire.State
}

// openEntry's flags: what the task's current round is.
const (
	openRound    = 1 << iota // the task has a round
	openQuestion             // it asked a question
	openAnswered             // the question has an answer
	openEnqueued             // its dispatch request is on the queue
)

// openOf makes the open entry of a task whose list view is view and
// whose rounds (the task's, or its view's) are rounds.
func openOf(rounds []wire.Round, view []byte) *openEntry {
	o := &openEntry{view: view, due: math.MinInt64}
	if len(rounds) == 0 {
		return o
	}
	r := &rounds[len(rounds)-1]
	o.flags = openRound
	o.round = int32(min(r.N, math.MaxInt32))
	o.asked = r.AskedAt.UnixNano()
	if q := r.Question; q != nil {
		o.group, o.failures = QuestionGroupKey(q.Question, q.Options), stepFailures(r)
	}
	if d := later(r.QueuedAt, r.RetryAt); !d.IsZero() {
		o.due = d.UnixNano()
	}
	if !r.RetryAt.IsZero() {
		o.retryAt = r.RetryAt.UnixNano()
	}
	for _, f := range []struct {
		on  bool
		bit uint8
	}{{r.Question != nil, openQuestion}, {r.Answer != nil, openAnswered}, {r.Enqueued, openEnqueued}} {
		if f.on {
			o.flags |= f.bit
		}
	}
	return o
}

// openOfView makes the open entry of the list view view (a snapshot's),
// decoding only its rounds.
func openOfView(view []byte) (*openEntry, error) {
	var v struct {
		Rounds []wire.Round `json:"rounds"`
	}
	if err := json.Unmarshal(view, &v); err != nil {
		return nil, err
	}
	return openOf(v.Rounds, view), nil
}

// task decodes the list view: a copy of the caller's own.
func (o *openEntry) task() (*wire.Task, error) {
	var t wire.Task
	if err := json.Unmarshal(o.view, &t); err != nil {
		return nil, fmt.Errorf("decode the list view of an open task: %w", err)
	}
	return &t, nil
}

// has reports whether every one of flags is set.
func (o *openEntry) has(flags uint8) bool { return o.flags&flags == flags }

// waitingRetry is waitingRetry of the current round.
func (o *openEntry) waitingRetry(now time.Time) bool {
	return o.has(openRound) && !o.has(openEnqueued) && o.retryAt != 0 && o.retryAt > now.UnixNano()
}

// waitsOnQuestion reports whether a task in state whose open entry is o
// waits on its current round's question: needs_input, asked, not
// answered.
func (o *openEntry) waitsOnQuestion(state wire.State) bool {
	return state == wire.StateNeedsInput && o.has(openQuestion) && !o.has(openAnswered)
}

// openTask is an open task as a scan of the open tasks sees it, its view
// not decoded. Its strings are the cache's and do not change: a caller
// may keep them.
type openTask struct {
	id     string
	state  wire.State
	owner  string
	labels string // as encodeLabels packs them
	*openEntry
}

// eachOpen calls fn with every open task, under the cache's read lock:
// fn must not call c.
func (c *taskCache) eachOpen(fn func(openTask)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for id, e := range c.open {
		fn(openTask{id: id, state: e.state(), owner: c.names.name(e.owner), labels: e.labels(), openEntry: e.open})
	}
}

// askedEntry is an open task the questions page lists: in state
// needs_input, its current round asked.
type askedEntry struct {
	asked int64 // openEntry.asked
	owner uint32
	e     *cacheEntry
}

// addOpen indexes e as an open task, when it is one; c.mu is held.
func (c *taskCache) addOpen(id string, e *cacheEntry) {
	if e.open == nil {
		return
	}
	c.open[id] = e
	if e.state() == wire.StateNeedsInput && e.open.has(openQuestion) {
		c.asking[id] = askedEntry{e.open.asked, e.owner, e}
	}
}

// dropOpen unindexes the open task id; c.mu is held.
func (c *taskCache) dropOpen(id string) {
	delete(c.open, id)
	delete(c.asking, id)
}

// firstAsked is the first n of the open tasks the questions page lists
// that owner's caller sees (every one when all), after the key after
// (from the first when nil), in the page's order: by when they were
// asked, then by task id.
func (c *taskCache) firstAsked(n int, all bool, owner string, after *sortKey) []keyedOpen {
	c.mu.RLock()
	defer c.mu.RUnlock()
	first := make([]keyedOpen, 0, n)
	ownerIdx, known := c.names.lookup(owner)
	if !all && (owner == "" || !known) {
		return first
	}
	for id, a := range c.asking {
		if !all && a.owner != ownerIdx {
			continue
		}
		k := sortKey{a.asked, id}
		if after != nil && k.compare(*after) <= 0 {
			continue
		}
		first = keepFirst(first, n, keyedOpen{k, a.e.open})
	}
	return first
}

// askedQuestion is an open question as the question groups read it.
type askedQuestion struct {
	key             sortKey
	batch, subagent string
	*openEntry
}

// openQuestions is the questions the tasks wait on (waitsOnQuestion)
// that owner's caller sees (every one when all), of batch (any when ""),
// in the questions page's order.
func (c *taskCache) openQuestions(all bool, owner, batch string) []askedQuestion {
	var out []askedQuestion
	c.mu.RLock()
	ownerIdx, known := c.names.lookup(owner)
	if all || owner != "" && known {
		for id, a := range c.asking {
			e := a.e
			if !all && a.owner != ownerIdx || !e.open.waitsOnQuestion(e.state()) {
				continue
			}
			b, _ := labelValue(e.labels(), wire.BatchLabel)
			if batch != "" && b != batch {
				continue
			}
			out = append(out, askedQuestion{sortKey{a.asked, id}, b, c.names.name(e.subagent), e.open})
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b askedQuestion) int { return a.key.compare(b.key) })
	return out
}

// keyedOpen is an open task and its place in an order.
type keyedOpen struct {
	key sortKey
	e   *openEntry
}

// keepFirst adds a to first, the n smallest keys offered so far in
// order, when it is one of them: a page of n from tens of thousands
// without sorting them all.
func keepFirst(first []keyedOpen, n int, a keyedOpen) []keyedOpen {
	if n <= 0 || len(first) == n && a.key.compare(first[n-1].key) >= 0 {
		return first
	}
	i, _ := slices.BinarySearchFunc(first, a.key, func(x keyedOpen, k sortKey) int { return x.key.compare(k) })
	if len(first) < n {
		first = append(first, keyedOpen{})
	}
	copy(first[i+1:], first[i:len(first)-1])
	first[i] = a
	return first
}
