package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// harness is one runner on the real Docker engine with a real NATS server
// and filesystem storage.
type harness struct {
	t      *testing.T
	srv    *natsserver.Server
	bus    *bus.Bus
	store  storage.Store
	engine compute.Engine // the runner's: docker, or ECS (ecs_test.go)
	docker *docker.Engine
	cfg    Config
	runner *Runner
}

var seq atomic.Int64

func newHarness(t *testing.T, tweak func(*Config)) *harness {
	t.Helper()
	return newHarnessOn(t, natstest.Start(t), nil, tweak)
}

// newHarnessOn is newHarness on srv, the runner connecting with the
// options auth gives for its id (nil: anonymously).
func newHarnessOn(t *testing.T, srv *natsserver.Server, auth func(runnerID string) bus.Options, tweak func(*Config)) *harness {
	t.Helper()
	needDocker(t)
	ctx := context.Background()
	id := fmt.Sprintf("test-%d-%d", testutil.RunNumber(), seq.Add(1))
	opts := bus.Options{}
	if auth != nil {
		opts = auth(id)
	}
	opts.Name = t.Name()
	b, err := bus.Connect(ctx, srv.ClientURL(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	storeDir := t.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := docker.New(docker.Config{Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		ID: id, Slots: 2, Image: workerImage, DataDir: t.TempDir(),
		StorageURI: "file://" + storeDir, Store: store, Bus: b, Engine: eng,
		Grace: 3 * time.Second, Heartbeat: time.Second, Logger: natstest.Logger(t),
		Resources: compute.Resources{MemoryBytes: 256 << 20, PidsLimit: 128, NanoCPUs: 1e9},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	h := &harness{t: t, srv: srv, bus: b, store: store, engine: eng, docker: eng, cfg: cfg}
	t.Cleanup(func() {
		// Nothing with this runner's label may survive the test.
		ctx := context.Background()
		left, err := eng.List(ctx, map[string]string{LabelRunner: id})
		if err != nil {
			t.Errorf("list leftover containers: %v", err)
		}
		for _, c := range left {
			t.Errorf("container %s (%s, dispatch %s) left behind", c.ID[:12], c.State, c.Labels[compute.LabelDispatchID])
			_ = eng.Remove(ctx, c.ID)
		}
		eng.Close()
	})
	return h
}

func (h *harness) start() *Runner {
	h.t.Helper()
	r, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		h.t.Fatalf("start runner: %v", err)
	}
	h.runner = r
	h.t.Cleanup(func() { h.stop(r) })
	return r
}

func (h *harness) stop(r *Runner) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		h.t.Errorf("stop runner: %v", err)
	}
}

// request is an exec dispatch of script with a fresh id.
func request(script string) schemas.DispatchRequest {
	id := fmt.Sprintf("rt-%d-%d", testutil.RunNumber(), seq.Add(1))
	return schemas.DispatchRequest{Spec: schemas.DispatchSpec{
		DispatchID: id, TaskID: "task-" + id, Round: 1,
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script}},
		Input:    json.RawMessage(`{"n":1}`),
	}}
}

func (h *harness) enqueue(req schemas.DispatchRequest) {
	h.t.Helper()
	if _, err := h.bus.Enqueue(context.Background(), req); err != nil {
		h.t.Fatal(err)
	}
}

