package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a Bus to url that logs to t and is closed in t.Cleanup.
func connect(t *testing.T, url string, opts bus.Options) *bus.Bus {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = natstest.Logger(t)
	}
	b, err := bus.Connect(testCtx(t), url, opts)
	if err != nil {
		t.Fatalf("Connect(%s): %v", url, err)
	}
	t.Cleanup(b.Close)
	return b
}

// rawJetStream is a plain nats.go client, to set up what the bus would not.
func rawJetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("nats.Connect(%s): %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return js
}

// freePort is a loopback port nothing listens on (it was free a moment ago).
func freePort(t *testing.T) int { return testutil.FreePort(t) }

var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535000000, time.UTC)

func ptr[T any](v T) *T { return &v }

func started(id string) schemas.Event {
	return schemas.Event{Kind: schemas.KindStarted, DispatchID: id, TaskID: "t-1", Round: 1, Time: t0,
		Subagent: "refactorer", Runtime: schemas.RuntimeExec}
}

func finished(id string) schemas.Event {
	return schemas.Event{Kind: schemas.KindFinished, DispatchID: id, TaskID: "t-1", Round: 1, Time: t0.Add(time.Second),
		ExitCode: ptr(0), DurationMS: ptr(int64(1000))}
}

func failed(id string) schemas.Event {
	return schemas.Event{Kind: schemas.KindFailed, DispatchID: id, Time: t0.Add(2 * time.Second),
		ExitCode: ptr(3), DurationMS: ptr(int64(2000)),
		Failure: &schemas.Failure{Reason: schemas.ReasonProviderFailed, Detail: "runtime exited 3"}}
}

func needsInput(id string) schemas.Event {
	return schemas.Event{
		Kind: schemas.KindNeedsInput, DispatchID: id, TaskID: "t-42", Round: 2, Time: t0,
		Subagent: "refactorer", Runtime: schemas.RuntimeClaudeCode,
		ExitCode: ptr(0), DurationMS: ptr(int64(12345)),
		NeedsInput: &schemas.NeedsInput{
			Question:     "Should I rewrite function A or function B?",
			Options:      []string{"A", "B"},
			Context:      "Both have the same signature.",
			Default:      ptr("A"),
			PartialState: json.RawMessage(`{"done":["parse"],"next":{"step":2,"files":["a.go","b.go"]}}`),
		},
		Usage: &schemas.Usage{Model: "sonnet", Turns: 7, CostUSD: 0.25, InputTokens: 1200, OutputTokens: 300},
	}
}

func TestEnsureEventStreamCreatesItOnceAndIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})
	for i := range 3 {
		if err := b.EnsureEventStream(ctx); err != nil {
			t.Fatalf("EnsureEventStream #%d: %v", i+1, err)
		}
	}
	st, err := rawJetStream(t, s.ClientURL()).Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatalf("Stream(%s): %v", bus.EventStream, err)
	}
	cfg := st.CachedInfo().Config
	if !reflect.DeepEqual(cfg.Subjects, []string{"agora.events.>"}) || cfg.Storage != jetstream.FileStorage ||
		cfg.MaxAge != bus.EventMaxAge || cfg.Duplicates != bus.EventDuplicateWindow {
		t.Fatalf("stream config: subjects %v storage %v max age %s duplicates %s; want [agora.events.>] file %s %s",
			cfg.Subjects, cfg.Storage, cfg.MaxAge, cfg.Duplicates, bus.EventMaxAge, bus.EventDuplicateWindow)
	}
}

func TestEnsureEventStreamConcurrentCreatorsAllSucceed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	// Two connections stand for two processes racing at start-up.
	buses := []*bus.Bus{connect(t, s.ClientURL(), bus.Options{}), connect(t, s.ClientURL(), bus.Options{})}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() { errs <- buses[i%2].EnsureEventStream(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent EnsureEventStream: %v", err)
		}
	}
}

func TestEnsureEventStreamUpdatesDriftedConfig(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	js := rawJetStream(t, s.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: bus.EventStream, Subjects: []string{"agora.events.>"}, Storage: jetstream.FileStorage,
		MaxAge: time.Hour, Duplicates: time.Minute,
	}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	b := connect(t, s.ClientURL(), bus.Options{})
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream on a drifted stream: %v", err)
	}
	st, err := js.Stream(ctx, bus.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.MaxAge != bus.EventMaxAge || cfg.Duplicates != bus.EventDuplicateWindow {
		t.Fatalf("after EnsureEventStream: max age %s duplicates %s, want %s %s",
			cfg.MaxAge, cfg.Duplicates, bus.EventMaxAge, bus.EventDuplicateWindow)
	}
}

