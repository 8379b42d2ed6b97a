package orchestrator

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/wire"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// taskCache is what listing reads instead of decoding the bucket: a small
// index entry for every task — id, state, created_at, labels, and the few
// numbers the metrics need — in creation order, and the list view
// (ListView) of every open task (queued, running, needs_input), packed
// (cache_open.go). A
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
	// caughtUp is closed the first time the watch has caught up.
	caughtUp chan struct{}
	once     sync.Once
	byID     map[string]*cacheEntry
	order    []*cacheEntry // by sortKey (created_at, id), oldest first, once sorted
	// dropped counts the entries of order that are removed (dropped set):
	// removing one from the middle of millions moves megabytes, so a
	// removal only marks it and order is compacted once an eighth is
	// dropped — the oldest tasks, which retention removes, are at its
	// start.
	dropped int
	// unsorted: order is in arrival order, to be sorted when the watch
	// has caught up (settledOnce).
	unsorted, settledOnce bool
	open                  map[string]*cacheEntry // the entries of open tasks
	// asking is the open tasks the questions page lists (asked): a scan
	// of 15,000 small values, not of every open task's entry.
	asking map[string]askedEntry
	counts map[wire.State]int
	owners ownerTally // counts per owner
	// gone holds the revision at which a task was removed, so an older
	// value still in flight does not bring it back. goneBefore is the
	// previous generation: forgetGone moves gone there and drops what was
	// there, so a removal is remembered for one to two retention sweeps
	// (long past any value in flight), not forever.
	gone, goneBefore map[string]uint64
	// names holds one copy of each owner and sub-agent name, so a
	// hundred thousand tasks of one sub-agent hold one string.
	names nameTable
	// delivered is the highest revision the watch has handed over, and
	// pending how many of the values handed over are still being decoded:
	// with none pending, the cache covers the bucket up to delivered (the
	// task index snapshot records it: snapshot.go).
	delivered atomic.Uint64
	pending   atomic.Int64
	// idle gets a token when a decoder brings pending to 0. It is the
	// cache's, not one feed's: a feed's caughtUp waits for the values
	// of an earlier feed too (snapshotAtStop follows the bucket again
	// while the run's last value may still be decoding), and a token put
	// by that feed's decoder must wake it.
	idle chan struct{}
}

// cacheEntry is one task in the cache: 64 bytes and its data
// (cache_pack.go). Once indexed it does not change but for dropped: a
// change to the task makes a new entry.
type cacheEntry struct {
	at  int64 // created_at, Unix nanoseconds
	rev uint64
	// updated is the task's updated_at in Unix seconds: retention expires
	// a terminal task by it.
	updated int64
	// data packs the id, the labels (encodeLabels), the round stats and
	// the usage summed over the rounds: packEntry.
	data string
	// open is what an open task keeps besides (cache_open.go); nil for a
	// terminal one.
	open *openEntry
	// owner and subagent are names' indexes.
	owner, subagent uint32
	// round is the highest round number (retries and respawns of a round
	// share its number).
	round int32
	// st is 1 + the state's index in wire.States; 0 for a state this
	// version does not know (never terminal, so open: open.state names
	// it). A byte, not a string, keeps the entry in 64 bytes, not 80.
	st uint8
	// dropped: removed, still in order until the next compaction.
	dropped bool
}

// state is the task's state.
func (e *cacheEntry) state() wire.State {
	if e.st > 0 && int(e.st) <= len(wire.States) {
		return wire.States[e.st-1]
	}
	if e.open != nil {
		return e.open.state
	}
	return ""
}

// setState sets the entry's state; one this version does not know needs
// the entry's open part (the caller makes it first).
func (e *cacheEntry) setState(s wire.State) error {
	if e.st = stateIndex(s); e.st == 0 {
		if e.open == nil {
			return fmt.Errorf("state %q, which this version does not know, of a task with no list view", s)
		}
		e.open.state = s
	}
	return nil
}

// newTask is a decoded entry and its names, before it is indexed.
type newTask struct {
	e               *cacheEntry
	owner, subagent string
}

