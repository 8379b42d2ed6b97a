package orchestrator

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/wire"
)

// The task index snapshot: the task cache (cache.go) saved in
// TaskIndexBucket with the tasks bucket's revision it covers, so a start
// reads the snapshot and the changes since instead of decoding every task
// record (docs/orchestrator.md, "The task index snapshot"; at a million
// tasks that is seconds instead of minutes).
const (
	// TaskIndexBucket holds the snapshot: a head record and its chunks.
	TaskIndexBucket = "agora_task_index"
	// DefaultIndexSnapshotEvery is Config.IndexSnapshotEvery's default:
	// after a crash the last periodic snapshot is at most this old, and
	// it is read (with the changes since) by a start up to
	// snapshotMaxAge(MarkerTTL) − 5 minutes = 15 minutes after the crash.
	DefaultIndexSnapshotEvery = 5 * time.Minute
	// MaxIndexSnapshotEvery is the longest Config.IndexSnapshotEvery:
	// half the age at which a snapshot of a changed bucket is still read
	// (20 minutes), so a start within 10 minutes of a crash reads the
	// last periodic one. Saved less often, a crash would mostly leave a
	// snapshot no start may read.
	MaxIndexSnapshotEvery = 10 * time.Minute

	// TaskIndexKey is the snapshot's key in TaskIndexBucket.
	TaskIndexKey = "tasks"
	// snapshotFormat is the encoding's version; a snapshot of another is
	// rebuilt, never read.
	snapshotFormat = 1
	// snapshotChunk is the largest chunk, well under NATS's default max
	// payload of 1 MiB.
	snapshotChunk = 512 << 10
)

// snapshotMeta is what the head record says of a snapshot.
type snapshotMeta struct {
	Format int `json:"format"`
	// Bucket and BucketCreated name the tasks bucket it was taken of: a
	// bucket deleted and made again is another one.
	Bucket        string    `json:"bucket"`
	BucketCreated time.Time `json:"bucket_created"`
	// Rev is the tasks bucket's revision the index covered: every change
	// up to it and none after it that is not in the bucket still.
	Rev uint64 `json:"rev"`
	// At is when (the writer's wall clock) the index covered Rev.
	At    time.Time `json:"at"`
	Tasks int       `json:"tasks"`
}

// snapshotMaxAge is how old a snapshot may be and still be read, when
// the bucket changed since: a task removed after Rev is known only by its
// delete marker, which the server drops markerTTL after the removal, so a
// snapshot older than that could bring a removed task back. A third of
// the TTL is left for clocks and the watch's lag.
func snapshotMaxAge(markerTTL time.Duration) time.Duration { return markerTTL * 2 / 3 }

// trustSnapshot says why a snapshot may not be read (nil: it may) of the
// tasks bucket b, at now.
func trustSnapshot(m snapshotMeta, b bus.BucketState, now time.Time, markerTTL time.Duration) error {
	switch {
	case m.Format != snapshotFormat:
		return fmt.Errorf("format %d; this version reads %d", m.Format, snapshotFormat)
	case m.Bucket != b.Name:
		return fmt.Errorf("of bucket %q, not %q", m.Bucket, b.Name)
	case !m.BucketCreated.Equal(b.Created):
		return fmt.Errorf("of a bucket created %s; this one was created %s", m.BucketCreated.Format(time.RFC3339Nano), b.Created.Format(time.RFC3339Nano))
	case m.Rev > b.LastRev:
		return fmt.Errorf("from the future: it covers revision %d, the bucket's last is %d", m.Rev, b.LastRev)
	case m.At.After(now.Add(markerTTL - snapshotMaxAge(markerTTL))):
		return fmt.Errorf("from the future: taken %s, now is %s", m.At.Format(time.RFC3339), now.Format(time.RFC3339))
	case m.Rev < b.LastRev && now.Sub(m.At) > snapshotMaxAge(markerTTL):
		// Unchanged since (Rev is the last revision), any age will do.
		return fmt.Errorf("too old: taken %s ago, and removals older than %s may be forgotten", now.Sub(m.At).Round(time.Second), markerTTL)
	}
	return nil
}

