package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// TestPublishTerminalRace: two runners settle one dispatch at once, on a
// three-node cluster with AGORA_EVENTS at R3 — runner a, alive but silent
// past the lease, with its worker's needs_input; runner b, which took a's
// claim over as lost, with worker-lost. Each read the dispatch's events
// before the other stored anything, so each decided to publish. Whichever
// publishes second is refused by the server (the runners' events changed
// since its read); read again, the first one's terminal event counts, and
// it publishes nothing. Both orders: exactly one terminal event stored.
func TestPublishTerminalRace(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	var nodes []*Bus
	for i, s := range c.Servers {
		b, err := Connect(ctx, s.ClientURL(), Options{Name: fmt.Sprintf("node%d", i), Replicas: 3, Logger: natstest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		nodes = append(nodes, b)
	}
	if err := nodes[0].EnsureEventStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := nodes[1].AsRunner("ra")
	if err != nil {
		t.Fatal(err)
	}
	b, err := nodes[2].AsRunner("rb.example.com") // a runner id of several tokens
	if err != nil {
		t.Fatal(err)
	}
	code, ms := 0, int64(1)
	asked := func(id string) schemas.Event {
		return schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: id, Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms,
			NeedsInput: &schemas.NeedsInput{Question: "A or B?"}}
	}
	lost := func(id string) schemas.Event {
		return schemas.Event{Kind: schemas.KindFailed, DispatchID: id, Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms,
			Failure: &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: "runner ra stopped renewing its claim"}}
	}
	const window = 20 * time.Second

	for _, tc := range []struct {
		name       string
		first      string // who publishes first: "a" or "b"
		wantKind   schemas.EventKind
		wantRunner string
	}{
		{"the silent runner first", "a", schemas.KindNeedsInput, "ra"},
		{"the taker first", "b", schemas.KindFailed, "rb.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "race-" + tc.first
			// a held the claim; b took it over as lost.
			l, err := a.Claim(ctx, id, "ra")
			if err != nil || !l.Created {
				t.Fatalf("Claim by ra = %+v, %v", l, err)
			}
			if _, err := a.PublishEvent(ctx, schemas.Event{Kind: schemas.KindStarted, DispatchID: id, Time: time.Now().UTC()}); err != nil {
				t.Fatal(err)
			}
			taker, err := b.Claim(ctx, id, "rb.example.com")
			if err != nil || taker.Found.Runner != "ra" {
				t.Fatalf("Claim by rb = %+v, %v", taker, err)
			}
			if err := taker.TakeOver(ctx); err != nil {
				t.Fatal(err)
			}

			// Both read before either publishes: both would publish.
			aEv, bEv := asked(id), lost(id)
			aDec := decide(t, a, aEv, nil)
			bDec := decide(t, b, bEv, []string{"ra"})
			if aDec.done || bDec.done {
				t.Fatalf("decisions = %+v, %+v; want both to publish", aDec, bDec)
			}
			type side struct {
				bus     *Bus
				ev      schemas.Event
				lastSeq uint64
				holders []string
			}
			sides := map[string]side{"a": {a, aEv, aDec.lastSeq, nil}, "b": {b, bEv, bDec.lastSeq, []string{"ra"}}}
			first, second := sides[tc.first], sides[map[string]string{"a": "b", "b": "a"}[tc.first]]

			if err := publishAfter(t, first.bus, first.ev, first.lastSeq); err != nil {
				t.Fatalf("first publish: %v", err)
			}
			if err := publishAfter(t, second.bus, second.ev, second.lastSeq); !errors.Is(err, ErrEventsChanged) {
				t.Fatalf("second publish after a stale read: %v; want ErrEventsChanged (refused by the server)", err)
			}
			// Read again, the second finds the first's outcome and publishes nothing.
			ack, settled, err := second.bus.PublishTerminal(ctx, second.ev, window, second.holders...)
			if err != nil || settled == nil || settled.Kind != tc.wantKind || ack.Sequence != 0 {
				t.Fatalf("second PublishTerminal = %+v, %+v, %v; want nothing published, the first's %s", ack, settled, err, tc.wantKind)
			}
			// The first, asked again (a retry), is told its copy is stored.
			ack, settled, err = first.bus.PublishTerminal(ctx, first.ev, window, first.holders...)
			if err != nil || settled != nil || !ack.Duplicate {
				t.Fatalf("first PublishTerminal again = %+v, %+v, %v; want its stored copy (duplicate)", ack, settled, err)
			}

			stored, err := nodes[0].StoredEvents(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var terminals []string
			for _, se := range stored {
				if se.Kind.Terminal() {
					terminals = append(terminals, se.Subject+" "+string(se.Kind))
				}
			}
			if want := RunnerEventSubject(id, tc.wantRunner) + " " + string(tc.wantKind); len(terminals) != 1 || terminals[0] != want {
				t.Errorf("terminal events stored = %q; want exactly [%s]", terminals, want)
			}
		})
	}
}

