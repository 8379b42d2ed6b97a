package main

// End-to-end tests of the worker as it runs in a container: the real
// agora-worker binary as a separate process, a real embedded NATS server and
// filesystem storage. Every row of the outcome table in docs/contract.md and
// every sentinel rule is here; each test checks that the exit code, the
// stdout line and the event stored in AGORA_EVENTS agree, and that the
// dispatch has exactly one dispatch.started and one terminal event.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// env is the shared fixture of one test: NATS, storage and a workspace.
type env struct {
	t         *testing.T
	natsURL   string
	bus       *bus.Bus
	storeDir  string
	store     storage.Store
	workspace string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := natstest.Start(t)
	ctx := context.Background()
	b, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "e2e " + t.Name()})
	if err != nil {
		t.Fatalf("connect to test NATS: %v", err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatalf("EnsureEventStream: %v", err)
	}
	storeDir := t.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		t.Fatalf("open storage: %v", err)
	}
	return &env{t: t, natsURL: srv.ClientURL(), bus: b, storeDir: storeDir, store: store, workspace: t.TempDir()}
}

var dispatchSeq atomic.Int64

// spec returns an exec spec for script with a fresh dispatch id.
func (e *env) spec(script string) *schemas.DispatchSpec {
	id := fmt.Sprintf("d-%d-%d", testutil.RunNumber(), dispatchSeq.Add(1))
	return &schemas.DispatchSpec{
		DispatchID: id, TaskID: "t-" + id, Round: 1,
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script}},
		Input:    json.RawMessage(`{"repo":"example"}`),
	}
}

// outcome is everything one worker run left behind.
type outcome struct {
	exitCode int
	stdout   []schemas.Event
	stderr   string
	stored   []schemas.Event
	elapsed  time.Duration
	// checkStored: a bus was there to store the events.
	checkStored bool
}

func (o *outcome) terminal(t *testing.T) schemas.Event {
	t.Helper()
	if len(o.stdout) == 0 {
		t.Fatalf("no events on stdout; stderr:\n%s", o.stderr)
	}
	return o.stdout[len(o.stdout)-1]
}

type runOpt func(*exec.Cmd)

func withEnv(kv ...string) runOpt { return func(c *exec.Cmd) { c.Env = append(c.Env, kv...) } }

// start launches the worker binary for spec without waiting.
func (e *env) start(spec *schemas.DispatchSpec, opts ...runOpt) (*exec.Cmd, *testutil.Buffer, *testutil.Buffer) {
	e.t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		e.t.Fatal(err)
	}
	specFile := filepath.Join(e.t.TempDir(), "spec.json")
	if err := os.WriteFile(specFile, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.startRaw(spec.DispatchID, specFile, opts...)
}

func (e *env) startRaw(id, specFile string, opts ...runOpt) (*exec.Cmd, *testutil.Buffer, *testutil.Buffer) {
	e.t.Helper()
	cmd := exec.Command(workerBin)
	cmd.Env = []string{
		"PATH=" + fakeBinDir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + e.workspace,
		"AGORA_DISPATCH_ID=" + id,
		"AGORA_SPEC_FILE=" + specFile,
		"AGORA_STORAGE_URI=file://" + e.storeDir,
		"AGORA_WORKSPACE=" + e.workspace,
		"AGORA_NATS_URL=" + e.natsURL,
		"AGORA_GRACE_SECONDS=1",
		"AGORA_LOG_LEVEL=debug",
	}
	for _, o := range opts {
		o(cmd)
	}
	stdout, stderr := &testutil.Buffer{}, &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start worker: %v", err)
	}
	return cmd, stdout, stderr
}

// wait collects the outcome of a started worker.
func (e *env) wait(cmd *exec.Cmd, id string, stdout, stderr *testutil.Buffer, began time.Time) *outcome {
	e.t.Helper()
	err := cmd.Wait()
	o := &outcome{elapsed: time.Since(began), stderr: stderr.String()}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		o.exitCode = xe.ExitCode()
	case err != nil:
		e.t.Fatalf("wait for worker: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		ev, err := schemas.ParseEvent(sc.Bytes())
		if err != nil {
			e.t.Fatalf("stdout line is not a valid event: %v\n%s\nstderr:\n%s", err, sc.Text(), o.stderr)
		}
		o.stdout = append(o.stdout, *ev)
	}
	if e.bus != nil && id != "" {
		stored, err := e.bus.Events(context.Background(), id)
		if err != nil {
			e.t.Fatalf("read stored events: %v", err)
		}
		o.stored = stored
		o.checkStored = true
	}
	return o
}