// captured is the cache's entries at one revision, and the names they
// use.
type captured struct {
	entries []*cacheEntry
	names   []string
}

// capture returns the entries of the cache and the revision they cover,
// or ok false when the cache is not current or values are being decoded.
// Entries do not change once made (a change makes a new one), and the
// names' list only grows, so the caller may read both after the lock is
// released.
func (c *taskCache) capture() (cp captured, rev uint64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rev = c.delivered.Load()
	if !c.ready || c.pending.Load() != 0 || rev == 0 {
		return captured{}, 0, false
	}
	entries := make([]*cacheEntry, 0, len(c.byID))
	for _, e := range c.order {
		if !e.dropped {
			entries = append(entries, e)
		}
	}
	return captured{entries: entries, names: c.names.list}, rev, true
}

// restore indexes the entries of a snapshot covering rev, before the
// watch from rev+1 starts.
func (c *taskCache) restore(entries []newTask, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		c.add(e)
	}
	c.delivered.Store(rev)
}

// snapshotWriter is the binary encoding of a snapshot's entries.
type snapshotWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

func (s *snapshotWriter) uvarint(x uint64) { s.buf = binary.AppendUvarint(s.buf, x) }
func (s *snapshotWriter) varint(x int64)   { s.buf = binary.AppendVarint(s.buf, x) }
func (s *snapshotWriter) str(x string)     { s.uvarint(uint64(len(x))); s.buf = append(s.buf, x...) }
func (s *snapshotWriter) flush() {
	if s.err == nil {
		_, s.err = s.w.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

// encodeSnapshot writes the entries, gzipped: per entry its data (id,
// labels, round stats, usage: packEntry), creation, revision, state, last
// update, owner, sub-agent, highest round and, for an open task, its list
// view as JSON.
func encodeSnapshot(cp captured) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	s := &snapshotWriter{w: bufio.NewWriterSize(zw, 256<<10)}
	for _, e := range cp.entries {
		s.str(e.data)
		s.varint(e.at)
		s.uvarint(e.rev)
		s.str(string(e.state()))
		s.varint(e.updated)
		s.str(cp.names[e.owner])
		s.str(cp.names[e.subagent])
		s.uvarint(uint64(e.round))
		if e.open != nil {
			s.uvarint(uint64(len(e.open.view)))
			s.buf = append(s.buf, e.open.view...)
		} else {
			s.uvarint(0)
		}
		s.flush()
	}
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err == nil {
		s.err = zw.Close()
	}
	return out.Bytes(), s.err
}

// errSnapshotShort: the snapshot ends inside an entry.
var errSnapshotShort = errors.New("the snapshot ends inside an entry")

// snapshotReader reads what snapshotWriter wrote.
type snapshotReader struct {
	r   *bufio.Reader
	err error
}

func (s *snapshotReader) uvarint() uint64 {
	if s.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(s.r)
	if err != nil {
		s.err = errSnapshotShort
	}
	return x
}

func (s *snapshotReader) varint() int64 {
	if s.err != nil {
		return 0
	}
	x, err := binary.ReadVarint(s.r)
	if err != nil {
		s.err = errSnapshotShort
	}
	return x
}

func (s *snapshotReader) bytes() []byte {
	n := s.uvarint()
	if s.err != nil || n == 0 {
		return nil
	}
	if n > 64<<20 {
		s.err = fmt.Errorf("a field of %d bytes", n)
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.err = errSnapshotShort
	}
	return b
}

func (s *snapshotReader) str() string { return string(s.bytes()) }

// decodeSnapshot reads the tasks entries encodeSnapshot wrote.
func decodeSnapshot(data []byte, tasks int) ([]newTask, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	s := &snapshotReader{r: bufio.NewReaderSize(zr, 256<<10)}
	entries := make([]newTask, 0, tasks)
	// Names repeat: one string each.
	names := map[string]string{}
	name := func(b []byte) string {
		if n, ok := names[string(b)]; ok {
			return n
		}
		n := string(b)
		names[n] = n
		return n
	}
	for range tasks {
		e := &cacheEntry{}
		e.data = s.str()
		e.at = s.varint()
		e.rev = s.uvarint()
		state := canonicalState(wire.State(name(s.bytes())))
		e.updated = s.varint()
		n := newTask{e: e, owner: name(s.bytes()), subagent: name(s.bytes())}
		e.round = int32(min(s.uvarint(), math.MaxInt32))
		if view := s.bytes(); view != nil {
			// Kept packed; only what the scans of the open tasks read
			// is decoded (cache_open.go).
			var err error
			if e.open, err = openOfView(view); err != nil {
				return nil, fmt.Errorf("task %s: %w", e.id(), err)
			}
		}
		if s.err != nil {
			return nil, fmt.Errorf("entry %d of %d: %w", len(entries)+1, tasks, s.err)
		}
		if e.id() == "" {
			return nil, fmt.Errorf("entry %d of %d has no task id", len(entries)+1, tasks)
		}
		if err := e.setState(state); err != nil {
			return nil, fmt.Errorf("task %s: %w", e.id(), err)
		}
		entries = append(entries, n)
	}
	if _, err := s.r.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than the %d entries the head counts", tasks)
	}
	return entries, nil
}