// TestPublishTerminalCountsOnlyWhatCounts: the condition refuses nothing
// that does not count. Another runner's terminal event, from a runner that
// neither held nor took over the claim (a forgery, refused by the
// orchestrator), does not keep the claim holder from storing its outcome.
func TestPublishTerminalCountsOnlyWhatCounts(t *testing.T) {
	t.Parallel()
	root := queueBus(t)
	ctx := context.Background()
	holder, err := root.AsRunner("r1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := root.AsRunner("r2")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := holder.Claim(ctx, "d-1", "r1"); err != nil || !l.Created {
		t.Fatalf("Claim = %+v, %v", l, err)
	}
	code, ms := 0, int64(1)
	fin := schemas.Event{Kind: schemas.KindFinished, DispatchID: "d-1", Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms}
	if _, err := other.PublishEvent(ctx, fin); err != nil {
		t.Fatal(err)
	}
	ack, settled, err := holder.PublishTerminal(ctx, fin, 10*time.Second)
	if err != nil || settled != nil || ack.Duplicate || ack.Sequence == 0 {
		t.Fatalf("holder's PublishTerminal = %+v, %+v, %v; want its finished stored", ack, settled, err)
	}
	if _, _, err := holder.PublishTerminal(ctx, schemas.Event{Kind: schemas.KindStarted, DispatchID: "d-1", Time: time.Now().UTC()}, time.Second); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("PublishTerminal(started) = %v; want ErrInvalidEvent", err)
	}
}

// decide is b.decideTerminal, tried again while the cluster answers
// with an error (a request timing out on a loaded machine).
func decide(t *testing.T, b *Bus, ev schemas.Event, holders []string) terminalDecision {
	t.Helper()
	var d terminalDecision
	if err := testutil.Poll(t.Context(), 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		d, err = b.decideTerminal(t.Context(), ev, holders)
		return err
	}); err != nil {
		t.Fatalf("decide on %s: %v", ev.Kind, err)
	}
	return d
}

// publishAfter is b.publishAfter, tried again while the error is neither
// the condition's refusal nor permanent (a timeout on a loaded machine;
// the msg-id keeps a retry single).
func publishAfter(t *testing.T, b *Bus, ev schemas.Event, lastSeq uint64) error {
	t.Helper()
	return testutil.Poll(t.Context(), 30*time.Second, 100*time.Millisecond, func() error {
		_, err := b.publishAfter(t.Context(), ev, mustEncode(t, ev), lastSeq)
		if err == nil || errors.Is(err, ErrEventsChanged) || permanent(err) {
			return testutil.Permanent(err)
		}
		return err
	})
}

func mustEncode(t *testing.T, ev schemas.Event) []byte {
	t.Helper()
	data, err := encodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStoredEventsReadFromLeader: a dispatch's events are read from the
// stream's leader even when AGORA_EVENTS allows direct gets (as a stream
// the nats CLI made does): a direct get is answered by any replica, and
// one a moment behind would not have the terminal event a runner decides
// on. The spy sees every request of each API.
func TestStoredEventsReadFromLeader(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	ctx := context.Background()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := eventStreamConfig()
	cfg.AllowDirect = true
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	b, err := Connect(ctx, srv.ClientURL(), Options{Name: t.Name(), Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	r, err := b.AsRunner("r1")
	if err != nil {
		t.Fatal(err)
	}
	code, ms := 0, int64(1)
	for _, pub := range []*Bus{b, r} {
		ev := schemas.Event{Kind: schemas.KindStarted, DispatchID: "d-1", Time: time.Now().UTC()}
		if pub == r {
			ev = schemas.Event{Kind: schemas.KindFinished, DispatchID: "d-1", Time: time.Now().UTC(), ExitCode: &code, DurationMS: &ms}
		}
		if _, err := pub.PublishEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	spy, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spy.Close)
	var mu sync.Mutex
	seen := map[string]int{}
	for _, subj := range []string{"$JS.API.DIRECT.GET." + EventStream, "$JS.API.DIRECT.GET." + EventStream + ".>", "$JS.API.STREAM.MSG.GET." + EventStream} {
		if _, err := spy.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			seen[strings.Join(strings.Split(m.Subject, ".")[:3], ".")]++
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	stored, err := r.StoredEvents(ctx, "d-1")
	if err != nil || len(stored) != 2 || stored[0].Kind != schemas.KindStarted || stored[1].Kind != schemas.KindFinished ||
		stored[1].MsgID != "d-1.dispatch.finished.r1" || stored[1].Time.IsZero() {
		t.Fatalf("StoredEvents = %+v, %v; want started, then r1's finished with its msg-id and time", stored, err)
	}
	if err := spy.Flush(); err != nil { // the requests above reach the spy before this PONG
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["$JS.API.DIRECT"] != 0 || seen["$JS.API.STREAM"] == 0 {
		t.Errorf("requests seen: %v; want only the leader's message-get API", seen)
	}
	if ev, err := r.TerminalEvent(ctx, "no-such-dispatch"); err != nil || ev != nil {
		t.Errorf("TerminalEvent of a dispatch with no events = %+v, %v", ev, err)
	}
}