// terminal waits for the dispatch's terminal event and checks the stored
// events: one started at most, exactly one terminal.
func (h *harness) terminal(id string, timeout time.Duration) schemas.Event {
	h.t.Helper()
	var ev *schemas.Event
	testutil.Eventually(h.t, timeout, "terminal event of "+id, func() bool {
		e, err := h.bus.TerminalEvent(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		ev = e
		return e != nil
	})
	h.assertOnce(id)
	return *ev
}

// assertOnce: every stored event kind appears once, and one is terminal.
func (h *harness) assertOnce(id string) {
	h.t.Helper()
	stored, err := h.bus.StoredEvents(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	kinds := map[string]int{}
	terminal := 0
	for _, s := range stored {
		kinds[string(s.Kind)]++
		if schemas.EventKind(s.Kind).Terminal() {
			terminal++
		}
	}
	for k, n := range kinds {
		if n != 1 {
			h.t.Errorf("%s stored %d times for %s", k, n, id)
		}
	}
	if terminal != 1 {
		h.t.Errorf("%d terminal events stored for %s, want 1: %v", terminal, id, kinds)
	}
}

// settled waits until the runner has removed the dispatch's container and
// acknowledged its request.
func (h *harness) settled(id string) {
	h.t.Helper()
	testutil.Eventually(h.t, time.Minute, "dispatch "+id+" to be settled", func() bool {
		left, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id, LabelRunner: h.cfg.ID})
		return err == nil && len(left) == 0 && h.runner.lookup(id) == nil
	})
}

// awaitReady waits until the dispatch's script has touched
// /workspace/ready, that is, until its container runs, and returns the
// workspace directory on the host.
func (h *harness) awaitReady(id string) string {
	h.t.Helper()
	ws := h.runner.workspace(id)
	testutil.Eventually(h.t, time.Minute, "dispatch "+id+" to run", func() bool { _, err := os.Stat(filepath.Join(ws, "ready")); return err == nil })
	return ws
}