// openSnapshots opens TaskIndexBucket; a server that refuses it leaves
// the orchestrator without snapshots (each start reads the whole bucket),
// not without a start.
func (o *Orchestrator) openSnapshots(ctx context.Context) {
	if o.cfg.IndexSnapshotEvery < 0 {
		return
	}
	chunk := snapshotChunk
	if mp := int(o.cfg.Bus.MaxPayload()); mp > 0 {
		chunk = min(chunk, mp-4096)
	}
	snaps, err := o.cfg.Bus.Chunked(ctx, TaskIndexBucket, "agora's task index, saved so a start need not read every task", TaskIndexKey, chunk)
	if err != nil {
		o.log.Warn("task index snapshot: cannot open its bucket; every start reads the whole tasks bucket", "error", err)
		return
	}
	o.snapshots = snaps
}

// loadSnapshot restores c from the snapshot when one may be trusted and
// returns the revision it covers (0: none, with why).
func (o *Orchestrator) loadSnapshot(ctx context.Context, c *taskCache) (rev uint64, why error) {
	if o.snapshots == nil {
		return 0, errors.New("snapshots are off")
	}
	began := time.Now()
	raw, data, err := o.snapshots.Get(ctx)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return 0, errors.New("there is none")
	}
	if err != nil {
		return 0, err
	}
	var m snapshotMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("its head does not decode: %w", err)
	}
	b, err := o.store.tasks.State(ctx)
	if err != nil {
		return 0, err
	}
	if err := trustSnapshot(m, b, time.Now(), o.markerTTL); err != nil {
		return 0, err
	}
	entries, err := decodeSnapshot(data, m.Tasks)
	if err != nil {
		return 0, fmt.Errorf("it does not decode: %w", err)
	}
	c.restore(entries, m.Rev)
	o.log.Info("task index: starting from its snapshot", "tasks", m.Tasks, "revision", m.Rev, "bucket_revision", b.LastRev,
		"age", time.Since(m.At).Round(time.Second), "bytes", len(data), "read_in", time.Since(began).Round(time.Millisecond))
	return m.Rev, nil
}