func (e *env) run(spec *schemas.DispatchSpec, opts ...runOpt) *outcome {
	e.t.Helper()
	began := time.Now()
	cmd, stdout, stderr := e.start(spec, opts...)
	return e.wait(cmd, spec.DispatchID, stdout, stderr, began)
}

// expect checks the invariants every dispatch must keep, and the outcome row.
func (o *outcome) expect(t *testing.T, kind schemas.EventKind, reason schemas.FailureReason, exitCode int, wantStarted bool) schemas.Event {
	t.Helper()
	if o.exitCode != exitCode {
		t.Errorf("exit code = %d, want %d; stderr:\n%s", o.exitCode, exitCode, o.stderr)
	}
	var started, terminal int
	for _, ev := range o.stdout {
		switch {
		case ev.Kind == schemas.KindStarted:
			started++
		case ev.Kind.Terminal():
			terminal++
		}
	}
	if want := map[bool]int{true: 1, false: 0}[wantStarted]; started != want {
		t.Errorf("stdout has %d dispatch.started, want %d", started, want)
	}
	if terminal != 1 {
		t.Fatalf("stdout has %d terminal events, want exactly 1: %+v\nstderr:\n%s", terminal, o.stdout, o.stderr)
	}
	ev := o.terminal(t)
	if ev.Kind != kind {
		t.Fatalf("terminal event = %s (%+v), want %s; stderr:\n%s", ev.Kind, ev.Failure, kind, o.stderr)
	}
	if reason != "" && (ev.Failure == nil || ev.Failure.Reason != reason) {
		t.Errorf("failure = %+v, want reason %s", ev.Failure, reason)
	}
	if ev.ExitCode == nil || *ev.ExitCode != exitCode {
		t.Errorf("event exit_code = %v, want %d", ev.ExitCode, exitCode)
	}
	// What was printed is exactly what was stored, once each.
	if o.checkStored && !sameEvents(o.stdout, o.stored) {
		t.Errorf("stored events differ from stdout:\nstdout: %s\nstored: %s", mustJSON(o.stdout), mustJSON(o.stored))
	}
	return ev
}

