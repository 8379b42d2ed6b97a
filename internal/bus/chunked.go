package bus

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrChunksBroken: a chunked value's chunks are missing, cut short or do
// not match the head's SHA-256.
var ErrChunksBroken = errors.New("chunked value broken")

// Chunked is one value larger than a message — the orchestrator's task
// index snapshot — kept in a KV bucket as chunks under a head record. The
// head names the chunks' generation, their count, size and SHA-256, and
// carries the writer's metadata; it moves by compare-and-swap, so of two
// writers at once one wins and the other removes its own chunks.
//
// It is a KV bucket and not JetStream's object store because nats.go's
// object store (v1.55.0) left a goroutine blocked for good after a write
// now and then (resetPendingAcksOnReconnect, caught by goleak) and its
// reads waited 5 s a call.
type Chunked struct {
	kv        *KV
	key       string
	chunkSize int
}

// chunkedHead is the head record.
type chunkedHead struct {
	Generation string          `json:"generation"`
	Chunks     int             `json:"chunks"`
	Size       int             `json:"size"`
	SHA256     string          `json:"sha256"`
	Meta       json.RawMessage `json:"meta,omitempty"`
}

// staleChunks is how old a generation's chunks must be, not being the
// head's, before a writer removes them as left by a writer that died
// mid-write: far longer than a write takes.
const staleChunks = 10 * time.Minute

// Chunked opens the value key in bucket (created when absent), stored in
// chunks of at most chunkSize bytes (which must fit the server's max
// payload).
func (b *Bus) Chunked(ctx context.Context, bucket, description, key string, chunkSize int) (*Chunked, error) {
	kv, err := b.KeyValueMarkers(ctx, bucket, description, time.Minute)
	if err != nil {
		return nil, err
	}
	if chunkSize <= 0 {
		return nil, fmt.Errorf("chunked value %s/%s: chunk size %d", bucket, key, chunkSize)
	}
	return &Chunked{kv: kv, key: key, chunkSize: chunkSize}, nil
}

func (c *Chunked) chunkKey(gen string, i int) string {
	return c.key + "." + gen + "." + strconv.Itoa(i)
}

// Get returns the value and its metadata: ErrKeyNotFound when none was
// put, ErrChunksBroken when its chunks are missing, short or altered.
func (c *Chunked) Get(ctx context.Context) (meta, data []byte, err error) {
	raw, _, err := c.kv.Get(ctx, c.key)
	if err != nil {
		return nil, nil, err
	}
	var h chunkedHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, nil, fmt.Errorf("head of %s/%s: %w: %w", c.kv.bucket, c.key, ErrChunksBroken, err)
	}
	if h.Size < 0 || h.Chunks < 0 || h.Size > h.Chunks*c.chunkSize {
		return nil, nil, fmt.Errorf("head of %s/%s: %d bytes in %d chunks of at most %d: %w", c.kv.bucket, c.key, h.Size, h.Chunks, c.chunkSize, ErrChunksBroken)
	}
	var buf bytes.Buffer
	buf.Grow(h.Size)
	for i := range h.Chunks {
		chunk, _, err := c.kv.Get(ctx, c.chunkKey(h.Generation, i))
		if errors.Is(err, ErrKeyNotFound) {
			return nil, nil, fmt.Errorf("%s/%s: chunk %d of %d missing: %w", c.kv.bucket, c.key, i, h.Chunks, ErrChunksBroken)
		}
		if err != nil {
			return nil, nil, err
		}
		buf.Write(chunk)
	}
	sum := sha256.Sum256(buf.Bytes())
	if buf.Len() != h.Size || hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, nil, fmt.Errorf("%s/%s: %d bytes, head says %d with another SHA-256: %w", c.kv.bucket, c.key, buf.Len(), h.Size, ErrChunksBroken)
	}
	return h.Meta, buf.Bytes(), nil
}

// Put stores data with meta in place of the value there. It fails with
// ErrRevision when another writer moved the head meanwhile; a Put that
// fails removes the chunks it wrote. A Put that succeeds removes the
// chunks of the value it replaced and those a writer that died mid-write
// left.
func (c *Chunked) Put(ctx context.Context, meta, data []byte) error {
	old, rev, err := c.kv.Get(ctx, c.key)
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		return err
	}
	var prev chunkedHead
	if rev != 0 {
		_ = json.Unmarshal(old, &prev) // an unreadable head is replaced; its chunks are swept as stale
	}
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	// The generation starts with its time, so a later writer can tell
	// chunks left long ago from those of a write under way.
	sum := sha256.Sum256(data)
	h := chunkedHead{Generation: strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + hex.EncodeToString(nonce[:]),
		Size: len(data), SHA256: hex.EncodeToString(sum[:]), Meta: meta}
	undo := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i := range h.Chunks {
			_ = c.kv.Delete(cctx, c.chunkKey(h.Generation, i)) // what is left is swept as stale
		}
	}
	for off := 0; off < len(data) || off == 0 && h.Chunks == 0; off += c.chunkSize {
		end := min(off+c.chunkSize, len(data))
		h.Chunks++
		if _, err := c.kv.Put(ctx, c.chunkKey(h.Generation, h.Chunks-1), data[off:end]); err != nil {
			undo()
			return err
		}
		if end == len(data) {
			break
		}
	}
	head, err := json.Marshal(h)
	if err == nil {
		if rev == 0 {
			_, err = c.kv.Create(ctx, c.key, head)
			if errors.Is(err, ErrKeyExists) {
				err = fmt.Errorf("%w: %w", ErrRevision, err)
			}
		} else {
			_, err = c.kv.Update(ctx, c.key, head, rev)
		}
	}
	if err != nil {
		undo()
		return err
	}
	for i := range prev.Chunks {
		if err := c.kv.Delete(ctx, c.chunkKey(prev.Generation, i)); err != nil {
			return fmt.Errorf("remove the replaced chunks: %w", err)
		}
	}
	return c.sweep(ctx, h.Generation)
}

// sweep removes the chunks of generations other than keep older than
// staleChunks.
func (c *Chunked) sweep(ctx context.Context, keep string) error {
	w, err := c.kv.kv.Watch(ctx, c.key+".>", jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("list chunks of %s/%s: %w", c.kv.bucket, c.key, err)
	}
	defer w.Stop()
	var stale []string
	for e := range w.Updates() {
		if e == nil {
			break
		}
		gen, _, _ := strings.Cut(strings.TrimPrefix(e.Key(), c.key+"."), ".")
		if gen == keep {
			continue
		}
		at, _, _ := strings.Cut(gen, "-")
		if ns, err := strconv.ParseInt(at, 36, 64); err != nil || time.Since(time.Unix(0, ns)) > staleChunks {
			stale = append(stale, e.Key())
		}
	}
	for _, k := range stale {
		if err := c.kv.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// Keys lists the bucket's live keys (for tests and operators: the head
// and the chunks).
func (c *Chunked) Keys(ctx context.Context) ([]string, error) {
	keys, err := c.kv.kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keys of %s: %w", c.kv.bucket, err)
	}
	return keys, nil
}