func (h *harness) output(id string) string {
	h.t.Helper()
	rc, err := h.store.Get(context.Background(), logKey(id))
	if err != nil {
		h.t.Fatalf("stored output of %s: %v", id, err)
	}
	defer rc.Close()
	data, _ := io.ReadAll(rc)
	return string(data)
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	tests := []struct {
		name, script string
		kind         schemas.EventKind
		reason       schemas.FailureReason
		exitCode     int
		check        func(t *testing.T, ev schemas.Event)
	}{
		{name: "finished", script: `echo hello from the container; echo to stderr >&2`, kind: schemas.KindFinished,
			check: func(t *testing.T, ev schemas.Event) {
				out := h.output(ev.DispatchID)
				if !strings.Contains(out, "hello from the container") || !strings.Contains(out, "to stderr") {
					t.Errorf("stored output = %q, want the runtime's stdout and stderr", out)
				}
			}},
		{name: "needs input with the full payload", script: `echo '{"step":1,"seen":["a","b"]}' > /tmp/s.json
agora-worker ask "Deploy to staging or production?" --option staging --option production --context "tests passed" --default staging --state /tmp/s.json`,
			kind: schemas.KindNeedsInput,
			check: func(t *testing.T, ev schemas.Event) {
				q := ev.NeedsInput
				if q.Question != "Deploy to staging or production?" || strings.Join(q.Options, ",") != "staging,production" ||
					q.Context != "tests passed" || q.Default == nil || *q.Default != "staging" || string(q.PartialState) != `{"step":1,"seen":["a","b"]}` {
					t.Errorf("needs_input = %+v", q)
				}
			}},
		{name: "provider failed", script: `exit 3`, kind: schemas.KindFailed, reason: schemas.ReasonProviderFailed, exitCode: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := request(tt.script)
			h.enqueue(req)
			ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
			if ev.Kind != tt.kind || (tt.reason != "" && ev.Failure.Reason != tt.reason) || *ev.ExitCode != tt.exitCode {
				t.Fatalf("terminal = %s %+v exit %d; want %s %s exit %d", ev.Kind, ev.Failure, *ev.ExitCode, tt.kind, tt.reason, tt.exitCode)
			}
			h.settled(req.Spec.DispatchID)
			if tt.check != nil {
				tt.check(t, ev)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	req := request(`sleep 300`)
	req.Spec.TimeoutSeconds = 1
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonTimeout || *ev.ExitCode != 124 {
		t.Fatalf("terminal = %s %+v, want failed/timeout exit 124", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
}

// TestCancel: a running dispatch's container is stopped and the worker
// reports cancelled; a queued one is removed before it starts.
func TestCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Slots = 1 })
	r := h.start()
	ctx := context.Background()
	running := request(`touch /workspace/ready; sleep 300`)
	queued := request(`echo never`)
	h.enqueue(running)
	h.enqueue(queued)
	h.awaitReady(running.Spec.DispatchID)
	bustest.WaitQueued(t, h.bus, 1) // the second request waits for the slot
	if r.InUse() != 1 {
		t.Errorf("slots in use = %d, want 1", r.InUse())
	}

	wasQueued, err := h.bus.Cancel(ctx, queued.Spec.DispatchID)
	if err != nil || !wasQueued {
		t.Fatalf("Cancel(queued) = %v, %v", wasQueued, err)
	}
	ev := h.terminal(queued.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindCancelled {
		t.Errorf("queued dispatch ended %s, want cancelled", ev.Kind)
	}
	if evs, _ := h.bus.Events(ctx, queued.Spec.DispatchID); len(evs) != 1 {
		t.Errorf("a cancelled queued dispatch has events %v, want only dispatch.cancelled", evs)
	}

	if wasQueued, err := h.bus.Cancel(ctx, running.Spec.DispatchID); err != nil || wasQueued {
		t.Fatalf("Cancel(running) = %v, %v", wasQueued, err)
	}
	ev = h.terminal(running.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindCancelled || *ev.ExitCode != 0 {
		t.Errorf("running dispatch ended %s exit %d, want cancelled 0", ev.Kind, *ev.ExitCode)
	}
	h.settled(running.Spec.DispatchID)
	bustest.WaitQueued(t, h.bus, 0) // after cancelling everything
}

// TestWorkerLost: a container that ends without the worker's terminal event
// gets a dispatch.failed from the runner naming why: here the worker is
// killed, and a container runs out of memory.
func TestWorkerLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	t.Run("worker killed", func(t *testing.T) {
		t.Parallel()
		req := request(`echo about to crash; kill -9 $PPID; sleep 30`)
		h.enqueue(req)
		ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
		if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonWorkerLost || *ev.ExitCode != 137 {
			t.Fatalf("terminal = %s %+v exit %d; want failed/worker-lost 137", ev.Kind, ev.Failure, *ev.ExitCode)
		}
		if !strings.Contains(ev.Failure.Detail, "SIGKILL") || !strings.Contains(ev.Failure.Detail, "no terminal event") {
			t.Errorf("detail = %q", ev.Failure.Detail)
		}
		h.settled(req.Spec.DispatchID)
	})
	t.Run("out of memory", func(t *testing.T) {
		t.Parallel()
		// tail holds the whole newline-free stream in memory.
		req := request(`head -c 400000000 /dev/zero | tail -n 1 > /dev/null`)
		req.Resources = &schemas.Resources{MemoryMB: 48}
		h.enqueue(req)
		ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
		if ev.Kind != schemas.KindFailed || *ev.ExitCode != 137 {
			t.Fatalf("terminal = %s %+v exit %d; want failed with 137", ev.Kind, ev.Failure, *ev.ExitCode)
		}
		// Whichever process the kernel picked: the runtime (the worker
		// reports it killed) or the worker itself (the runner reports OOM).
		if d := ev.Failure.Detail; !strings.Contains(d, "OOMKilled") && !strings.Contains(d, "SIGKILL") {
			t.Errorf("detail = %q, want the kill named", d)
		}
		h.settled(req.Spec.DispatchID)
	})
}

// TestEventRecoveredFromStdout: the worker is given a NATS it cannot reach;
// the runner recovers its events from stdout, each stored once.
func TestEventRecoveredFromStdout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.WorkerNATSURL = "nats://127.0.0.1:1"
		c.WorkerEnv = []string{"AGORA_PUBLISH_WINDOW_SECONDS=1"}
	})
	h.start()
	req := request(`echo work`)
	req.Network = schemas.NetworkBridge
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal = %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	out := h.output(req.Spec.DispatchID)
	if !strings.Contains(out, "recovers") {
		t.Errorf("the worker's output does not show its failed publish:\n%s", out)
	}
	evs, err := h.bus.Events(context.Background(), req.Spec.DispatchID)
	if err != nil || len(evs) != 2 || evs[0].Kind != schemas.KindStarted {
		t.Errorf("stored events = %+v, %v; want started then finished", evs, err)
	}
}