func sameEvents(a, b []schemas.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Time, y.Time = x.Time.UTC(), y.Time.UTC()
		if string(mustJSON(x)) != string(mustJSON(y)) {
			return false
		}
	}
	return true
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutcomeTable runs each row of the outcome table that a script can
// produce on its own.
func TestOutcomeTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		kind     schemas.EventKind
		reason   schemas.FailureReason
		exitCode int
		check    func(t *testing.T, ev schemas.Event)
	}{
		{name: "finished", script: `echo working; exit 0`, kind: schemas.KindFinished},
		{name: "provider failed keeps the runtime's code", script: `echo boom >&2; exit 7`, kind: schemas.KindFailed, reason: schemas.ReasonProviderFailed, exitCode: 7,
			check: func(t *testing.T, ev schemas.Event) {
				if !strings.Contains(ev.Failure.Detail, "exited with code 7") {
					t.Errorf("detail = %q, want the exit code named", ev.Failure.Detail)
				}
			}},
		{name: "needs input with the full payload", script: `cat > .agora/needs_input.json <<'J'
{"question":"Rewrite A or B?","options":["A","B"],"context":"same signature","default":"A","partial_state":{"read":["a.go","b.go"],"n":2},"x-extra":1}
J`, kind: schemas.KindNeedsInput,
			check: func(t *testing.T, ev schemas.Event) {
				ni := ev.NeedsInput
				if ni.Question != "Rewrite A or B?" || !reflect.DeepEqual(ni.Options, []string{"A", "B"}) || ni.Context != "same signature" ||
					ni.Default == nil || *ni.Default != "A" || string(ni.PartialState) != `{"read":["a.go","b.go"],"n":2}` {
					t.Errorf("needs_input = %s, want every field of the sentinel", mustJSON(ni))
				}
			}},
		{name: "needs input whatever the runtime's exit code", script: `echo '{"question":"Proceed?"}' > "$AGORA_NEEDS_INPUT_FILE"; exit 5`, kind: schemas.KindNeedsInput},
		{name: "malformed sentinel: bad json", script: `echo '{"question":' > .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("not valid JSON")},
		{name: "malformed sentinel: not an object", script: `echo '["q"]' > .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("expected object")},
		{name: "malformed sentinel: no question", script: `echo '{"options":["A"]}' > .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("question")},
		{name: "malformed sentinel: wrong option type", script: `echo '{"question":"q","options":[1]}' > .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("/options/0")},
		{name: "malformed sentinel: over 1 MiB", script: `head -c 1048577 /dev/zero | tr '\0' ' ' > .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("1 MiB")},
		{name: "malformed sentinel: symlink", script: `echo '{"question":"q"}' > real.json; ln -s ../real.json .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("symlink")},
		{name: "malformed sentinel: directory", script: `mkdir .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("directory")},
		{name: "malformed sentinel: fifo", script: `mkfifo .agora/needs_input.json`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1,
			check: detailContains("fifo")},
		{name: "malformed sentinel even when the runtime failed", script: `echo nope > .agora/needs_input.json; exit 3`, kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1},
		{name: "adapter cannot start", script: "", kind: schemas.KindFailed, reason: schemas.ReasonWorkerFailed, exitCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			spec := e.spec(tt.script)
			if tt.script == "" {
				spec.Subagent.Command = []string{"no-such-runtime-binary"}
			}
			ev := e.run(spec).expect(t, tt.kind, tt.reason, tt.exitCode, true)
			if ev.TaskID != spec.TaskID || ev.Round != 1 || ev.Subagent != "script" {
				t.Errorf("event identity = %s/%d/%s, want %s/1/script", ev.TaskID, ev.Round, ev.Subagent, spec.TaskID)
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

func detailContains(want string) func(t *testing.T, ev schemas.Event) {
	return func(t *testing.T, ev schemas.Event) {
		t.Helper()
		if ev.Failure == nil || !strings.Contains(ev.Failure.Detail, want) {
			t.Errorf("failure = %+v, want detail containing %q", ev.Failure, want)
		}
	}
}

// TestStaleSentinelIgnored: a sentinel left from before the run does not count.
func TestStaleSentinelIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.workspace, ".agora/needs_input.json"), `{"question":"stale"}`)
	e.run(e.spec(`test ! -e .agora/needs_input.json || exit 9`)).expect(t, schemas.KindFinished, "", 0, true)
}

// TestBadSpecReachesTheBus: a spec that cannot be read or validated still
// ends in a published dispatch.failed for AGORA_DISPATCH_ID.
func TestBadSpecReachesTheBus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, want string
		env              []string
	}{
		{name: "not json", spec: `{"dispatch_id":`, want: "not valid JSON"},
		{name: "schema violation", spec: `{"dispatch_id":"ID","subagent":{"name":"x","runtime":"cobol"}}`, want: "/subagent/runtime"},
		{name: "id mismatch", spec: `{"dispatch_id":"other","subagent":{"name":"x","runtime":"exec","command":["true"]}}`, want: `spec is for dispatch "other"`},
		{name: "missing file", spec: "", want: "read spec"},
		{name: "bad environment", spec: `{"dispatch_id":"ID","subagent":{"name":"x","runtime":"exec","command":["true"]}}`, want: "AGORA_SETUP_TIMEOUT_SECONDS", env: []string{"AGORA_SETUP_TIMEOUT_SECONDS=soon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := fmt.Sprintf("bad-%d", dispatchSeq.Add(1))
			specFile := filepath.Join(t.TempDir(), "spec.json")
			if tt.spec != "" {
				writeFile(t, specFile, strings.ReplaceAll(tt.spec, "ID", id))
			}
			began := time.Now()
			cmd, stdout, stderr := e.startRaw(id, specFile, withEnv(tt.env...))
			o := e.wait(cmd, id, stdout, stderr, began)
			ev := o.expect(t, schemas.KindFailed, schemas.ReasonWorkerFailed, 1, false)
			if !strings.Contains(ev.Failure.Detail, tt.want) {
				t.Errorf("detail = %q, want it to contain %q", ev.Failure.Detail, tt.want)
			}
		})
	}
}

// TestSpecFromStorage: without AGORA_SPEC_FILE the spec comes from
// dispatches/<id>/spec.json in storage.
func TestSpecFromStorage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spec := e.spec(`exit 0`)
	if err := e.store.Put(context.Background(), "dispatches/"+spec.DispatchID+"/spec.json", bytes.NewReader(mustJSON(spec))); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	cmd, stdout, stderr := e.startRaw(spec.DispatchID, "", withEnv("AGORA_SPEC_FILE="))
	e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindFinished, "", 0, true)
}

// TestTimeout: the whole process group is stopped, the outcome is timeout,
// exit 124, and nothing is left behind.
func TestTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spec := e.spec(`sleep 300 & echo $! > bg.pid; trap '' TERM; while :; do sleep 1; done`)
	spec.TimeoutSeconds = 1
	ev := e.run(spec).expect(t, schemas.KindFailed, schemas.ReasonTimeout, 124, true)
	if !strings.Contains(ev.Failure.Detail, "timeout of 1s") {
		t.Errorf("detail = %q, want the timeout named", ev.Failure.Detail)
	}
	assertGone(t, filepath.Join(e.workspace, "bg.pid"))
}

// TestCancel: SIGTERM to the worker stops the runtime's group (SIGTERM, then
// SIGKILL after the grace for one that ignores it), emits
// dispatch.cancelled and exits 0.
func TestCancel(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{
		"runtime exits on SIGTERM": `sleep 300 & echo $! > bg.pid; touch ready; wait`,
		"runtime ignores SIGTERM":  `trap '' TERM; sleep 300 & echo $! > bg.pid; touch ready; while :; do sleep 1; done`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			spec := e.spec(script)
			began := time.Now()
			cmd, stdout, stderr := e.start(spec)
			testutil.Eventually(t, 20*time.Second, "the runtime to start", func() bool {
				_, err := os.Stat(filepath.Join(e.workspace, "ready"))
				return err == nil
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindCancelled, "", 0, true)
			assertGone(t, filepath.Join(e.workspace, "bg.pid"))
		})
	}
}

// assertGone checks that the process whose pid is in pidFile has exited.
func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("read %s: %v", pidFile, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, fmt.Sprintf("process %d to be gone", pid), func() bool {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		// A zombie not yet reaped by its parent is gone for our purpose.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err == nil && strings.Contains(string(stat), ") Z ")
	})
}

// TestNATSUnreachable: the worker still prints its terminal event, exits
// with the right code, and stays within its bounded retry window.
func TestNATSUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "nats://" + l.Addr().String()
	l.Close() // nothing listens here any more
	e := &env{t: t, natsURL: deadURL, storeDir: t.TempDir(), workspace: t.TempDir()}
	const window = 2 * time.Second
	for _, tt := range []struct {
		script   string
		kind     schemas.EventKind
		exitCode int
	}{
		{`exit 0`, schemas.KindFinished, 0},
		{`exit 4`, schemas.KindFailed, 4},
	} {
		o := e.run(e.spec(tt.script), withEnv("AGORA_PUBLISH_WINDOW_SECONDS=2"))
		o.expect(t, tt.kind, "", tt.exitCode, true)
		// started and terminal each get one window, at most.
		if limit := 2*window + 3*time.Second; o.elapsed > limit {
			t.Errorf("worker took %s with NATS down, want under %s", o.elapsed, limit)
		}
		if !strings.Contains(o.stderr, "recovers") {
			t.Errorf("stderr does not say the event is left for recovery:\n%s", o.stderr)
		}
	}
}

// TestRoundTrip: round 1 asks through `agora-worker ask` with options and a
// partial_state; round 2 gets the answer and that state and finishes.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := `
set -e
if [ -z "$AGORA_ANSWER" ]; then
  echo '{"analysed":["a.go","b.go"],"plan":"rewrite one"}' > /tmp/state-$AGORA_DISPATCH_ID.json
  agora-worker ask "Rewrite A or B?" --option A --option B --context "same signature" --state /tmp/state-$AGORA_DISPATCH_ID.json
  rm /tmp/state-$AGORA_DISPATCH_ID.json
  exit 0
fi
test "$AGORA_ROUND" = 2
test "$AGORA_ANSWER" = B
grep -q '"answer": "B"' "$AGORA_RESUME_FILE"
grep -q '"plan": "rewrite one"' "$AGORA_RESUME_FILE"
grep -q '"answer": "B"' "$AGORA_INPUT_FILE" || grep -q '"answer":"B"' "$AGORA_INPUT_FILE"
echo "rewrote B" > result.txt
`
	r1 := e.spec(script)
	ev := e.run(r1).expect(t, schemas.KindNeedsInput, "", 0, true)
	q := ev.NeedsInput
	if q.Question != "Rewrite A or B?" || !reflect.DeepEqual(q.Options, []string{"A", "B"}) || q.Context != "same signature" {
		t.Fatalf("round 1 question = %s", mustJSON(q))
	}

	r2 := e.spec(script)
	r2.TaskID, r2.Round = r1.TaskID, 2
	r2.Input = json.RawMessage(`{"repo":"example","answer":"B"}`)
	r2.Resume = &schemas.Resume{Question: q.Question, Answer: "B", Options: q.Options, PartialState: q.PartialState,
		History: []schemas.HistoryEntry{{Round: 1, Question: q.Question, Answer: "B"}}}
	e.run(r2).expect(t, schemas.KindFinished, "", 0, true)
	if data, err := os.ReadFile(filepath.Join(e.workspace, "result.txt")); err != nil || string(data) != "rewrote B\n" {
		t.Errorf("round 2 result = %q, %v", data, err)
	}
}

// TestLargePartialState: a partial_state too large for one NATS message goes
// to object storage and the event carries a ref whose hash verifies; round 2
// gets the state back through that ref.
func TestLargePartialState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// ~1,040,000 bytes of state: under the sentinel's 1 MiB cap, over what
	// one NATS message holds once wrapped in an event.
	script := `
if [ -n "$AGORA_ANSWER" ]; then grep -q '"blob": "xxxx' "$AGORA_RESUME_FILE"; exit $?; fi
{ printf '{"question":"big?","partial_state":{"blob":"'; head -c 1040000 /dev/zero | tr '\0' x; printf '"}}'; } > .agora/needs_input.json`
	r1 := e.spec(script)
	ev := e.run(r1).expect(t, schemas.KindNeedsInput, "", 0, true)
	ref := ev.NeedsInput.PartialStateRef
	if ref == nil || ev.NeedsInput.PartialState != nil {
		t.Fatalf("needs_input = question %q, inline %d bytes, ref %+v; want a ref only", ev.NeedsInput.Question, len(ev.NeedsInput.PartialState), ref)
	}
	key, err := storage.ResolveURI(e.store, ref.URI)
	if err != nil {
		t.Fatal(err)
	}
	data, err := storage.GetVerified(context.Background(), e.store, key, ref.SHA256, ref.Size)
	if err != nil || int64(len(data)) != ref.Size || !strings.HasPrefix(string(data), `{"blob":"xxx`) {
		t.Fatalf("stored partial_state: %d bytes, %v", len(data), err)
	}

	r2 := e.spec(script)
	r2.TaskID, r2.Round = r1.TaskID, 2
	r2.Resume = &schemas.Resume{Question: "big?", Answer: "yes", PartialStateRef: ref}
	e.run(r2).expect(t, schemas.KindFinished, "", 0, true)

	// A ref whose content does not match is an integrity failure.
	r3 := e.spec(script)
	r3.Round = 2
	bad := *ref
	bad.SHA256 = strings.Repeat("0", 64)
	r3.Resume = &schemas.Resume{Question: "big?", Answer: "yes", PartialStateRef: &bad}
	e.run(r3).expect(t, schemas.KindFailed, schemas.ReasonIntegrityFailed, 1, false)
}

// putBlob stores data content-addressed and returns its bundle ref.
func (e *env) putBlob(name string, data []byte) schemas.BundleRef {
	e.t.Helper()
	_, ref, err := storage.PutBlob(context.Background(), e.store, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	return schemas.BundleRef{Name: name, SHA256: ref.SHA256}
}

type tarEntry struct {
	name, body string
	typ        byte
	link       string
}

func tarball(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, en := range entries {
		typ := en.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: en.name, Typeflag: typ, Mode: 0o644, Size: int64(len(en.body)), Linkname: en.link}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(en.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBundles: capabilities and env bundles are verified, overlaid safely
// and resolved; every way they can be wrong has its outcome.
func TestBundles(t *testing.T) {
	t.Parallel()
	good := func(e *env) *schemas.DispatchSpec {
		spec := e.spec(`test "$(cat tools/lint.sh)" = "echo lint" && test "$GREETING" = hello && test "$TOKEN" = s3cret && test -z "$AWS_SECRET_ACCESS_KEY"`)
		spec.Capabilities = []schemas.BundleRef{e.putBlob("lint", tarball(t, tarEntry{name: "tools/", typ: tar.TypeDir}, tarEntry{name: "tools/lint.sh", body: "echo lint"}))}
		spec.Env = []schemas.BundleRef{e.putBlob("greet", []byte(`{"values":{"GREETING":"hello"},"secrets":{"TOKEN":"env:WORKER_TOKEN"}}`))}
		return spec
	}
	tests := []struct {
		name     string
		mutate   func(t *testing.T, e *env, spec *schemas.DispatchSpec)
		kind     schemas.EventKind
		reason   schemas.FailureReason
		exitCode int
		detail   string
		started  bool // failures in the workspace come after dispatch.started
	}{
		{name: "verified and applied", kind: schemas.KindFinished, started: true},
		{name: "hash mismatch", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			key := storage.BlobKey(s.Capabilities[0].SHA256)
			// Corrupt the stored object behind the ref.
			if err := e.store.Put(context.Background(), key, strings.NewReader("tampered")); err != nil {
				t.Fatal(err)
			}
		}, kind: schemas.KindFailed, reason: schemas.ReasonIntegrityFailed, exitCode: 1, detail: "capability lint"},
		{name: "path climbs out", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			s.Capabilities = []schemas.BundleRef{e.putBlob("evil", tarball(t, tarEntry{name: "../escape.txt", body: "x"}))}
		}, kind: schemas.KindFailed, reason: schemas.ReasonIntegrityFailed, exitCode: 1, detail: `"../escape.txt"`, started: true},
		{name: "absolute path", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			s.Capabilities = []schemas.BundleRef{e.putBlob("evil", tarball(t, tarEntry{name: "/etc/evil", body: "x"}))}
		}, kind: schemas.KindFailed, reason: schemas.ReasonIntegrityFailed, exitCode: 1, detail: "absolute path", started: true},
		{name: "symlink entry", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			s.Capabilities = []schemas.BundleRef{e.putBlob("evil", tarball(t, tarEntry{name: "link", typ: tar.TypeSymlink, link: "/etc"}))}
		}, kind: schemas.KindFailed, reason: schemas.ReasonIntegrityFailed, exitCode: 1, detail: "unsupported entry type", started: true},
		{name: "writing through a workspace symlink", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			outside := t.TempDir()
			if err := os.Symlink(outside, filepath.Join(e.workspace, "tools")); err != nil {
				t.Fatal(err)
			}
		}, kind: schemas.KindFailed, reason: schemas.ReasonIntegrityFailed, exitCode: 1, detail: "refusing to write through it", started: true},
		{name: "bundle missing", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			s.Capabilities[0].SHA256 = strings.Repeat("a", 64)
		}, kind: schemas.KindFailed, reason: schemas.ReasonFetchFailed, exitCode: 1, detail: "fetch capability lint"},
		{name: "secret ref unresolvable", mutate: func(t *testing.T, e *env, s *schemas.DispatchSpec) {
			s.Env = []schemas.BundleRef{e.putBlob("greet", []byte(`{"secrets":{"TOKEN":"env:NOT_SET_ANYWHERE"}}`))}
		}, kind: schemas.KindFailed, reason: schemas.ReasonFetchFailed, exitCode: 1, detail: "NOT_SET_ANYWHERE is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			spec := good(e)
			if tt.mutate != nil {
				tt.mutate(t, e, spec)
			}
			o := e.run(spec, withEnv("WORKER_TOKEN=s3cret", "AWS_SECRET_ACCESS_KEY=worker-only"))
			ev := o.expect(t, tt.kind, tt.reason, tt.exitCode, tt.started)
			if tt.detail != "" && !strings.Contains(ev.Failure.Detail, tt.detail) {
				t.Errorf("detail = %q, want it to contain %q", ev.Failure.Detail, tt.detail)
			}
			if strings.Contains(o.stderr+string(mustJSON(o.stdout)), "s3cret") {
				t.Errorf("the secret value leaked into the worker's output")
			}
		})
	}
}

