package bus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
)

// TestChunkedRoundTrip: a value of any size comes back whole with its
// metadata; a missing value is ErrKeyNotFound; a value whose chunk is
// gone is ErrChunksBroken, never a shorter value.
func TestChunkedRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := bustest.Bus(t)
	c, err := b.Chunked(ctx, "chunked_round_trip", "test", "snap", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx); !errors.Is(err, bus.ErrKeyNotFound) {
		t.Fatalf("Get of nothing: err = %v, want ErrKeyNotFound", err)
	}
	for _, size := range []int{0, 1, 999, 1000, 1001, 4500} {
		data := bytes.Repeat([]byte{byte(size)}, size)
		meta := fmt.Appendf(nil, `{"size":%d}`, size)
		if err := c.Put(ctx, meta, data); err != nil {
			t.Fatalf("Put of %d bytes: %v", size, err)
		}
		gotMeta, got, err := c.Get(ctx)
		if err != nil || !bytes.Equal(got, data) || string(gotMeta) != string(meta) {
			t.Fatalf("Get after Put of %d bytes = %d bytes, meta %s, %v", size, len(got), gotMeta, err)
		}
		keys, err := c.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + max(1, (size+999)/1000); len(keys) != want {
			t.Errorf("after Put of %d bytes the bucket holds %d keys (%v), want %d: the replaced chunks stay", size, len(keys), keys, want)
		}
	}
	// A chunk removed behind the head's back.
	keys, err := c.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(keys, func(k string) bool { return strings.HasSuffix(k, ".2") })
	if i < 0 {
		t.Fatalf("no third chunk in %v", keys)
	}
	kv, err := b.KeyValueMarkers(ctx, "chunked_round_trip", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, keys[i]); err != nil {
		t.Fatal(err)
	}
	if _, got, err := c.Get(ctx); !errors.Is(err, bus.ErrChunksBroken) {
		t.Errorf("Get with a chunk gone = %d bytes, %v; want ErrChunksBroken", len(got), err)
	}
	// Heads whose sizes cannot be: refused, not allocated for (a negative
	// size made bytes.Buffer.Grow panic).
	for _, head := range []string{
		`{"generation":"g","chunks":1,"size":-1,"sha256":""}`,
		`{"generation":"g","chunks":-1,"size":0,"sha256":""}`,
		`{"generation":"g","chunks":1,"size":1000000000000,"sha256":""}`,
	} {
		if _, err := kv.Put(ctx, "snap", []byte(head)); err != nil {
			t.Fatal(err)
		}
		if _, got, err := c.Get(ctx); !errors.Is(err, bus.ErrChunksBroken) {
			t.Errorf("Get with head %s = %d bytes, %v; want ErrChunksBroken", head, len(got), err)
		}
	}
}

// TestChunkedWritersAtOnce: several writers putting at once leave one
// whole value — one of theirs — and no chunk of any other: a writer that
// loses the head's compare-and-swap removes what it wrote.
func TestChunkedWritersAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := bustest.Bus(t)
	const writers, rounds = 6, 4
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lost int
		put  = map[string]bool{}
	)
	for w := range writers {
		// Each writer has its own Chunked, as separate orchestrators do.
		c, err := b.Chunked(ctx, "chunked_writers", "test", "snap", 100)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				data := []byte(strings.Repeat(fmt.Sprintf("writer %d round %d; ", w, r), 20))
				err := c.Put(context.WithoutCancel(ctx), nil, data)
				mu.Lock()
				switch {
				case err == nil:
					put[string(data)] = true
				case errors.Is(err, bus.ErrRevision):
					lost++
				default:
					t.Errorf("writer %d: Put: %v", w, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	c, err := b.Chunked(ctx, "chunked_writers", "test", "snap", 100)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := c.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !put[string(got)] {
		t.Errorf("the value is none that a Put succeeded with: %.60q…", got)
	}
	keys, err := c.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + (len(got)+99)/100; len(keys) != want {
		t.Errorf("%d writers at once (%d Puts lost the race) left %d keys, want %d (the head and its chunks): %v", writers, lost, len(keys), want, keys)
	}
	t.Logf("%d Puts succeeded, %d lost the race", len(put), lost)
}

// TestPutAll: every value a bulk load yields is stored, more than one
// window of them.
func TestPutAll(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := bustest.Bus(t)
	kv, err := b.KeyValue(ctx, "put_all", "test")
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if err := b.PutAll(ctx, "put_all", 7, func() (string, []byte, bool) {
		if i == 50 {
			return "", nil, false
		}
		i++
		return fmt.Sprintf("k%d", i), fmt.Appendf(nil, "v%d", i), true
	}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		if v, _, err := kv.Get(ctx, fmt.Sprintf("k%d", i)); err != nil || string(v) != fmt.Sprintf("v%d", i) {
			t.Errorf("Get k%d = %q, %v", i, v, err)
		}
	}
}