// roundStat is what the metrics and stats need of one round
// (RoundStats), in 24 bytes: a hundred thousand tasks of three rounds each
// hold 7 MB.
type roundStat struct {
	ranNS   int64 // EndedAt − StartedAt, when ended
	startNS int64 // StartedAt − queued (ColdStart), when started
	// bits 0-47: the answer's wait in ms (below 0 counts as 0); 48-55: 1 +
	// the state's index in States (0: a state this version does not
	// know); bits 56-63: the stat flags below.
	packed uint64
}

const (
	waitBits        = 48
	statEnded       = 1 << 56
	statAnswered    = 1 << 57
	statAsked       = 1 << 58
	statOptions     = 1 << 59
	statDefault     = 1 << 60
	statTookDefault = 1 << 61
	statAssumed     = 1 << 62
	statStarted     = 1 << 63
)

// roundStatOf packs rs (its State and AnswerWaitMS as RoundStats has them).
func roundStatOf(rs RoundStats) roundStat {
	s := roundStat{packed: uint64(stateIndex(rs.State)) << waitBits}
	for _, f := range []struct {
		on  bool
		bit uint64
	}{{rs.Asked, statAsked}, {rs.WithOptions, statOptions}, {rs.WithDefault, statDefault},
		{rs.DefaultTaken, statTookDefault}, {rs.Assumed, statAssumed}} {
		if f.on {
			s.packed |= f.bit
		}
	}
	if rs.Ended {
		s.ranNS, s.packed = int64(rs.Ran), s.packed|statEnded
	}
	if rs.Started {
		s.startNS, s.packed = int64(rs.ColdStart), s.packed|statStarted
	}
	if rs.Answered {
		s.packed |= statAnswered | uint64(min(max(rs.AnswerWaitMS, 0), 1<<waitBits-1))
	}
	return s
}

func (s roundStat) stats() RoundStats {
	rs := RoundStats{Ended: s.packed&statEnded != 0, Answered: s.packed&statAnswered != 0,
		Started: s.packed&statStarted != 0, Asked: s.packed&statAsked != 0, WithOptions: s.packed&statOptions != 0,
		WithDefault: s.packed&statDefault != 0, DefaultTaken: s.packed&statTookDefault != 0, Assumed: s.packed&statAssumed != 0}
	if rs.Ended {
		rs.Ran = time.Duration(s.ranNS)
	}
	if rs.Started {
		rs.ColdStart = time.Duration(s.startNS)
	}
	if rs.Answered {
		rs.AnswerWaitMS = int64(s.packed & (1<<waitBits - 1))
	}
	if i := uint8(s.packed >> waitBits); i > 0 && int(i) <= len(wire.States) {
		rs.State = wire.States[i-1]
	}
	return rs
}

// encodeLabels packs labels in one string: the length of each key and
// value (uvarint) before it, in key order.
func encodeLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(labels[k])))
		b = append(b, labels[k]...)
	}
	return string(b)
}

// uvarint is binary.Uvarint of a string.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// labelIs reports whether the encoded labels give key the value.
func labelIs(enc, key, value string) bool {
	v, ok := labelValue(enc, key)
	return ok && v == value
}

// labelValue is the value the encoded labels give key.
func labelValue(enc, key string) (string, bool) {
	next := func() (string, bool) {
		n, w := uvarint(enc)
		if w <= 0 || uint64(len(enc)-w) < n {
			return "", false
		}
		s := enc[w : w+int(n)]
		enc = enc[w+int(n):]
		return s, true
	}
	for enc != "" {
		k, ok := next()
		if !ok {
			return "", false
		}
		v, ok := next()
		if !ok {
			return "", false
		}
		if k == key {
			return v, true
		}
	}
	return "", false
}

func newTaskCache(log *slog.Logger) *taskCache {
	return &taskCache{log: log, caughtUp: make(chan struct{}), idle: make(chan struct{}, 1), byID: map[string]*cacheEntry{},
		open: map[string]*cacheEntry{}, asking: map[string]askedEntry{}, counts: map[wire.State]int{}, owners: ownerTally{}, gone: map[string]uint64{}, goneBefore: map[string]uint64{}, names: newNameTable()}
}

