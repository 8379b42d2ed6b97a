package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// runnerBus connects as runnerID with its own credentials and inbox, and
// returns the view that publishes as that runner.
func runnerBus(t *testing.T, url string, ids *natsauth.Identities, runnerID string) *bus.Bus {
	t.Helper()
	path, err := ids.RunnerCreds(runnerID, natsauth.RunnerCredsFile(runnerID))
	if err != nil {
		t.Fatal(err)
	}
	b := connect(t, url, bus.Options{Name: runnerID, Auth: bus.Auth{CredsFile: path}, InboxPrefix: bus.RunnerInboxPrefix(runnerID)})
	if !b.Connected() {
		t.Fatalf("runner %s: not connected", runnerID)
	}
	rb, err := b.AsRunner(runnerID)
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

// applied records what an EventConsumer applied and parked.
type applied struct {
	mu     sync.Mutex
	events []schemas.Event
	parked []bus.ParkedEvent
}

func (a *applied) snapshot() ([]schemas.Event, []bus.ParkedEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]schemas.Event(nil), a.events...), append([]bus.ParkedEvent(nil), a.parked...)
}

// TestRunnerCredentialsScoped (issue 20, finding 5): a runner's own user
// does everything a runner does — the queue, its claim, its events, logs,
// cancels — and nothing else: with one runner's credentials, an event for
// a dispatch another runner holds is refused (parked, never applied), an
// event on the dispatch's own subject cannot be published at all, and the
// tasks bucket, the live logs and the orchestrator's replies cannot be
// read.
func TestRunnerCredentialsScoped(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	url := srv.ClientURL()
	orch, kv := orchestratorBus(t, url, ids)
	ctx := testCtx(t)
	if err := orch.EnsureQueue(ctx); err != nil {
		t.Fatalf("EnsureQueue: %v", err)
	}
	rec := &applied{}
	cctx, stop := context.WithCancel(context.Background())
	c := &bus.EventConsumer{Durable: "orchestrator",
		Apply: func(_ context.Context, ev schemas.Event) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.events = append(rec.events, ev)
			return nil
		},
		Park: func(_ context.Context, p bus.ParkedEvent) error {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			rec.parked = append(rec.parked, p)
			return nil
		}}
	if err := orch.ConsumeEvents(cctx, c); err != nil {
		t.Fatalf("ConsumeEvents: %v", err)
	}
	t.Cleanup(func() { stop(); <-c.Done() })

	r1 := runnerBus(t, url, ids, "r1")
	r2 := runnerBus(t, url, ids, "host2.example.com")

	// r1 does what a runner does, with its own credentials only.
	if err := r1.EnsureEventStream(ctx); err != nil {
		t.Fatalf("runner EnsureEventStream: %v", err)
	}
	if err := r1.EnsureQueue(ctx); err != nil {
		t.Fatalf("runner EnsureQueue: %v", err)
	}
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	if err := r1.WatchControl(wctx, func(string, string) {}); err != nil {
		t.Fatalf("runner WatchControl: %v", err)
	}
	if _, err := orch.Enqueue(ctx, schemas.DispatchRequest{Spec: schemas.DispatchSpec{DispatchID: "d-1",
		Subagent: schemas.Subagent{Name: "x", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}}); err != nil {
		t.Fatal(err)
	}
	del, err := r1.Fetch(ctx, 5*time.Second)
	if err != nil || del == nil || del.Request == nil {
		t.Fatalf("runner Fetch = %+v, %v; want d-1's request", del, err)
	}
	if _, err := r1.CreateClaim(ctx, "d-1", bus.Claim{State: bus.ClaimRunning, Runner: "r1", Heartbeat: time.Now().UTC()}); err != nil {
		t.Fatalf("runner CreateClaim: %v", err)
	}
	if cl, err := r1.GetClaim(ctx, "d-1"); err != nil || cl == nil || cl.Runner != "r1" {
		t.Fatalf("runner GetClaim = %+v, %v", cl, err)
	}
	if err := del.InProgress(); err != nil {
		t.Fatalf("runner InProgress: %v", err)
	}
	if _, err := r1.CancelRequested(ctx, "d-1"); err != nil {
		t.Fatalf("runner CancelRequested: %v", err)
	}
	if err := r1.PublishLog("d-1", []byte("hello\n")); err != nil {
		t.Fatalf("runner PublishLog: %v", err)
	}
	if _, err := r1.PublishEvent(ctx, started("d-1")); err != nil {
		t.Fatalf("runner PublishEvent(started): %v", err)
	}
	if evs, err := r1.Events(ctx, "d-1"); err != nil || len(evs) != 1 {
		t.Fatalf("runner Events(d-1) = %v, %v; want its started", evs, err)
	}
	testutil.Eventually(t, 10*time.Second, "r1's started applied", func() bool {
		evs, _ := rec.snapshot()
		return len(evs) == 1
	})

	// r2 claims to have finished r1's dispatch: stored on r2's subject,
	// refused by the consumer, parked, never applied.
	if _, err := r2.PublishEvent(ctx, finished("d-1")); err != nil {
		t.Fatalf("r2 PublishEvent on its own subject: %v", err)
	}
	testutil.Eventually(t, 10*time.Second, "r2's finished parked", func() bool {
		_, parked := rec.snapshot()
		return len(parked) == 1
	})
	evs, parked := rec.snapshot()
	if len(evs) != 1 || evs[0].Kind != schemas.KindStarted {
		t.Errorf("applied = %+v; want only r1's started", evs)
	}
	if p := parked[0]; p.Kind != schemas.KindFinished || p.Subject != bus.RunnerEventSubject("d-1", "host2.example.com") ||
		!strings.Contains(p.Error, "r1 runs it") {
		t.Errorf("parked = %+v; want r2's finished, refused because r1 runs it", p)
	}
	// Nor does any reader count it: r1 still has an outcome to publish.
	for name, b := range map[string]*bus.Bus{"r1": r1, "orchestrator": orch} {
		if ev, err := b.TerminalEvent(ctx, "d-1"); err != nil || ev != nil {
			t.Errorf("%s: TerminalEvent(d-1) = %+v, %v; want none (r2's is not the claim holder's)", name, ev, err)
		}
	}
	if err := orch.CheckRunnerEvent(ctx, finished("d-1"), "host2.example.com"); !errors.Is(err, bus.ErrNotClaimant) {
		t.Errorf("CheckRunnerEvent(r2) = %v; want ErrNotClaimant", err)
	}

	// Nor can r2 publish on the dispatch's own subject (the worker's and
	// the orchestrator's), read the tasks, follow the logs or the
	// orchestrator's replies.
	nc, errs := runnerConn(t, url, ids, "host2.example.com")
	if _, err := nc.Request(bus.EventSubject("d-1"), []byte(`{}`), time.Second); err == nil {
		t.Error("r2 published on agora.events.d-1 and was answered; want a permissions violation")
	}
	if _, err := nc.Request("$JS.API.DIRECT.GET.KV_"+tasksBucket+".$KV."+tasksBucket+".t-1", nil, time.Second); err == nil {
		t.Errorf("r2 read %s's t-1; want refused", tasksBucket)
	}
	for _, subj := range []string{"agora.logs.>", "_INBOX.>", "agora.events.>"} {
		if _, err := nc.SubscribeSync(subj); err == nil {
			if err := nc.Flush(); err == nil {
				select {
				case err := <-errs:
					if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
						t.Errorf("subscribe %s: %v; want a permissions violation", subj, err)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("r2 subscribed to %s; want a permissions violation", subj)
				}
			}
		}
	}
	if _, err := r2.KeyValue(refusedCtx(t), tasksBucket, "tasks"); err == nil {
		t.Errorf("r2 opened %s; want refused", tasksBucket)
	}
	if v, _, err := kv.Get(ctx, "t-1"); err != nil || string(v) != `{"state":"needs_input"}` {
		t.Fatalf("Get(t-1) = %s, %v; want the orchestrator's value", v, err)
	}

	// Nor does rewriting the claim (every runner writes agora_claims) make
	// r2 the dispatch's runner: r1's events were accepted first.
	cl, err := r2.GetClaim(ctx, "d-1")
	if err != nil || cl == nil {
		t.Fatalf("r2 GetClaim = %+v, %v", cl, err)
	}
	if _, err := r2.UpdateClaim(ctx, "d-1", bus.Claim{State: bus.ClaimRunning, Runner: "host2.example.com", Heartbeat: time.Now().UTC()}, cl.Revision); err != nil {
		t.Fatalf("r2 UpdateClaim: %v", err)
	}
	if _, err := r2.PublishEvent(ctx, failed("d-1")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "r2's failed parked", func() bool {
		_, parked := rec.snapshot()
		return len(parked) == 2
	})
	if _, parked := rec.snapshot(); !strings.Contains(parked[1].Error, "runner r1 runs it") {
		t.Errorf("parked = %+v; want r2's failed, refused because r1 runs it", parked[1])
	}

	// The dispatch's runner finishes it; that applies.
	if _, err := r1.PublishEvent(ctx, finished("d-1")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "r1's finished applied", func() bool {
		evs, _ := rec.snapshot()
		return len(evs) == 2 && evs[1].Kind == schemas.KindFinished
	})
	if ev, err := orch.TerminalEvent(ctx, "d-1"); err != nil || ev == nil || ev.Kind != schemas.KindFinished {
		t.Errorf("orchestrator: TerminalEvent(d-1) = %+v, %v; want r1's finished", ev, err)
	}
	if evs, _ := rec.snapshot(); len(evs) != 2 {
		t.Errorf("applied = %+v; want r1's started and finished only", evs)
	}
	if err := del.Ack(ctx); err != nil {
		t.Fatalf("runner Ack: %v", err)
	}
}

