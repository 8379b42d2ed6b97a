package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
)

// BenchmarkReadBucket measures what a start without a task index
// snapshot spends reading agora_tasks: 200,000 tasks in
// BenchmarkServeAt1M's mix (5% open, a 1 KB input each) in an embedded
// server's file store, read (read: every value handed over, nothing
// done with it) and read and indexed (index: the task cache's watch, as
// a start without a snapshot runs it).
//
//	go test -run '^$' -bench ReadBucket -benchtime 3x ./orchestrator
func BenchmarkReadBucket(b *testing.B) {
	const n = 200_000
	ctx := b.Context()
	bs := bustest.Bus(b)
	kv, err := bs.KeyValueMarkers(ctx, TaskBucket, "", MarkerTTL)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	notes := strings.Repeat("context for the sub-agent; ", 36)
	i, size := 0, 0
	if err := bs.PutAll(ctx, TaskBucket, 2000, func() (string, []byte, bool) {
		if i == n {
			return "", nil, false
		}
		t := scaleMixTask(i, now)
		t.Request.Input = json.RawMessage(fmt.Sprintf(`{"repo":"example/app","notes":%q}`, notes))
		data, err := json.Marshal(t)
		if err != nil {
			b.Fatal(err)
		}
		i++
		size += len(data)
		return t.ID, data, true
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d tasks, %d B each", n, size/n)
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			var got atomic.Int64
			if err := kv.Each(ctx, func(string, []byte, uint64) error { got.Add(1); return nil }); err != nil {
				b.Fatal(err)
			}
			if got.Load() != n {
				b.Fatalf("read %d of %d", got.Load(), n)
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			c := newTaskCache(nil)
			wctx, cancel := context.WithCancel(ctx)
			put, caughtUp := c.feed(wctx)
			done := make(chan struct{})
			if err := kv.Follow(wctx, put, func() { caughtUp(); close(done) }, func() {}); err != nil {
				b.Fatal(err)
			}
			<-done
			cancel()
			if len(c.byID) != n {
				b.Fatalf("indexed %d of %d", len(c.byID), n)
			}
		}
	})
}