// TestSetupScript: agora-setup.sh runs before the runtime, bounded by
// AGORA_SETUP_TIMEOUT_SECONDS; its failure is worker-failed.
func TestSetupScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, setup string
		env         []string
		kind        schemas.EventKind
		detail      string
	}{
		{name: "runs first", setup: "echo prepared > prepared.txt", kind: schemas.KindFinished},
		{name: "fails", setup: "exit 3", kind: schemas.KindFailed, detail: "exited with code 3"},
		{name: "times out", setup: "sleep 300", env: []string{"AGORA_SETUP_TIMEOUT_SECONDS=1"}, kind: schemas.KindFailed, detail: "did not finish within 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			writeFile(t, filepath.Join(e.workspace, "agora-setup.sh"), tt.setup)
			o := e.run(e.spec(`test "$(cat prepared.txt)" = prepared`), withEnv(tt.env...))
			code, reason := 0, schemas.FailureReason("")
			if tt.kind == schemas.KindFailed {
				code, reason = 1, schemas.ReasonWorkerFailed
			}
			ev := o.expect(t, tt.kind, reason, code, true)
			if tt.detail != "" && !strings.Contains(ev.Failure.Detail, tt.detail) {
				t.Errorf("detail = %q, want %q", ev.Failure.Detail, tt.detail)
			}
		})
	}
}