// writeSnapshot saves the task cache when it covers a revision other than
// the one last saved; wrote says whether it did.
func (o *Orchestrator) writeSnapshot(ctx context.Context) (wrote bool, err error) {
	c := o.store.cache
	if o.snapshots == nil || c == nil {
		return false, nil
	}
	o.snapshotMu.Lock() // one write at a time: the loop's and a test's
	defer o.snapshotMu.Unlock()
	var (
		cp  captured
		rev uint64
		ok  bool
		at  time.Time
	)
	// Values being decoded leave the covered revision unknown for a
	// moment: try again a little later.
	for range 20 {
		at = time.Now()
		if cp, rev, ok = c.capture(); ok {
			break
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if !ok || rev == o.snapshotRev.Load() {
		return false, nil
	}
	b, err := o.store.tasks.State(ctx)
	if err != nil {
		return false, err
	}
	data, err := encodeSnapshot(cp)
	if err != nil {
		return false, err
	}
	meta, err := json.Marshal(snapshotMeta{Format: snapshotFormat, Bucket: b.Name, BucketCreated: b.Created, Rev: rev, At: at.UTC(), Tasks: len(cp.entries)})
	if err != nil {
		return false, err
	}
	if err := o.snapshots.Put(ctx, meta, data); err != nil {
		return false, fmt.Errorf("save the task index: %w", err)
	}
	o.snapshotRev.Store(rev)
	o.log.Debug("task index: snapshot saved", "tasks", len(cp.entries), "revision", rev, "bytes", len(data), "took", time.Since(at).Round(time.Millisecond))
	return true, nil
}

// snapshotLoop saves the task index every IndexSnapshotEvery (at once
// when this start read the whole bucket), until ctx ends. Another
// orchestrator saving at the same moment wins the compare-and-swap; the
// next tick tries again.
func (o *Orchestrator) snapshotLoop(ctx context.Context, now bool) {
	defer o.wg.Done()
	every := o.cfg.IndexSnapshotEvery
	if every == 0 {
		every = DefaultIndexSnapshotEvery
	}
	first := every
	if now {
		first = 0
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if _, err := o.writeSnapshot(ctx); err != nil && ctx.Err() == nil {
			if errors.Is(err, bus.ErrRevision) {
				o.log.Debug("task index: another orchestrator saved its snapshot at the same moment", "error", err)
			} else {
				o.log.Warn("task index snapshot", "error", err)
			}
		}
		timer.Reset(every)
	}
}

// snapshotAtStop saves the task index once more as the orchestrator
// stops, after everything it ran has ended. With no other orchestrator,
// nothing changes agora_tasks until the next start, and a snapshot of an
// unchanged bucket is read however old it is: a start after a stop of any
// length is quick.
func (o *Orchestrator) snapshotAtStop() {
	if o.snapshots == nil || o.store == nil || o.cfg.IndexSnapshotEvery < 0 || !o.cfg.Bus.Connected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The watch ended with the rest; it may not have handed over this
	// process's last writes (the cache knows them, the covered revision
	// does not): catch up with the bucket once more, so the snapshot
	// covers its last revision. When it covers it already — the common
	// case — there is nothing to follow: only the values still being
	// decoded to wait for. (Following from past the bucket's end relied
	// on nats.go's "caught up" for a consumer with nothing pending.)
	if c := o.store.cache; c != nil && c.current() {
		b, err := o.store.tasks.State(ctx)
		if err != nil {
			o.log.Warn("task index snapshot at stop", "error", err)
			return
		}
		if b.LastRev > c.delivered.Load() {
			put, caughtUp := c.feed(ctx)
			done := make(chan struct{})
			var once sync.Once
			if err := o.store.tasks.FollowFrom(ctx, c.delivered.Load()+1, put,
				func() { caughtUp(); once.Do(func() { close(done) }) }, func() {}); err == nil {
				select {
				case <-done:
				case <-ctx.Done():
				}
			}
		} else {
			c.waitDecoded(ctx)
		}
	}
	if _, err := o.writeSnapshot(ctx); err != nil && !errors.Is(err, bus.ErrRevision) {
		o.log.Warn("task index snapshot at stop", "error", err)
	}
}
