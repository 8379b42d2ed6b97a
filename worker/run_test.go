package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// runFixture is a real embedded NATS server, a client to read the stored
// events back, and the config of one in-process worker run.
type runFixture struct {
	bus    *bus.Bus
	cfg    Config
	stdout *testutil.Buffer
}

func newRunFixture(t *testing.T, id string, command ...string) *runFixture {
	t.Helper()
	srv := natstest.Start(t)
	b, err := bus.Connect(context.Background(), srv.ClientURL(), bus.Options{Name: "worker test " + t.Name()})
	if err != nil {
		t.Fatalf("connect to test NATS: %v", err)
	}
	t.Cleanup(b.Close)
	spec := &schemas.DispatchSpec{DispatchID: id, TaskID: "t-" + id, Round: 1,
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: command}}
	specFile := writeSpec(t, t.TempDir(), spec)
	stdout := &testutil.Buffer{}
	return &runFixture{bus: b, stdout: stdout, cfg: Config{
		DispatchID: id,
		SpecFile:   specFile,
		Workspace:  t.TempDir(),
		NATSURL:    srv.ClientURL(),
		Grace:      time.Second,
		Environ:    []string{"PATH=/usr/bin:/bin"},
		Adapters:   []adapters.Adapter{exec.New()},
		Stdout:     stdout,
		Logger:     natstest.Logger(t),
	}}
}

func writeSpec(t testing.TB, dir string, spec *schemas.DispatchSpec) string {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// kinds are the kinds of the events printed on stdout and stored in NATS.
func (f *runFixture) kinds(t *testing.T) (printed, stored []schemas.EventKind) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(f.stdout.String()))
	for sc.Scan() {
		ev, err := schemas.ParseEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("stdout line %q is not an event: %v", sc.Text(), err)
		}
		printed = append(printed, ev.Kind)
	}
	events, err := f.bus.Events(context.Background(), f.cfg.DispatchID)
	if err != nil {
		t.Fatalf("read stored events: %v", err)
	}
	for _, ev := range events {
		stored = append(stored, ev.Kind)
	}
	return printed, stored
}

// signalWriter closes seen once want has been written to it.
type signalWriter struct {
	want string
	seen chan struct{}
	once sync.Once
	buf  testutil.Buffer
}

func (w *signalWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// TestRunCancelDuringRuntime: cancelling Run's context while the runtime
// runs stops it and ends the dispatch cancelled, published, with every
// timing filled in.
func TestRunCancelDuringRuntime(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t, "d-cancel-runtime", "sh", "-c", "echo ready; sleep 30")
	ready := &signalWriter{want: "ready", seen: make(chan struct{})}
	f.cfg.Stderr = ready // the runtime's stdout and stderr go to the worker's stderr

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, f.cfg) }()
	select {
	case <-ready.seen:
	case res := <-done:
		t.Fatalf("Run ended before the runtime was ready: %+v\nruntime output: %s", res.Terminal, ready.buf.String())
	case <-time.After(20 * time.Second):
		t.Fatal("the runtime did not start within 20s")
	}
	cancel()
	var res Result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of the cancel")
	}

	if res.Terminal.Kind != schemas.KindCancelled || res.ExitCode != ExitOK || res.Terminal.ExitCode == nil || *res.Terminal.ExitCode != ExitOK {
		t.Errorf("Run = %s with exit code %d (event %v), want %s with 0", res.Terminal.Kind, res.ExitCode, res.Terminal.ExitCode, schemas.KindCancelled)
	}
	if !res.Published {
		t.Errorf("Run Published = false, want the cancelled event acknowledged by NATS")
	}
	if res.Terminal.DurationMS == nil {
		t.Errorf("terminal event has no duration_ms")
	}
	tm := res.Timings
	points := []time.Time{tm.Start, tm.RuntimeExec, tm.RuntimeExit, tm.Done}
	if slices.ContainsFunc(points, time.Time.IsZero) || !slices.IsSortedFunc(points, time.Time.Compare) {
		t.Errorf("Timings = %+v, want Start ≤ RuntimeExec ≤ RuntimeExit ≤ Done, none zero", tm)
	}
	// The runtime was stopped, not waited out.
	if ran := tm.RuntimeExit.Sub(tm.RuntimeExec); ran > 15*time.Second {
		t.Errorf("runtime ran %s after the cancel; want it stopped well before its 30s sleep", ran)
	}
	printed, stored := f.kinds(t)
	want := []schemas.EventKind{schemas.KindStarted, schemas.KindCancelled}
	if !slices.Equal(printed, want) || !slices.Equal(stored, want) {
		t.Errorf("events printed %v, stored %v; want %v for both", printed, stored, want)
	}
}