// TestWorkspaceLayout: the runtime sees the contract's files and variables,
// the SKILL overlay (unless disabled), and none of the worker's credentials.
func TestWorkspaceLayout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := `
set -e
test -f .agora/skills/agora-needs-input/SKILL.md
test "$AGORA_INPUT_FILE" = "$PWD/.agora/input.json"
grep -q '"repo":"example"' "$AGORA_INPUT_FILE"
test ! -e .agora/resume.json
test -z "$AGORA_ANSWER$AGORA_RESUME_FILE"
test "$AGORA_ROUND" = 1
test -n "$AGORA_DISPATCH_ID"
test -z "$AGORA_NATS_URL$AGORA_STORAGE_URI$AWS_ACCESS_KEY_ID$SECRET_OF_WORKER"
test "$PASSED_THROUGH" = yes
env > env.txt
`
	o := e.run(e.spec(script), withEnv("AWS_ACCESS_KEY_ID=AKIA", "SECRET_OF_WORKER=x", "PASSED_THROUGH=yes", "AGORA_PASSTHROUGH_ENV=PASSED_THROUGH,AWS_ACCESS_KEY_ID"))
	o.expect(t, schemas.KindFinished, "", 0, true)

	e2 := newEnv(t)
	e2.run(e2.spec(`test ! -e .agora/skills`), withEnv("AGORA_DISABLE_NEEDS_INPUT_HELPER=true")).expect(t, schemas.KindFinished, "", 0, true)
}