// taskHead is the part of a stored task the index keeps; decoding only
// these fields skips the request's input and the rounds' partial_state
// without copying them.
type taskHead struct {
	State     wire.State `json:"state"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Owner     string     `json:"owner"`
	Request   struct {
		Labels   map[string]string `json:"labels"`
		Subagent struct {
			Name string `json:"name"`
		} `json:"subagent"`
	} `json:"request"`
	Rounds []struct {
		N         int        `json:"n"`
		State     wire.State `json:"state"`
		QueuedAt  time.Time  `json:"queued_at"`
		RetryAt   time.Time  `json:"retry_at"`
		StartedAt time.Time  `json:"started_at"`
		EndedAt   time.Time  `json:"ended_at"`
		Usage     *usageHead `json:"usage"`
		Question  *struct {
			// Options is left undecoded: only whether there are any counts.
			Options jsontext.Value `json:"options"`
			Default *string        `json:"default"`
		} `json:"question"`
		Answer *struct {
			Value   string `json:"value"`
			WaitMS  int64  `json:"wait_ms"`
			Assumed bool   `json:"assumed"`
		} `json:"answer"`
	} `json:"rounds"`
}

// usageHead is the part of a round's usage the index sums.
type usageHead struct {
	Turns                    int     `json:"turns"`
	CostUSD                  float64 `json:"cost_usd"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
}

// decodeHead decodes a stored task's head. It is most of what a start that
// reads every task costs (a million of them at a data dir's first start),
// so it decodes with encoding/json/v2's implementation (the module it is
// developed in), which reads a stored task twice as fast as encoding/json,
// under its options for encoding/json's semantics: what encoding/json
// reads, it reads the same (TestHeadDecodesAsEncodingJSON, FuzzHeadDecode;
// docs/capacity.md, "A million stored tasks").
func decodeHead(value []byte, h *taskHead) error {
	return jsonv2.Unmarshal(value, h, jsonv1.DefaultOptionsV1())
}

// newEntry decodes the stored value of task id at revision rev.
func newEntry(id string, value []byte, rev uint64) (newTask, error) {
	var h taskHead
	if err := decodeHead(value, &h); err != nil {
		return newTask{}, err
	}
	e := &cacheEntry{at: h.CreatedAt.UnixNano(), rev: rev}
	state := canonicalState(h.State)
	if !h.UpdatedAt.IsZero() {
		e.updated = h.UpdatedAt.Unix()
	}
	rounds := make([]roundStat, len(h.Rounds))
	var usage *UsageSum
	for i, r := range h.Rounds {
		rs := roundStatsOf(r.State, r.QueuedAt, r.RetryAt, r.StartedAt, r.EndedAt)
		if q := r.Question; q != nil {
			rs.Asked = true
			rs.WithOptions = hasItems(q.Options)
			rs.WithDefault = q.Default != nil
		}
		if a := r.Answer; a != nil {
			rs.Answered, rs.AnswerWaitMS, rs.Assumed = true, a.WaitMS, a.Assumed
			rs.DefaultTaken = r.Question != nil && r.Question.Default != nil && a.Value == *r.Question.Default
		}
		rounds[i] = roundStatOf(rs)
		e.round = max(e.round, int32(min(r.N, 1<<31-1)))
		if u := r.Usage; u != nil {
			usage = usage.add(u.Turns, u.CostUSD, u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
		}
	}
	e.data = packEntry(id, encodeLabels(h.Request.Labels), rounds, usage)
	if !state.Terminal() {
		var t wire.Task
		if err := json.Unmarshal(value, &t); err != nil {
			return newTask{}, err
		}
		t.ID, t.Revision, t.State = id, rev, state
		view, err := json.Marshal(ListView(&t))
		if err != nil {
			return newTask{}, fmt.Errorf("encode its list view: %w", err)
		}
		e.open = openOf(t.Rounds, view)
	}
	if err := e.setState(state); err != nil {
		return newTask{}, err
	}
	return newTask{e: e, owner: h.Owner, subagent: h.Request.Subagent.Name}, nil
}

// hasItems reports whether raw is a JSON array with an element.
func hasItems(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '[' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) > 0
}

// canonicalState returns the State constant equal to s, so a hundred
// thousand entries do not each hold a copy of "finished".
func canonicalState(s wire.State) wire.State {
	if i := stateIndex(s); i > 0 {
		return wire.States[i-1]
	}
	return s
}

