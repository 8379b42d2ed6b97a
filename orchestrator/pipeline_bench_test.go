package orchestrator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// BenchmarkEventsApplied measures how many lifecycle events per second the
// orchestrator applies with many tasks in flight: N tasks are submitted,
// a started and a finished event of each are stored in AGORA_EVENTS while
// no orchestrator runs, then one starts and the clock runs until every
// task is finished. "one-at-a-time" is the pipeline as it was before
// (one ordered consumer, MaxAckPending 1); "lanes" is today's default.
// docs/benchmarks.md, "Events applied per second", records a run of
//
//	go test ./orchestrator -run '^$' -bench EventsApplied -benchtime 3x
func BenchmarkEventsApplied(b *testing.B) {
	const tasks = 1000
	for _, variant := range []struct {
		name                string
		workers, maxPending int
	}{
		{"one-at-a-time", 1, 1},
		{"lanes", 0, 0},
	} {
		b.Run(variant.name, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += applyBacklog(b, tasks, variant.workers, variant.maxPending)
			}
			b.ReportMetric(float64(2*tasks*b.N)/total.Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// applyBacklog times one orchestrator applying 2×n stored events.
func applyBacklog(b *testing.B, n, workers, maxPending int) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	bs, store := bustest.Bus(b), storagetest.FileStore(b)
	ctx := context.Background()
	first, err := New(Config{Bus: bs, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		t, err := first.Submit(ctx, wire.SubmitRequest{TaskID: fmt.Sprintf("ev-%05d", i), Subagent: script("s", "true")})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = t.ID
	}
	if err := first.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	zero, ms := 0, int64(1)
	for _, id := range ids {
		d := id + "-r1"
		for _, ev := range []schemas.Event{
			{Kind: schemas.KindStarted, DispatchID: d, TaskID: id, Round: 1},
			{Kind: schemas.KindFinished, DispatchID: d, TaskID: id, Round: 1, ExitCode: &zero, DurationMS: &ms},
		} {
			ev.Time = time.Now().UTC()
			if _, err := bs.PublishEvent(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	o, err := New(Config{Bus: bs, Store: store, EventWorkers: workers, EventMaxPending: maxPending})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	if err := o.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for {
		page, err := o.List(ctx, wire.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if page.Summary.Counts[wire.StateFinished] == n {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	b.StopTimer()
	_ = o.Stop(ctx)
	return took
}