// TestClaudeCode runs the claude-code adapter against the stand-in claude
// (the real API cannot be reached from here): usage lands on the terminal
// event, the SKILL lands where Claude Code looks for skills, a question
// pauses the dispatch, and a hung claude is killed on cancel.
func TestClaudeCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode     string
		kind     schemas.EventKind
		reason   schemas.FailureReason
		exitCode int
	}{
		{mode: fakeclaude.ModeOK, kind: schemas.KindFinished},
		{mode: fakeclaude.ModeAsk, kind: schemas.KindNeedsInput},
		{mode: fakeclaude.ModeFail, kind: schemas.KindFailed, reason: schemas.ReasonProviderFailed, exitCode: fakeclaude.FailExitCode},
		{mode: fakeclaude.ModeGarbage, kind: schemas.KindFinished},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			spec := e.spec("")
			spec.Subagent = schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeClaudeCode, Prompt: "Fix the flaky test.", Model: "claude-test-model"}
			ev := e.run(spec, claudeEnv(tt.mode)...).expect(t, tt.kind, tt.reason, tt.exitCode, true)
			if ev.Usage == nil || ev.Usage.Model == "" {
				t.Errorf("usage = %+v, want the model reported by the stream", ev.Usage)
			}
			if tt.mode == fakeclaude.ModeOK && (ev.Usage.Turns == 0 || ev.Usage.CostUSD == 0) {
				t.Errorf("usage = %+v, want turns and cost from the result message", ev.Usage)
			}
			if tt.mode == fakeclaude.ModeAsk && ev.NeedsInput.Question != fakeclaude.AskSentinel().Question {
				t.Errorf("question = %q, want the stand-in's", ev.NeedsInput.Question)
			}
			// With no .agora/result.json, the final result text is the
			// round's result, as a JSON string.
			if want, _ := json.Marshal(fakeclaude.ResultText); tt.kind == schemas.KindFinished && string(ev.Result) != string(want) {
				t.Errorf("result = %s, want the stream's final text %s", ev.Result, want)
			}
			if _, err := os.Stat(filepath.Join(e.workspace, ".claude/skills/agora-needs-input/SKILL.md")); err != nil {
				t.Errorf("SKILL not overlaid for claude-code: %v", err)
			}
		})
	}
	t.Run("cancel a hung claude", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		spec := e.spec("")
		spec.Subagent = schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeClaudeCode, Prompt: "Wait forever."}
		record := filepath.Join(t.TempDir(), "record.json")
		began := time.Now()
		cmd, stdout, stderr := e.start(spec, append(claudeEnv(fakeclaude.ModeHang), withEnv(fakeclaude.RecordEnv+"="+record))...)
		testutil.Eventually(t, 20*time.Second, "claude to start", func() bool { _, err := os.Stat(record); return err == nil })
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindCancelled, "", 0, true)
	})
}