// TestRunCancelledBeforeStart: a cancel that comes before the workspace is
// touched ends the dispatch cancelled, with no dispatch.started, no runtime
// and an untouched workspace, and is still published.
func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t, "d-cancel-early", "sh", "-c", "touch ran")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	res := Run(ctx, f.cfg)
	if res.Terminal.Kind != schemas.KindCancelled || res.ExitCode != ExitOK || !res.Published {
		t.Errorf("Run = %s, exit code %d, published %t; want %s, 0, true", res.Terminal.Kind, res.ExitCode, res.Published, schemas.KindCancelled)
	}
	if !res.Timings.RuntimeExec.IsZero() || res.Timings.Done.IsZero() {
		t.Errorf("Timings = %+v, want no runtime and a Done", res.Timings)
	}
	printed, stored := f.kinds(t)
	want := []schemas.EventKind{schemas.KindCancelled}
	if !slices.Equal(printed, want) || !slices.Equal(stored, want) {
		t.Errorf("events printed %v, stored %v; want %v for both", printed, stored, want)
	}
	if entries, err := os.ReadDir(f.cfg.Workspace); err != nil || len(entries) != 0 {
		t.Errorf("workspace holds %v (%v), want it untouched", entries, err)
	}
}

// TestRunSignsEventLines: with an event key file the worker deletes the file
// before the runtime starts and signs every stdout line with the key; the
// lines published to NATS carry no mac.
func TestRunSignsEventLines(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t, "d-signed", "/bin/sh", "-c", `test ! -e "$KEYFILE" || { echo "key file still there" >&2; exit 4; }`)
	key := bytes.Repeat([]byte{0x5a}, schemas.EventKeyBytes)
	keyFile := filepath.Join(t.TempDir(), "event.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.cfg.EventKeyFile = keyFile
	f.cfg.Environ = append(f.cfg.Environ, "KEYFILE="+keyFile, "AGORA_PASSTHROUGH_ENV=KEYFILE")
	res := Run(context.Background(), f.cfg)
	if res.Terminal.Kind != schemas.KindFinished {
		t.Fatalf("run ended %s %+v", res.Terminal.Kind, res.Terminal.Failure)
	}
	lines := strings.Split(strings.TrimSpace(f.stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout = %q; want started and finished", lines)
	}
	for _, l := range lines {
		if _, ok := schemas.VerifyEventLine(key, []byte(l)); !ok {
			t.Errorf("stdout line does not verify: %s", l)
		}
	}
	events, err := f.bus.Events(context.Background(), "d-signed")
	if err != nil || len(events) != 2 {
		t.Fatalf("stored events = %d, %v", len(events), err)
	}
	if _, err := os.Stat(keyFile); err == nil {
		t.Error("the key file is still there")
	}
}

// TestRunPublishesWithDispatchCredentials: against a NATS that refuses
// anonymous clients, the worker publishes with the per-dispatch credentials
// the runner gave it, and deletes their file before the runtime starts.
func TestRunPublishesWithDispatchCredentials(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	b, err := bus.Connect(context.Background(), srv.ClientURL(), bus.Options{Name: "worker test " + t.Name(),
		Auth: bus.Auth{CredsFile: ids.Path(natsauth.OrchestratorCredFile)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureEventStream(context.Background()); err != nil {
		t.Fatalf("EnsureEventStream: %v", err)
	}
	signer, err := ids.LoadSigner()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := signer.Worker("d-creds", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	credsFile := filepath.Join(t.TempDir(), "nats.creds")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	f := newRunFixture(t, "d-creds", "/bin/sh", "-c", `test ! -e "$CREDS" || { echo "creds file still there" >&2; exit 4; }`)
	f.bus = b
	f.cfg.NATSURL = srv.ClientURL()
	f.cfg.NATSCredsFile = credsFile
	f.cfg.Environ = append(f.cfg.Environ, "CREDS="+credsFile, "AGORA_PASSTHROUGH_ENV=CREDS")
	res := Run(context.Background(), f.cfg)
	if res.Terminal.Kind != schemas.KindFinished || !res.Published {
		t.Fatalf("run ended %s %+v, published %v; want finished and published", res.Terminal.Kind, res.Terminal.Failure, res.Published)
	}
	_, stored := f.kinds(t)
	if want := []schemas.EventKind{schemas.KindStarted, schemas.KindFinished}; !slices.Equal(stored, want) {
		t.Fatalf("stored events %v, want %v", stored, want)
	}
}