func TestPublishEventRoundTripCreatesStream(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})

	// No EnsureEventStream: the first publish creates the stream.
	want := []schemas.Event{started("d-1"), needsInput("d-1")}
	for i, ev := range want {
		ack, err := b.PublishEvent(ctx, ev)
		if err != nil {
			t.Fatalf("PublishEvent(%s): %v", ev.Kind, err)
		}
		if ack.Stream != bus.EventStream || ack.Sequence != uint64(i+1) || ack.Duplicate || ack.Attempts != 1 {
			t.Fatalf("PublishEvent(%s) = %+v, want stream %s seq %d, not duplicate, 1 attempt",
				ev.Kind, ack, bus.EventStream, i+1)
		}
	}
	// Another dispatch's event is not among d-1's.
	if _, err := b.PublishEvent(ctx, finished("d-2")); err != nil {
		t.Fatalf("PublishEvent(d-2): %v", err)
	}

	got, err := b.Events(ctx, "d-1")
	if err != nil {
		t.Fatalf("Events(d-1): %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("Events(d-1):\n got %s\nwant %s", gj, wj)
	}

	stored, err := b.StoredEvents(ctx, "d-1")
	if err != nil {
		t.Fatalf("StoredEvents(d-1): %v", err)
	}
	for i, se := range stored {
		if wantID := want[i].MsgID(); se.MsgID != wantID {
			t.Errorf("stored event %d: Nats-Msg-Id %q, want %q", i, se.MsgID, wantID)
		}
	}
}

func TestPublishSameMsgIDTwiceIsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})

	first, err := b.PublishEvent(ctx, finished("d-dup"))
	if err != nil {
		t.Fatalf("PublishEvent #1: %v", err)
	}
	// A retried or recovered copy: same dispatch and kind, other details.
	again := finished("d-dup")
	again.Time = again.Time.Add(time.Minute)
	second, err := b.PublishEventRetry(ctx, again, 5*time.Second)
	if err != nil {
		t.Fatalf("PublishEventRetry #2: %v", err)
	}
	if first.Duplicate || !second.Duplicate || second.Sequence != first.Sequence {
		t.Fatalf("acks %+v then %+v; want the second a duplicate of sequence %d", first, second, first.Sequence)
	}
	stored, err := b.StoredEvents(ctx, "d-dup")
	if err != nil {
		t.Fatalf("StoredEvents: %v", err)
	}
	if len(stored) != 1 {
		t.Fatalf("StoredEvents: %d events stored, want 1", len(stored))
	}
	got, err := b.Events(ctx, "d-dup")
	if err != nil || len(got) != 1 || !got[0].Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("Events = %+v, %v; want the first copy only", got, err)
	}
}

func TestTerminalEvent(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})

	// Before the stream exists.
	if ev, err := b.TerminalEvent(ctx, "d-t"); ev != nil || err != nil {
		t.Fatalf("TerminalEvent with no stream = %+v, %v; want nil, nil", ev, err)
	}
	if _, err := b.PublishEvent(ctx, started("d-t")); err != nil {
		t.Fatal(err)
	}
	if ev, err := b.TerminalEvent(ctx, "d-t"); ev != nil || err != nil {
		t.Fatalf("TerminalEvent after started = %+v, %v; want nil, nil", ev, err)
	}
	if _, err := b.PublishEvent(ctx, failed("d-t")); err != nil {
		t.Fatal(err)
	}
	// A second terminal event (a bug elsewhere) does not replace the first.
	if _, err := b.PublishEvent(ctx, finished("d-t")); err != nil {
		t.Fatal(err)
	}
	ev, err := b.TerminalEvent(ctx, "d-t")
	if err != nil {
		t.Fatalf("TerminalEvent: %v", err)
	}
	if want := failed("d-t"); ev == nil || !reflect.DeepEqual(*ev, want) {
		t.Fatalf("TerminalEvent = %+v, want %+v", ev, want)
	}
}