// runnerConn is a raw connection with runnerID's credentials, reporting
// permission errors.
func runnerConn(t *testing.T, url string, ids *natsauth.Identities, runnerID string) (*nats.Conn, <-chan error) {
	t.Helper()
	path, err := ids.RunnerCreds(runnerID, natsauth.RunnerCredsFile(runnerID))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserCredentials(path), nats.CustomInboxPrefix(bus.RunnerInboxPrefix(runnerID)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// TestCheckRunnerEvent: whose event counts, in order — a cancel's claim
// lets any runner's dispatch.cancelled through; the claim's holder is the
// dispatch's runner from its first accepted event on, whatever the claim
// says later; another runner only through a worker-lost failure after
// taking the claim over as lost.
func TestCheckRunnerEvent(t *testing.T) {
	t.Parallel()
	b := connect(t, natstest.Start(t).ClientURL(), bus.Options{})
	ctx := testCtx(t)
	if err := b.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	lost := failed("d-1")
	lost.Failure = &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: "runner a stopped renewing its claim"}
	claim := func(c bus.Claim) {
		t.Helper()
		old, err := b.GetClaim(ctx, "d-1")
		if err != nil {
			t.Fatal(err)
		}
		if old == nil {
			_, err = b.CreateClaim(ctx, "d-1", c)
		} else {
			_, err = b.UpdateClaim(ctx, "d-1", c, old.Revision)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cancelled := bus.CancelledBeforeStart("d-0")
	if _, err := b.CreateClaim(ctx, "d-0", bus.Claim{State: bus.ClaimCancelled}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		claim  *bus.Claim
		ev     schemas.Event
		runner string
		ok     bool
	}{
		{"no claim", nil, started("d-1"), "a", false},
		{"a cancel's claim, cancelled", nil, cancelled, "b", true},
		{"a cancel's claim, finished", nil, finished("d-0"), "b", false},
		{"the holder's first event", &bus.Claim{State: bus.ClaimRunning, Runner: "a"}, started("d-1"), "a", true},
		{"another runner", nil, finished("d-1"), "b", false},
		{"another runner after rewriting the claim", &bus.Claim{State: bus.ClaimRunning, Runner: "b"}, finished("d-1"), "b", false},
		{"the dispatch's runner, the claim rewritten", nil, needsInput("d-1"), "a", true},
		{"a lost claim's new holder, not worker-lost", &bus.Claim{State: bus.ClaimLost, Runner: "c"}, finished("d-1"), "c", false},
		{"a lost claim's new holder, worker-lost", nil, lost, "c", true},
		{"the old runner after the takeover", nil, finished("d-1"), "a", false},
	}
	for _, st := range steps {
		if st.claim != nil {
			claim(*st.claim)
		}
		err := b.CheckRunnerEvent(ctx, st.ev, st.runner)
		if st.ok && err != nil || !st.ok && !errors.Is(err, bus.ErrNotClaimant) {
			t.Errorf("%s: CheckRunnerEvent(%s of %s from %s) = %v; want ok %v", st.name, st.ev.Kind, st.ev.DispatchID, st.runner, err, st.ok)
		}
	}
}