func claudeEnv(mode string) []runOpt {
	return []runOpt{withEnv(
		fakeclaude.ModeEnv+"="+mode,
		"GORACE=atexit_sleep_ms=0",
		"AGORA_PASSTHROUGH_ENV="+fakeclaude.ModeEnv+","+fakeclaude.RecordEnv+",GORACE",
	)}
}

// TestSpecFromExchange: with AGORA_EXCHANGE_KEY (a runner that mounts
// nothing) the spec and the private values come from under that prefix,
// and a round that asked leaves its workspace snapshot there.
func TestSpecFromExchange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := "exchange/" + strings.Repeat("5e", 32)
	spec := e.spec(`mkdir -p .agora; echo '{"question":"A or B?"}' > .agora/needs_input.json`)
	ctx := context.Background()
	if err := e.store.Put(ctx, prefix+"/spec.json", bytes.NewReader(mustJSON(spec))); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Put(ctx, prefix+"/private.json", strings.NewReader(`{"event_key":"`+strings.Repeat("7a", 32)+`","worker_env":["X=1"]}`)); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	cmd, stdout, stderr := e.startRaw(spec.DispatchID, "", withEnv("AGORA_SPEC_FILE=", "AGORA_EXCHANGE_KEY="+prefix, "AGORA_SNAPSHOT_WORKSPACE=true"))
	e.wait(cmd, spec.DispatchID, stdout, stderr, began).expect(t, schemas.KindNeedsInput, "", 0, true)
	if _, err := e.store.Stat(ctx, prefix+"/private.json"); err == nil {
		t.Error("private.json is still in storage")
	}
	if _, err := e.store.Stat(ctx, prefix+"/workspace.json"); err != nil {
		t.Errorf("no workspace record: %v", err)
	}
}