func TestEventsSkipsUnknownKindsAndJunk(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatal(err)
	}
	js := rawJetStream(t, s.ClientURL())
	subject := bus.EventSubject("d-u")
	for _, body := range []string{
		`{"kind":"dispatch.progress","dispatch_id":"d-u","time":"2025-03-14T15:09:26Z","percent":50}`,
		`not json`,
		`{"kind":"dispatch.started","dispatch_id":"someone-else","time":"2025-03-14T15:09:26Z"}`,
		// A duplicated key is refused, not read as its last value (docs/contract.md, "Reading JSON").
		`{"kind":"dispatch.started","dispatch_id":"someone-else","dispatch_id":"d-u","time":"2025-03-14T15:09:26Z"}`,
	} {
		if _, err := js.Publish(ctx, subject, []byte(body)); err != nil {
			t.Fatalf("raw publish: %v", err)
		}
	}
	if _, err := b.PublishEvent(ctx, started("d-u")); err != nil {
		t.Fatal(err)
	}

	got, err := b.Events(ctx, "d-u")
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(got) != 1 || got[0].Kind != schemas.KindStarted {
		t.Fatalf("Events = %+v, want only the started event", got)
	}
	stored, err := b.StoredEvents(ctx, "d-u")
	if err != nil {
		t.Fatalf("StoredEvents: %v", err)
	}
	var kinds []schemas.EventKind
	for _, se := range stored {
		kinds = append(kinds, se.Kind)
	}
	want := []schemas.EventKind{"dispatch.progress", "", schemas.KindStarted, "", schemas.KindStarted}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("StoredEvents kinds = %q, want %q", kinds, want)
	}
}

func TestPublishEventRetryGivesUpWithinWindowWhenNothingListens(t *testing.T) {
	t.Parallel()
	url := "nats://127.0.0.1:" + strconv.Itoa(freePort(t))
	var retries int
	start := time.Now()
	b := connect(t, url, bus.Options{OnRetry: func(int, error) { retries++ }})
	if b.Connected() {
		t.Fatalf("Connected() = true with nothing listening at %s", url)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Fatalf("Connect to a dead server took %s, want at most the connect timeout", elapsed)
	}

	const window = time.Second
	start = time.Now()
	_, err := b.PublishEventRetry(testCtx(t), finished("d-down"), window)
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("PublishEventRetry with nothing listening succeeded, want an error")
	}
	t.Logf("PublishEventRetry error: %v", err)
	if !errors.Is(err, bus.ErrNotConnected) || !strings.Contains(err.Error(), "attempts") {
		t.Errorf("PublishEventRetry error = %q, want ErrNotConnected and the number of attempts", err)
	}
	if elapsed > window+time.Second {
		t.Errorf("PublishEventRetry took %s, want under window %s + 1s", elapsed, window)
	}
	if retries < 1 {
		t.Errorf("PublishEventRetry retried %d times, want at least 1", retries)
	}
}

func TestPublishEventRetrySucceedsWhenServerStartsDuringWindow(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	var (
		started *natsserver.Server
		retries int
	)
	b := connect(t, "nats://127.0.0.1:"+strconv.Itoa(port), bus.Options{
		OnRetry: func(attempt int, err error) {
			retries++
			if started == nil {
				t.Logf("attempt %d failed (%v); starting the server", attempt, err)
				started = natstest.StartWith(t, natsserver.Config{Port: port})
			}
		},
	})
	ctx := testCtx(t)
	ack, err := b.PublishEventRetry(ctx, finished("d-late"), 20*time.Second)
	if err != nil {
		t.Fatalf("PublishEventRetry: %v", err)
	}
	if started == nil || ack.Attempts < 2 || ack.Attempts != retries+1 || ack.Duplicate {
		t.Fatalf("ack %+v after %d retries (server started: %v); want > 1 attempts, one per retry plus one",
			ack, retries, started != nil)
	}
	ev, err := b.TerminalEvent(ctx, "d-late")
	if err != nil || ev == nil || ev.Kind != schemas.KindFinished {
		t.Fatalf("TerminalEvent = %+v, %v; want the finished event", ev, err)
	}
}

func TestEventsSurviveServerRestartAndBusReconnects(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})
	if _, err := b.PublishEvent(ctx, started("d-r")); err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, s)
	// The same Bus reconnects in the background; the retry covers the gap.
	if _, err := b.PublishEventRetry(ctx, finished("d-r"), 20*time.Second); err != nil {
		t.Fatalf("PublishEventRetry after restart: %v", err)
	}
	got, err := b.Events(ctx, "d-r")
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(got) != 2 || got[0].Kind != schemas.KindStarted || got[1].Kind != schemas.KindFinished {
		t.Fatalf("Events after restart = %+v, want started then finished", got)
	}
}

