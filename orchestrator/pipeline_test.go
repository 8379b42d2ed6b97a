package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func publish(t *testing.T, b *bus.Bus, ev schemas.Event) {
	t.Helper()
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	if ev.Kind.Terminal() {
		ms := int64(1)
		ev.DurationMS = &ms
		if ev.ExitCode == nil {
			ev.ExitCode = new(int)
		}
	}
	if _, err := b.PublishEvent(t.Context(), ev); err != nil {
		t.Fatalf("publish %s of %s: %v", ev.Kind, ev.DispatchID, err)
	}
}

// TestStrayAndUnappliableEvents: events for tasks that do not exist are
// dropped and counted, an event that cannot be applied is parked after its
// last delivery and shown to the operator, and neither holds up the events
// of other tasks published after them. Before the pipeline was rebuilt
// (one ordered consumer, retried forever) the tasks below stayed queued.
func TestStrayAndUnappliableEvents(t *testing.T) {
	t.Parallel()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t), EventMaxDeliveries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	ctx := t.Context()
	submit := func(id string) *wire.Task {
		task, err := o.Submit(ctx, wire.SubmitRequest{TaskID: id, Subagent: script("s", "true")})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	bad := submit("p-bad")
	for _, id := range []string{"p-a", "p-b", "p-c"} {
		submit(id)
	}
	// A record that does not decode: no apply of its events can succeed.
	tasksKV, err := b.KeyValueMarkers(ctx, TaskBucket, "", MarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasksKV.Put(ctx, "p-bad", []byte(`{"id": "p-bad", "rounds": "not a list"`)); err != nil {
		t.Fatal(err)
	}

	zero := 0
	// Stray first: an unknown task by id, one by dispatch id only, the
	// unappliable one; then the events of the healthy tasks.
	publish(t, b, schemas.Event{Kind: schemas.KindFinished, DispatchID: "ghost-r1", TaskID: "ghost", ExitCode: &zero})
	publish(t, b, schemas.Event{Kind: schemas.KindCancelled, DispatchID: "nobody-r9", ExitCode: &zero})
	publish(t, b, schemas.Event{Kind: schemas.KindFinished, DispatchID: "p-bad-r1", TaskID: "p-bad", ExitCode: &zero})
	publish(t, b, schemas.Event{Kind: schemas.KindStarted, DispatchID: "p-a-r1", TaskID: "p-a"})
	publish(t, b, schemas.Event{Kind: schemas.KindFinished, DispatchID: "p-a-r1", TaskID: "p-a", ExitCode: &zero})
	publish(t, b, schemas.Event{Kind: schemas.KindFinished, DispatchID: "p-b-r1", TaskID: "p-b", ExitCode: &zero})
	publish(t, b, schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: "p-c-r1", TaskID: "p-c",
		NeedsInput: &schemas.NeedsInput{Question: "A or B?", Options: []string{"A", "B"}}})

	state := func(id string) wire.State {
		task, err := o.Get(ctx, id)
		if err != nil {
			return ""
		}
		return task.State
	}
	testutil.Eventually(t, 10*time.Second, "healthy tasks applied behind stray and unappliable events", func() bool {
		return state("p-a") == wire.StateFinished && state("p-b") == wire.StateFinished && state("p-c") == wire.StateNeedsInput
	})
	testutil.Eventually(t, 5*time.Second, "both events of unknown tasks counted as dropped", func() bool {
		return o.PipelineStats().Dropped["unknown_task"] >= 2
	})

	var parked []wire.ParkedEvent
	testutil.Eventually(t, 20*time.Second, "the unappliable event parked", func() bool {
		parked, _, _ = o.ParkedEvents(ctx)
		return len(parked) == 1
	})
	p := parked[0]
	if p.DispatchID != "p-bad-r1" || p.Kind != schemas.KindFinished || !strings.Contains(p.Error, "decode task p-bad") || p.Deliveries != 2 {
		t.Errorf("parked event = %+v; want p-bad-r1's dispatch.finished after 2 deliveries with the decode error", p)
	}
	// The parked bucket's watch can list the event before the consumer,
	// back from storing it, counts it: the counter follows a moment later.
	testutil.Eventually(t, 5*time.Second, "1 parked in the stats", func() bool {
		st := o.PipelineStats()
		return st.ParkedNow == 1 && st.Parked == 1
	})

	// The record that does not decode is left out of listings; the others
	// are listed (one bad record used to fail every listing).
	page, err := o.List(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatalf("List with one undecodable record: %v", err)
	}
	if len(page.Tasks) != 3 || page.Summary.Counts[wire.StateFinished] != 2 {
		t.Errorf("List with one undecodable record = %d tasks, counts %v; want the 3 others", len(page.Tasks), page.Summary.Counts)
	}

	// Repaired, the parked event applies on retry and is no longer parked.
	good, _ := json.Marshal(bad)
	if _, err := tasksKV.Put(ctx, "p-bad", good); err != nil {
		t.Fatal(err)
	}
	if err := o.RetryParked(ctx, p.Sequence); err != nil {
		t.Fatalf("retry parked: %v", err)
	}
	if s := state("p-bad"); s != wire.StateFinished {
		t.Errorf("p-bad after retry is %s, want finished", s)
	}
	if parked, _, _ := o.ParkedEvents(ctx); len(parked) != 0 {
		t.Errorf("still parked after a successful retry: %+v", parked)
	}
	page, err = o.List(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := page.Summary
	if sum.ParkedEvents != 0 || sum.Alert != "" {
		t.Errorf("summary after retry = %+v; want no parked events", sum)
	}
}

// TestParkedEventsSurviveRestart: parked events live in their bucket, so
// another replica or a restarted process lists them and can discard them.
func TestParkedEventsSurviveRestart(t *testing.T) {
	t.Parallel()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	start := func() *Orchestrator {
		o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t), EventMaxDeliveries: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Stop(context.Background()) })
		return o
	}
	o := start()
	ctx := t.Context()
	if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: "q-bad", Subagent: script("s", "true")}); err != nil {
		t.Fatal(err)
	}
	tasksKV, err := b.KeyValueMarkers(ctx, TaskBucket, "", MarkerTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasksKV.Put(ctx, "q-bad", []byte(`[]`)); err != nil {
		t.Fatal(err)
	}
	zero := 0
	publish(t, b, schemas.Event{Kind: schemas.KindFinished, DispatchID: "q-bad-r1", TaskID: "q-bad", ExitCode: &zero})
	testutil.Eventually(t, 10*time.Second, "the event parked", func() bool { p, _, _ := o.ParkedEvents(ctx); return len(p) == 1 })
	page, _ := o.List(ctx, wire.ListOptions{})
	sum := page.Summary
	if sum.ParkedEvents != 1 || !strings.Contains(sum.Alert, "agora events parked") {
		t.Errorf("summary = %+v; want 1 parked event and the command that lists them", sum)
	}
	if err := o.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	o2 := start()
	var parked []wire.ParkedEvent
	testutil.Eventually(t, 5*time.Second, "the restarted orchestrator lists the parked event", func() bool {
		parked, _, _ = o2.ParkedEvents(ctx)
		return len(parked) == 1
	})
	if err := o2.DiscardParked(ctx, parked[0].Sequence); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := o2.ParkedEvents(ctx); len(p) != 0 {
		t.Errorf("discarded event still listed: %+v", p)
	}
	if err := o2.DiscardParked(ctx, parked[0].Sequence); err == nil {
		t.Error("discarding it twice succeeded")
	}
}