// TestWorkerPublishesWithOwnCredentials: with --worker-nats against a NATS
// that refuses anonymous clients, the runner mints the dispatch its own
// user; the worker publishes its events with it (no recovery from stdout),
// and the sub-agent finds no credentials file.
func TestWorkerPublishesWithOwnCredentials(t *testing.T) {
	t.Parallel()
	srv, ids := natstest.StartAuth(t)
	signer, err := ids.LoadSigner()
	if err != nil {
		t.Fatal(err)
	}
	// Host networking: the test server listens on loopback only.
	// The runner's own user, limited to what a runner does.
	auth := func(id string) bus.Options {
		path, err := ids.RunnerCreds(id, natsauth.RunnerCredFile)
		if err != nil {
			t.Fatal(err)
		}
		return bus.Options{Auth: bus.Auth{CredsFile: path}, InboxPrefix: bus.RunnerInboxPrefix(id)}
	}
	h := newHarnessOn(t, srv, auth, func(c *Config) {
		c.WorkerNATSURL, c.WorkerNATSSigner, c.AllowHostNetwork = srv.ClientURL(), signer, true
	})
	// The test enqueues and reads as the orchestrator: the runner's user
	// may not enqueue.
	orch, err := bus.Connect(context.Background(), srv.ClientURL(), bus.Options{Name: t.Name() + " orchestrator",
		Auth: bus.Auth{CredsFile: ids.Path(natsauth.OrchestratorCredFile)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orch.Close)
	h.bus = orch
	if err := h.bus.EnsureEventStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.start()
	req := request(`test ! -e /run/agora/key/nats.creds || { echo "credentials readable" >&2; exit 5; }; echo "nats=$AGORA_NATS_CREDS_FILE"`)
	req.Network = schemas.NetworkHost
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal = %s %+v\n%s", ev.Kind, ev.Failure, h.output(req.Spec.DispatchID))
	}
	h.settled(req.Spec.DispatchID)
	out := h.output(req.Spec.DispatchID)
	if strings.Contains(out, "recovers") || strings.Contains(out, "nats credentials") || !strings.Contains(out, "nats=\n") {
		t.Errorf("the worker did not publish with its own credentials, or the sub-agent saw them:\n%s", out)
	}
	evs, err := h.bus.Events(context.Background(), req.Spec.DispatchID)
	if err != nil || len(evs) != 2 || evs[0].Kind != schemas.KindStarted {
		t.Errorf("stored events = %+v, %v; want started then finished", evs, err)
	}
}

// TestSlots: with more requests than slots the rest wait in the queue.
func TestSlots(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Slots = 1 })
	r := h.start()
	var reqs []schemas.DispatchRequest
	for i := 0; i < 3; i++ {
		req := request(fmt.Sprintf(`while [ ! -e /workspace/go ]; do sleep 0.05; done; echo %d`, i))
		reqs = append(reqs, req)
		h.enqueue(req)
	}
	ctx := context.Background()
	for i, req := range reqs {
		ws := h.runner.workspace(req.Spec.DispatchID)
		testutil.Eventually(t, time.Minute, "dispatch to start", func() bool { _, err := os.Stat(ws); return err == nil })
		bustest.WaitQueued(t, h.bus, uint64(len(reqs)-1-i)) // with dispatch i running
		if got := len(r.Active()); got != 1 {
			t.Errorf("active = %d, want 1", got)
		}
		for _, other := range reqs[i+1:] {
			if evs, _ := h.bus.Events(ctx, other.Spec.DispatchID); len(evs) != 0 {
				t.Errorf("queued dispatch %s has events %v", other.Spec.DispatchID, evs)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if ev := h.terminal(req.Spec.DispatchID, time.Minute); ev.Kind != schemas.KindFinished {
			t.Errorf("dispatch %d ended %s", i, ev.Kind)
		}
		h.settled(req.Spec.DispatchID)
	}
}

// TestWorkspaceAcrossRounds: edits made in a round that asked survive into
// the next round; a fresh workspace opts out.
func TestWorkspaceAcrossRounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	r1 := request(`mkdir -p src && echo "edited in round 1" > src/notes.txt && ln -s notes.txt src/link && agora-worker ask "continue?"`)
	h.enqueue(r1)
	if ev := h.terminal(r1.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindNeedsInput {
		t.Fatalf("round 1 ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(r1.Spec.DispatchID)

	r2 := request(`test "$(cat src/notes.txt)" = "edited in round 1" && test "$(cat src/link)" = "edited in round 1" && test "$AGORA_ANSWER" = yes`)
	r2.Spec.TaskID, r2.Spec.Round = r1.Spec.TaskID, 2
	r2.Spec.Resume = &schemas.Resume{Question: "continue?", Answer: "yes"}
	r2.Workspace = &schemas.WorkspaceRequest{RestoreFrom: r1.Spec.DispatchID}
	h.enqueue(r2)
	if ev := h.terminal(r2.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("round 2 ended %s %+v; output:\n%s", ev.Kind, ev.Failure, h.output(r2.Spec.DispatchID))
	}
	h.settled(r2.Spec.DispatchID)

	fresh := request(`test ! -e src/notes.txt`)
	fresh.Spec.Round = 2
	fresh.Spec.Resume = &schemas.Resume{Question: "continue?", Answer: "yes"}
	fresh.Workspace = &schemas.WorkspaceRequest{Mode: schemas.WorkspaceFresh, RestoreFrom: r1.Spec.DispatchID}
	h.enqueue(fresh)
	if ev := h.terminal(fresh.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("fresh round ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(fresh.Spec.DispatchID)
}

// TestRestartAdopts: a runner that stops leaves its container running; the
// next runner process with the same id adopts it, and the dispatch ends
// once, without a second start.
func TestRestartAdopts(t *testing.T) {
	t.Parallel()
	restartAdopts(t, newHarness(t, nil), nil)
}

// restartAdopts runs a dispatch that waits on its workspace, stops the
// runner with its container running, calls between (nil: nothing), starts
// the next runner and wants the dispatch adopted and ended once.
func restartAdopts(t *testing.T, h *harness, between func()) {
	t.Helper()
	first := h.start()
	req := request(`touch /workspace/ready; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo adopted fine`)
	h.enqueue(req)
	ws := h.awaitReady(req.Spec.DispatchID)
	h.stop(first)
	if between != nil {
		between()
	}
	found, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: req.Spec.DispatchID})
	if err != nil || len(found) != 1 || !found[0].Running() {
		t.Fatalf("after the runner stopped, containers = %+v, %v; want the dispatch still running", found, err)
	}

	second := h.start()
	testutil.Eventually(t, time.Minute, "the second runner to adopt", func() bool { return second.lookup(req.Spec.DispatchID) != nil })
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("adopted dispatch ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	if out := h.output(req.Spec.DispatchID); !strings.Contains(out, "adopted fine") {
		t.Errorf("output = %q", out)
	}
	evs, _ := h.bus.Events(context.Background(), req.Spec.DispatchID)
	if len(evs) != 2 {
		t.Errorf("events = %+v, want one started and one finished (no second start)", evs)
	}
}

// TestInstallationsShareEngine: two agora installations on one Docker
// engine (each its own bus, storage and runner id) may use the same dispatch
// ids — task ids are the caller's — and each runs its own container: neither
// follows the other's. A runner that followed a foreign container would find
// no event signed with its key and settle the dispatch as worker-lost.
func TestInstallationsShareEngine(t *testing.T) {
	t.Parallel()
	first, second := newHarness(t, nil), newHarness(t, nil)
	first.start()
	second.start()

	held := request(`cat "$AGORA_INPUT_FILE"; touch /workspace/ready; while [ ! -e /workspace/go ]; do sleep 0.05; done`)
	held.Spec.Input = json.RawMessage(`{"installation":"first"}`)
	first.enqueue(held)
	ws := first.awaitReady(held.Spec.DispatchID)

	same := request(`cat "$AGORA_INPUT_FILE"`)
	same.Spec.DispatchID, same.Spec.TaskID = held.Spec.DispatchID, held.Spec.TaskID
	same.Spec.Input = json.RawMessage(`{"installation":"second"}`)
	second.enqueue(same)
	if ev := second.terminal(same.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("second installation's dispatch ended %s %+v, want finished in its own container", ev.Kind, ev.Failure)
	}
	second.settled(same.Spec.DispatchID)
	if out := second.output(same.Spec.DispatchID); !strings.Contains(out, `"second"`) || strings.Contains(out, `"first"`) {
		t.Errorf("second installation's output = %q, want its own input only", out)
	}

	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := first.terminal(held.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("first installation's dispatch ended %s %+v", ev.Kind, ev.Failure)
	}
	first.settled(held.Spec.DispatchID)
	if out := first.output(held.Spec.DispatchID); !strings.Contains(out, `"first"`) {
		t.Errorf("first installation's output = %q", out)
	}
}

// TestHardening: docker inspect of a dispatch container shows the
// hardening and the limits.
func TestHardening(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	req := request(`touch /workspace/ready; while [ ! -e /workspace/go ]; do sleep 0.05; done`)
	req.Resources = &schemas.Resources{CPUs: 0.5, MemoryMB: 128, Pids: 64}
	h.enqueue(req)
	ws := h.awaitReady(req.Spec.DispatchID)
	out, err := exec.Command("docker", "inspect", containerName(h.cfg.ID, req.Spec.DispatchID)).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	var got []struct {
		Config struct {
			User   string
			Labels map[string]string
			Env    []string
		}
		HostConfig struct {
			SecurityOpt    []string
			CapDrop        []string
			Memory         int64
			NanoCpus       int64
			PidsLimit      *int64
			NetworkMode    string
			ReadonlyRootfs bool
			Init           *bool
		}
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 1 {
		t.Fatalf("decode docker inspect: %v", err)
	}
	c := got[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"no-new-privileges", strings.Contains(strings.Join(c.HostConfig.SecurityOpt, ","), "no-new-privileges")},
		{"all capabilities dropped", strings.Join(c.HostConfig.CapDrop, ",") == "ALL"},
		{"non-root user", c.Config.User == ContainerUser},
		{"memory limit", c.HostConfig.Memory == 128<<20},
		{"cpu limit", c.HostConfig.NanoCpus == 5e8},
		{"pids limit", c.HostConfig.PidsLimit != nil && *c.HostConfig.PidsLimit == 64},
		{"no network by default", c.HostConfig.NetworkMode == "none"},
		{"read-only root filesystem", c.HostConfig.ReadonlyRootfs},
		{"init as PID 1", c.HostConfig.Init != nil && *c.HostConfig.Init},
		{"labels", c.Config.Labels[compute.LabelDispatchID] == req.Spec.DispatchID && c.Config.Labels[compute.LabelTaskID] == req.Spec.TaskID && c.Config.Labels[compute.LabelRound] == "1"},
		{"no NATS URL for a relayed worker", !strings.Contains(strings.Join(c.Config.Env, " "), "AGORA_NATS_URL")},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("docker inspect: %s missing:\n%s", ch.what, bytes.TrimSpace(out))
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.terminal(req.Spec.DispatchID, time.Minute)
	h.settled(req.Spec.DispatchID)
}