func stateIndex(s wire.State) uint8 {
	if i := slices.Index(wire.States, s); i >= 0 {
		return uint8(i + 1)
	}
	return 0
}

// feed returns the callbacks of the watch that keeps c current. Decoding
// is most of what catching up with a large bucket costs, so values are
// decoded on every core, and applied in whatever order they are decoded:
// the revisions decide which value of a task stands, and a removal is
// remembered. caughtUp waits for the values before it. The decoders end
// with ctx, once they have applied what they were handed.
func (c *taskCache) feed(ctx context.Context) (put func(id string, value []byte, rev uint64), caughtUp func()) {
	type value struct {
		id   string
		data []byte
		rev  uint64
	}
	work := make(chan value, 64)
	pending := &c.pending
	done := func() {
		if pending.Add(-1) == 0 {
			select {
			case c.idle <- struct{}{}:
			default: // a token is there already
			}
		}
	}
	// The decoders apply every value handed to them, those still queued
	// when ctx ends too: its revision counts as delivered, and a capture
	// that sees none pending takes the cache to cover it (before, a
	// decoder that left on ctx's end left the queued values pending for
	// good: the stop's catch-up waited out its bound, and would have
	// started past values never applied).
	var (
		mu     sync.Mutex
		closed bool
	)
	go func() {
		<-ctx.Done()
		mu.Lock()
		closed = true
		close(work)
		mu.Unlock()
	}()
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for v := range work {
				c.put(v.id, v.data, v.rev)
				done()
			}
		}()
	}
	put = func(id string, data []byte, rev uint64) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			// Neither applied nor delivered, a removal neither (it would
			// count a value skipped before it as delivered): a later
			// follow from delivered+1 reads both.
			return
		}
		if data == nil {
			c.remove(id, rev)
			c.delivered.Store(rev)
			return
		}
		pending.Add(1)
		c.delivered.Store(rev)
		work <- value{id, data, rev}
	}
	caughtUp = func() {
		if c.waitDecoded(ctx) {
			c.setReady(true)
		}
	}
	return put, caughtUp
}