func TestPublishEventTooLarge(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	var retries int
	b := connect(t, s.ClientURL(), bus.Options{OnRetry: func(int, error) { retries++ }})
	if got := b.MaxPayload(); got != 1<<20 {
		t.Fatalf("MaxPayload() = %d, want NATS's default %d", got, 1<<20)
	}

	ev := needsInput("d-big")
	// A JSON string just under 1 MiB: the event around it and its headers tip it over.
	big := `"` + strings.Repeat("x", 1<<20-64) + `"`
	ev.NeedsInput.PartialState = json.RawMessage(big)

	_, err := b.PublishEvent(ctx, ev)
	if !errors.Is(err, bus.ErrEventTooLarge) || !strings.Contains(err.Error(), "partial_state_ref") {
		t.Fatalf("PublishEvent(~1 MiB) error = %v, want ErrEventTooLarge mentioning partial_state_ref", err)
	}
	start := time.Now()
	_, err = b.PublishEventRetry(ctx, ev, 10*time.Second)
	if !errors.Is(err, bus.ErrEventTooLarge) {
		t.Fatalf("PublishEventRetry(~1 MiB) error = %v, want ErrEventTooLarge", err)
	}
	if retries != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("PublishEventRetry(~1 MiB) retried %d times in %s, want no retry", retries, time.Since(start))
	}
	if stored, err := b.StoredEvents(ctx, "d-big"); err != nil || len(stored) != 0 {
		t.Fatalf("StoredEvents = %d events, %v; want none", len(stored), err)
	}
}

func TestPublishInvalidEventIsNotRetried(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	var retries int
	b := connect(t, s.ClientURL(), bus.Options{OnRetry: func(int, error) { retries++ }})

	noExitCode := finished("d-bad")
	noExitCode.ExitCode = nil
	unknownKind := started("d-bad")
	unknownKind.Kind = "dispatch.progress"
	for name, ev := range map[string]schemas.Event{
		"finished without exit_code": noExitCode,
		"unknown kind":               unknownKind,
		"dispatch id with a dot":     started("d.bad"),
		"empty dispatch id":          started(""),
	} {
		_, err := b.PublishEventRetry(ctx, ev, 5*time.Second)
		if !errors.Is(err, bus.ErrInvalidEvent) {
			t.Errorf("%s: PublishEventRetry error = %v, want ErrInvalidEvent", name, err)
		}
	}
	if retries != 0 {
		t.Errorf("invalid events were retried %d times, want 0", retries)
	}
}

func TestPublishEventRetryStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(testCtx(t))
	stop := errors.New("stopped by test")
	b := connect(t, "nats://127.0.0.1:"+strconv.Itoa(freePort(t)), bus.Options{
		OnRetry: func(int, error) { cancel(stop) },
	})
	start := time.Now()
	_, err := b.PublishEventRetry(ctx, finished("d-ctx"), time.Minute)
	if !errors.Is(err, stop) {
		t.Fatalf("PublishEventRetry after cancel: err = %v, want %v", err, stop)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("PublishEventRetry returned %s after cancel, want promptly", elapsed)
	}
}

func TestClosedBus(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := natstest.Start(t)
	b := connect(t, s.ClientURL(), bus.Options{})
	b.Close()
	b.Close() // idempotent
	if _, err := b.PublishEventRetry(ctx, started("d-c"), 5*time.Second); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("PublishEventRetry on a closed bus: err = %v, want ErrClosed", err)
	}
	if _, err := b.Events(ctx, "d-c"); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("Events on a closed bus: err = %v, want ErrClosed", err)
	}
	if err := b.EnsureEventStream(ctx); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("EnsureEventStream on a closed bus: err = %v, want ErrClosed", err)
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := bus.Connect(ctx, "nats://127.0.0.1:4222", bus.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := bus.Connect(context.Background(), "nats://bad url:x", bus.Options{}); err == nil {
		t.Errorf("Connect(malformed url) succeeded, want an error")
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	for got, want := range map[string]string{
		bus.EventSubject("d-1"):   "agora.events.d-1",
		bus.LogSubject("d-1"):     "agora.logs.d-1",
		bus.ControlSubject("d-1"): "agora.control.d-1",
	} {
		if got != want {
			t.Errorf("subject %q, want %q", got, want)
		}
	}
	for id, ok := range map[string]bool{
		"d-1": true, "01HZX9K3T4ZK": true, "": false, "a.b": false, "a*": false, "a>": false, "a b": false,
	} {
		if err := bus.ValidateDispatchID(id); (err == nil) != ok {
			t.Errorf("ValidateDispatchID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}
