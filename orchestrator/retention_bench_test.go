package orchestrator

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

var (
	retentionPerHour = flag.Int("retention-per-hour", 300, "BenchmarkRetentionWeek: tasks submitted per simulated hour")
	retentionDays    = flag.Int("retention-days", 14, "BenchmarkRetentionWeek: simulated days")
)

// BenchmarkRetentionWeek runs two weeks of simulated traffic through an
// orchestrator with the default retention of a week, on a clock the
// benchmark advances an hour at a time: each hour -retention-per-hour
// tasks are written as the orchestrator leaves them (the record in
// agora_tasks, the dispatch index entry, a 2 KB output in file storage), 1
// in 1,000 left running for good, the rest finished; then the retention sweep
// runs (ExpireTasks, as the orchestrator's own loop does each minute). At
// the end of each simulated day it prints the tasks kept, the two buckets'
// messages and bytes on the server, the objects in storage, the task
// index's entries and the Go heap after a collection — which must level
// off after day 7, where without retention they grow by a day's traffic
// every day. The buckets' delete markers expire on the server's real
// clock, so the benchmark shortens their TTL to 1 s (markerTTL) and waits
// it out before each day's figures.
//
//	go test -run '^$' -bench RetentionWeek -benchtime 1x ./orchestrator [-args -retention-per-hour=N -retention-days=D]
func BenchmarkRetentionWeek(b *testing.B) {
	perHour, days := *retentionPerHour, *retentionDays
	ctx := context.Background()
	bs := bustest.Bus(b)
	dir := b.TempDir()
	st, err := storage.Open(ctx, "file://"+dir, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	o, err := New(Config{Bus: bs, Store: st, Logger: slog.New(slog.DiscardHandler), Now: clock, RetentionSweep: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	o.markerTTL = time.Second
	if err := o.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = o.Stop(context.Background()) })
	output := strings.Repeat("a line the sub-agent printed\n", 70)

	var sb strings.Builder
	fmt.Fprintf(&sb, "%d tasks an hour (1 in 1,000 left running), retention %s, load average at start %s\n", perHour, o.retention(), loadavg())
	fmt.Fprintf(&sb, "%4s %9s %9s %10s %10s %11s %10s %9s %11s %9s\n", "day", "submitted", "kept", "tasks msgs", "tasks MB", "index msgs", "index MB", "objects", "index entr.", "heap MB")
	submitted, expired := 0, 0
	var sweep time.Duration
	began := time.Now()
	for b.Loop() {
		for day := 1; day <= days; day++ {
			for range 24 {
				hour := clock()
				for range perHour {
					id := fmt.Sprintf("w-%07d", submitted)
					state := wire.StateFinished
					if submitted%1000 == 0 {
						state = wire.StateRunning
					}
					d := id + "-r1"
					t := &wire.Task{ID: id, State: state, CreatedAt: hour, UpdatedAt: hour, Owner: "bench",
						Rounds: []wire.Round{{N: 1, DispatchID: d, State: state, QueuedAt: hour, StartedAt: hour, Enqueued: true}}}
					if err := o.store.create(ctx, t); err != nil {
						b.Fatal(err)
					}
					if _, err := o.store.index.Put(ctx, d, []byte(id)); err != nil {
						b.Fatal(err)
					}
					if state == wire.StateFinished {
						if err := st.Put(ctx, schemas.DispatchKey(d, schemas.DispatchOutput), strings.NewReader(output)); err != nil {
							b.Fatal(err)
						}
					}
					submitted++
				}
				mu.Lock()
				now = now.Add(time.Hour)
				mu.Unlock()
				t0 := time.Now()
				for {
					res, err := o.ExpireTasks(ctx)
					if err != nil {
						b.Fatal(err)
					}
					expired += res.Expired
					if !res.More {
						break
					}
				}
				sweep += time.Since(t0)
			}
			time.Sleep(1500 * time.Millisecond) // the markers' TTL on the server's clock
			tm, tb, err := o.store.tasks.Size(ctx)
			if err != nil {
				b.Fatal(err)
			}
			im, ib, err := o.store.index.Size(ctx)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			o.store.cache.mu.RLock()
			entries := len(o.store.cache.byID)
			o.store.cache.mu.RUnlock()
			fmt.Fprintf(&sb, "%4d %9d %9d %10d %10.1f %11d %10.1f %9d %11d %9.0f\n", day, submitted, submitted-expired, tm, float64(tb)/(1<<20),
				im, float64(ib)/(1<<20), countFiles(b, dir), entries, float64(ms.HeapInuse)/(1<<20))
		}
	}
	fmt.Fprintf(&sb, "expired %d; sweeps took %s in all (%d sweeps); run %s; load average at end %s\n", expired, sweep.Round(time.Millisecond), days*24, time.Since(began).Round(time.Second), loadavg())
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(submitted-expired), "kept-tasks")
	fmt.Print(sb.String())
}

// countFiles counts the regular files under dir.
func countFiles(b *testing.B, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