// waitDecoded waits until no value handed over is being decoded (false:
// ctx ended first).
func (c *taskCache) waitDecoded(ctx context.Context) bool {
	for c.pending.Load() > 0 {
		select {
		case <-c.idle:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// put stores the task value of revision rev unless a newer one is there.
// A value that does not decode is left out, logged.
func (c *taskCache) put(id string, value []byte, rev uint64) {
	if err := c.load(id, value, rev); err != nil {
		// One bad record must not take every listing down with it: it is
		// left out (Get still reports the error for that task).
		c.log.Warn("task cache: a task does not decode; leaving it out of listings", "task_id", id, "error", err)
		c.remove(id, rev)
	}
}

// load is put that returns a value that does not decode.
func (c *taskCache) load(id string, value []byte, rev uint64) error {
	// A revision the cache has already — this process's own write, put
	// by the store, coming back on the cache's watch — is not decoded
	// again: the decode (twice for an open task) was 6% of serve's CPU at
	// 200 submits a second (docs/capacity.md, "The API under load").
	if c.has(id, rev) {
		return nil
	}
	n, err := newEntry(id, value, rev)
	if err != nil {
		return fmt.Errorf("decode task %s: %w", id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.byID[id]
	if cur != nil && cur.rev >= rev {
		return nil
	}
	if g, ok := c.goneAt(id); ok {
		if rev <= g {
			return nil
		}
		delete(c.gone, id)
		delete(c.goneBefore, id)
	}
	if cur != nil && cur.at == n.e.at {
		c.replace(cur, n)
		return nil
	}
	if cur != nil {
		c.drop(cur)
	}
	c.add(n)
	return nil
}

// has reports whether the cache holds task id at rev or later, or knows
// it removed since.
func (c *taskCache) has(id string, rev uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byID[id]; cur != nil && cur.rev >= rev {
		return true
	}
	g, ok := c.goneAt(id)
	return ok && rev <= g
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
	if g, _ := c.goneAt(id); rev > g {
		c.gone[id] = rev
	}
	if cur != nil && cur.rev <= rev { // not a task created again since
		c.drop(cur)
	}
}

// goneAt is the revision at which id was removed; the caller holds the lock.
func (c *taskCache) goneAt(id string) (uint64, bool) {
	if g, ok := c.gone[id]; ok {
		return g, true
	}
	g, ok := c.goneBefore[id]
	return g, ok
}

// forgetGone ages the removals remembered: those of the previous call are
// forgotten. Called once a retention sweep, it bounds the memory removals
// hold to the tasks removed in two sweep intervals.
func (c *taskCache) forgetGone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.goneBefore, c.gone = c.gone, map[string]uint64{}
}

// ended is the ids of the terminal tasks last written before cutoff, at
// most limit of them, oldest first by creation.
func (c *taskCache) ended(cutoff time.Time, limit int) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ids []string
	at := cutoff.Unix()
	for _, e := range c.order {
		if len(ids) >= limit {
			break
		}
		if !e.dropped && e.state().Terminal() && e.updated != 0 && e.updated < at {
			ids = append(ids, e.id())
		}
	}
	return ids
}

// add indexes e; the caller holds the lock. Until the watch has caught up
// the order is sorted once at the end (the bucket comes in the order of
// its last writes, not of creation); after that a new task is the newest
// and goes at the end.
func (c *taskCache) add(n newTask) {
	e := n.e
	id, key := e.id(), e.key()
	e.owner, e.subagent = c.names.intern(n.owner), c.names.intern(n.subagent)
	c.byID[id] = e
	if c.unsorted || len(c.order) == 0 || c.order[len(c.order)-1].key().compare(key) < 0 {
		c.order = append(c.order, e)
	} else if !c.settledOnce {
		c.order, c.unsorted = append(c.order, e), true
	} else {
		c.order = slices.Insert(c.order, c.position(key), e)
	}
	c.addOpen(id, e)
	c.counts[e.state()]++
	c.owners.add(e.owner, e.state())
}

// replace puts e where old is: the same task, created at the same time.
func (c *taskCache) replace(old *cacheEntry, n newTask) {
	e := n.e
	id := e.id()
	e.owner, e.subagent = c.names.intern(n.owner), c.names.intern(n.subagent)
	c.names.release(old.owner)
	c.names.release(old.subagent)
	c.byID[id] = e
	c.order[c.index(old)] = e
	c.dropOpen(id)
	c.addOpen(id, e)
	c.uncount(old.state())
	c.counts[e.state()]++
	c.owners.remove(old.owner, old.state())
	c.owners.add(e.owner, e.state())
}

// drop unindexes e; the caller holds the lock.
func (c *taskCache) drop(e *cacheEntry) {
	id := e.id()
	c.names.release(e.owner)
	c.names.release(e.subagent)
	delete(c.byID, id)
	c.dropOpen(id)
	c.uncount(e.state())
	c.owners.remove(e.owner, e.state())
	e.dropped = true
	if c.dropped++; c.dropped > 64 && c.dropped > len(c.order)/8 {
		c.order = slices.DeleteFunc(c.order, func(e *cacheEntry) bool { return e.dropped })
		c.dropped = 0
	}
}

func (c *taskCache) uncount(s wire.State) {
	if c.counts[s]--; c.counts[s] <= 0 {
		delete(c.counts, s)
	}
}

// index is where e is in the order.
func (c *taskCache) index(e *cacheEntry) int {
	if !c.unsorted {
		if i := c.position(e.key()); i < len(c.order) && c.order[i] == e {
			return i
		}
	}
	return slices.Index(c.order, e)
}

// position is the index of the first entry whose key is not below k.
func (c *taskCache) position(k sortKey) int {
	return sort.Search(len(c.order), func(i int) bool { return c.order[i].key().compare(k) >= 0 })
}

// setReady says whether the watch has caught up (and is still there). A
// cache that failed to decode a task stays untrusted.
func (c *taskCache) setReady(ready bool) {
	c.mu.Lock()
	if ready {
		c.settledOnce = true
		if c.unsorted {
			slices.SortFunc(c.order, func(a, b *cacheEntry) int { return a.key().compare(b.key()) })
			c.unsorted = false
		}
	}
	c.ready = ready
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
	state      wire.State
	key, value string
	label      bool
	// scoped: only the tasks of owner.
	owner  string
	scoped bool
	// ownerIdx is owner's index in the cache's names, and noOwner says
	// no entry has it (bind sets both).
	ownerIdx uint32
	noOwner  bool
}

// bind resolves f's owner in c's names; c.mu is held.
func (c *taskCache) bind(f taskFilter) taskFilter {
	if f.scoped {
		var ok bool
		f.ownerIdx, ok = c.names.lookup(f.owner)
		f.noOwner = !ok || f.owner == ""
	}
	return f
}

func filterOf(opts wire.ListOptions) taskFilter {
	f := taskFilter{state: opts.State}
	if opts.Label != "" {
		f.key, f.value, _ = strings.Cut(opts.Label, "=")
		f.label = true
	}
	return f
}

// matchEntry is whether e passes f, bound to e's cache (bind).
func (f taskFilter) matchEntry(e *cacheEntry) bool {
	if f.state != "" && e.state() != f.state || f.scoped && (f.noOwner || e.owner != f.ownerIdx) {
		return false
	}
	if !f.label {
		return true
	}
	return labelIs(e.labels(), f.key, f.value)
}

func (f taskFilter) matchTask(t *wire.Task) bool {
	if f.state != "" && t.State != f.state || f.scoped && (f.owner == "" || t.Owner != f.owner) {
		return false
	}
	if !f.label {
		return true
	}
	v, ok := t.Request.Labels[f.key]
	return ok && v == f.value
}

// selected is one task a page shows: an open task, whose list view the
// cache holds (packed), or only the key of a terminal one, whose body the
// bucket holds.
type selected struct {
	key  sortKey
	open *openEntry
}

// pageTasks selects up to limit tasks matching f, newest first, from the
// one after the cursor key on (every task when after is nil). more says
// whether another match
// follows; counts are every task's by state (with f scoped to an owner,
// that owner's).
func (c *taskCache) pageTasks(f taskFilter, after *sortKey, limit int) (sel []selected, counts map[wire.State]int, more bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f = c.bind(f)
	i := len(c.order) - 1
	if after != nil {
		i = c.position(*after) - 1
	}
	for ; i >= 0; i-- {
		e := c.order[i]
		if e.dropped || !f.matchEntry(e) {
			continue
		}
		if len(sel) == limit {
			more = true
			break
		}
		sel = append(sel, selected{key: e.key(), open: e.open})
	}
	if f.scoped {
		return sel, c.ownerCounts(f.owner), more
	}
	return sel, maps.Clone(c.counts), more
}

// ownerCounts counts the tasks of owner by state; c.mu is held.
func (c *taskCache) ownerCounts(owner string) map[wire.State]int {
	i, ok := c.names.lookup(owner)
	if owner == "" || !ok {
		return map[wire.State]int{}
	}
	return c.owners.of(i)
}

// eachStats calls fn with the stats of every task f matches that was
// created at or after since (zero: every one), oldest first; fn must not
// keep s.
func (c *taskCache) eachStats(f taskFilter, since time.Time, fn func(s *TaskStats)) {
	var (
		s      TaskStats
		rounds []roundStat
		usage  UsageSum
	)
	c.mu.RLock()
	defer c.mu.RUnlock()
	f = c.bind(f)
	i := 0
	if !since.IsZero() && !c.unsorted {
		i = c.position(keyOf(since, ""))
	}
	for _, e := range c.order[i:] {
		if e.dropped || !f.matchEntry(e) || !since.IsZero() && e.at < since.UnixNano() {
			continue
		}
		s.State, s.Subagent, s.MaxRound, s.Usage = e.state(), c.names.name(e.subagent), int(e.round), nil
		var used bool
		if rounds, used = e.roundsAndUsage(rounds[:0], &usage); used {
			s.Usage = &usage
		}
		s.OpenQuestion = e.open != nil && e.open.waitsOnQuestion(e.state())
		s.Rounds = s.Rounds[:0]
		for _, r := range rounds {
			s.Rounds = append(s.Rounds, r.stats())
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
