package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// hookEngine is the real Docker engine with test hooks around some verbs,
// to hold the runner at a chosen point of a dispatch deterministically.
// Each hook is optional.
type hookEngine struct {
	compute.Engine
	// beforeCreate may change the spec before the real create.
	beforeCreate func(spec *compute.ContainerSpec)
	// afterCreate runs once the real create returned id.
	afterCreate func(ctx context.Context, spec compute.ContainerSpec, id string)
	// start replaces the real start when it returns handled.
	start func(ctx context.Context, id string) (handled bool, err error)
	// logs replaces the real Logs when it returns handled.
	logs func(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) (handled bool, err error)

	mu      sync.Mutex
	started []string // ids the real Start was called for
}

func (e *hookEngine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	if e.beforeCreate != nil {
		e.beforeCreate(&spec)
	}
	id, err := e.Engine.Create(ctx, spec)
	if err == nil && e.afterCreate != nil {
		e.afterCreate(ctx, spec, id)
	}
	return id, err
}

func (e *hookEngine) Start(ctx context.Context, id string) error {
	if e.start != nil {
		if handled, err := e.start(ctx, id); handled {
			return err
		}
	}
	e.mu.Lock()
	e.started = append(e.started, id)
	e.mu.Unlock()
	return e.Engine.Start(ctx, id)
}

func (e *hookEngine) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	if e.logs != nil {
		if handled, err := e.logs(ctx, id, follow, stdout, stderr); handled {
			return err
		}
	}
	return e.Engine.Logs(ctx, id, follow, stdout, stderr)
}

func (e *hookEngine) starts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.started)
}

// kinds lists the stored event kinds of a dispatch, in order.
func (h *harness) kinds(id string) []schemas.EventKind {
	h.t.Helper()
	evs, err := h.bus.Events(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	var kinds []schemas.EventKind
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

// assertCleaned: no container of the dispatch and none of its host files
// are left, and its claim is marked done.
func (h *harness) assertCleaned(id string) {
	h.t.Helper()
	h.settled(id)
	left, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id})
	if err != nil || len(left) != 0 {
		h.t.Errorf("containers of %s left: %+v, %v", id, left, err)
	}
	r := h.runner
	for _, p := range []string{r.specDir(id), r.workspace(id), r.requestFile(id), r.keyDir(id), r.keyFile(id), r.cancelDir(id)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			h.t.Errorf("host file %s of %s left behind (%v)", p, id, err)
		}
	}
	c, err := h.bus.GetClaim(context.Background(), id)
	if err != nil || c == nil || c.State != "done" {
		h.t.Errorf("claim of %s = %+v, %v; want done", id, c, err)
	}
}

// TestCancelDuringCreate: a cancel that lands while the runner is in
// Engine.Create means no start: the created container is removed and the
// dispatch ends cancelled, once, with nothing left behind.
func TestCancelDuringCreate(t *testing.T) {
	t.Parallel()
	inCreate := make(chan string, 1)
	proceed := make(chan struct{})
	var release sync.Once
	eng := &hookEngine{afterCreate: func(ctx context.Context, spec compute.ContainerSpec, id string) {
		inCreate <- spec.Labels[compute.LabelDispatchID]
		<-proceed
	}}
	h := newHarness(t, func(c *Config) { eng.Engine = c.Engine; c.Engine = eng })
	h.start()
	t.Cleanup(func() { release.Do(func() { close(proceed) }) })

	req := request(`touch /workspace/ready; sleep 300`)
	h.enqueue(req)
	id := req.Spec.DispatchID
	select {
	case got := <-inCreate:
		if got != id {
			t.Fatalf("created %s, want %s", got, id)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the runner never created the container")
	}
	queued, err := h.bus.Cancel(context.Background(), id)
	if err != nil || queued {
		t.Fatalf("Cancel = %v, %v; want the runner's claim to win (not queued)", queued, err)
	}
	release.Do(func() { close(proceed) })

	ev := h.terminal(id, 2*time.Minute)
	if ev.Kind != schemas.KindCancelled {
		t.Fatalf("terminal = %s %+v, want dispatch.cancelled", ev.Kind, ev.Failure)
	}
	h.assertCleaned(id)
	if n := eng.starts(); n != 0 {
		t.Errorf("the container was started %d times after a cancel that came before Start", n)
	}
	if kinds := h.kinds(id); len(kinds) != 1 {
		t.Errorf("events = %v, want dispatch.cancelled only", kinds)
	}
}

// TestStartFailureRemovesContainer: a container whose start fails is
// removed, not left in Created for a restarted runner to adopt, and the
// failure is reported.
func TestStartFailureRemovesContainer(t *testing.T) {
	t.Parallel()
	eng := &hookEngine{start: func(ctx context.Context, id string) (bool, error) {
		return true, errors.New("injected start failure")
	}}
	h := newHarness(t, func(c *Config) { eng.Engine = c.Engine; c.Engine = eng })
	h.start()
	req := request(`echo never`)
	h.enqueue(req)
	id := req.Spec.DispatchID
	ev := h.terminal(id, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonWorkerLost || !strings.Contains(ev.Failure.Detail, "injected start failure") {
		t.Fatalf("terminal = %s %+v, want failed/worker-lost naming the start failure", ev.Kind, ev.Failure)
	}
	testutil.Eventually(t, time.Minute, "the runner to let go of "+id, func() bool { return h.runner.lookup(id) == nil })
	left, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id})
	if err != nil || len(left) != 0 {
		t.Fatalf("after a failed start, containers of %s = %+v, %v; want none", id, left, err)
	}
	h.assertCleaned(id)
}

// TestAdoptCreated: a runner stopped between create and start leaves a
// created container; the next runner process starts it, unless a cancel
// was requested meanwhile: then it is removed unstarted and the dispatch
// ends cancelled.
func TestAdoptCreated(t *testing.T) {
	t.Parallel()
	for _, cancel := range []bool{false, true} {
		name := map[bool]string{false: "started by the next runner", true: "cancelled while no runner ran"}[cancel]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inStart := make(chan string, 1)
			first := &hookEngine{start: func(ctx context.Context, id string) (bool, error) {
				inStart <- id
				<-ctx.Done() // the runner stops while starting
				return true, ctx.Err()
			}}
			h := newHarness(t, func(c *Config) { first.Engine = c.Engine; c.Engine = first })
			r1 := h.start()
			req := request(`echo adopted and started`)
			h.enqueue(req)
			id := req.Spec.DispatchID
			var cid string
			select {
			case cid = <-inStart:
			case <-time.After(2 * time.Minute):
				t.Fatal("the runner never started the container")
			}
			h.stop(r1)
			found, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id})
			if err != nil || len(found) != 1 || found[0].State != "created" {
				t.Fatalf("after the runner stopped, containers = %+v, %v; want one created", found, err)
			}
			if cancel {
				if queued, err := h.bus.Cancel(context.Background(), id); err != nil || queued {
					t.Fatalf("Cancel = %v, %v", queued, err)
				}
			}

			second := &hookEngine{Engine: first.Engine}
			h.cfg.Engine = second
			h.start()
			ev := h.terminal(id, 2*time.Minute)
			if cancel {
				if ev.Kind != schemas.KindCancelled {
					t.Fatalf("terminal = %s %+v, want dispatch.cancelled", ev.Kind, ev.Failure)
				}
				if n := second.starts(); n != 0 {
					t.Errorf("the cancelled container %s was started %d times", shortID(cid), n)
				}
				if kinds := h.kinds(id); len(kinds) != 1 {
					t.Errorf("events = %v, want dispatch.cancelled only", kinds)
				}
			} else {
				if ev.Kind != schemas.KindFinished {
					t.Fatalf("terminal = %s %+v, want dispatch.finished", ev.Kind, ev.Failure)
				}
				if n := second.starts(); n != 1 {
					t.Errorf("the adopted container was started %d times, want 1", n)
				}
			}
			h.settled(id)
		})
	}
}

// TestSIGTERMFromInside: a sub-agent that signals PID 1 (docker-init, which
// forwards to the worker) or the worker itself does not cancel its own
// dispatch; the command's exit decides. A real cancel still cancels
// (TestCancel).
func TestSIGTERMFromInside(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.start()
	req := request(`kill -TERM 1; kill -TERM $PPID; kill -INT $PPID; sleep 1; echo survived the signals`)
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFinished || *ev.ExitCode != 0 {
		t.Fatalf("terminal = %s %+v exit %d, want dispatch.finished 0; output:\n%s", ev.Kind, ev.Failure, *ev.ExitCode, h.output(req.Spec.DispatchID))
	}
	h.settled(req.Spec.DispatchID)
	out := h.output(req.Spec.DispatchID)
	if !strings.Contains(out, "survived the signals") || !strings.Contains(out, "SIGTERM ignored") {
		t.Errorf("output = %q, want the command's line and the worker's note of the ignored signal", out)
	}
}

// TestCancelBeforeWorkerHandlesIt: the runner's SIGTERM for a cancel may
// reach the worker before it has installed its handler (right after
// Start); the container then ends without a terminal event, killed by the
// signal. A cancel the runner requested is still reported as cancelled,
// not worker-lost. A stand-in entrypoint with no handler makes the window
// deterministic.
func TestCancelBeforeWorkerHandlesIt(t *testing.T) {
	t.Parallel()
	eng := &hookEngine{beforeCreate: func(spec *compute.ContainerSpec) {
		spec.Entrypoint = []string{"/bin/sh", "-c", "touch /workspace/ready; exec sleep 300"}
	}}
	h := newHarness(t, func(c *Config) { eng.Engine = c.Engine; c.Engine = eng })
	h.start()
	req := request(`echo the stand-in never runs this`)
	h.enqueue(req)
	id := req.Spec.DispatchID
	h.awaitReady(id)
	if queued, err := h.bus.Cancel(context.Background(), id); err != nil || queued {
		t.Fatalf("Cancel = %v, %v", queued, err)
	}
	ev := h.terminal(id, 2*time.Minute)
	if ev.Kind != schemas.KindCancelled {
		t.Fatalf("terminal = %s %+v, want dispatch.cancelled", ev.Kind, ev.Failure)
	}
	h.assertCleaned(id)
}

// TestCancelWhileRunnerDown: a cancel published while no runner process
// watches the control stream reaches the dispatch once the next process
// adopts its container: the durable command is read after the dispatch is
// registered, not only live.
func TestCancelWhileRunnerDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	first := h.start()
	req := request(`touch /workspace/ready; sleep 300`)
	h.enqueue(req)
	id := req.Spec.DispatchID
	h.awaitReady(id)
	h.stop(first)
	if queued, err := h.bus.Cancel(context.Background(), id); err != nil || queued {
		t.Fatalf("Cancel = %v, %v", queued, err)
	}
	h.start()
	ev := h.terminal(id, 2*time.Minute)
	if ev.Kind != schemas.KindCancelled || *ev.ExitCode != 0 {
		t.Fatalf("terminal = %s %+v exit %d, want dispatch.cancelled 0 from the worker", ev.Kind, ev.Failure, *ev.ExitCode)
	}
	h.assertCleaned(id)
}

// TestBackstopTimeout: a worker that does not stop at the dispatch timeout
// (here its spec file says one hour while the request says 1 s) is stopped
// by the runner's backstop and reported as a timeout. The runner's stop is
// not a cancel: the worker ignores it (no cancel marker) and is killed after
// the grace.
func TestBackstopTimeout(t *testing.T) {
	t.Parallel()
	eng := &hookEngine{}
	eng.beforeCreate = func(spec *compute.ContainerSpec) {
		for _, m := range spec.Mounts {
			if m.Target != containerSpecDir {
				continue
			}
			path := filepath.Join(m.Source, "spec.json")
			data, err := os.ReadFile(path)
			var s map[string]any
			if err == nil {
				err = json.Unmarshal(data, &s)
			}
			if err == nil {
				s["timeout_seconds"] = 3600
				data, err = json.Marshal(s)
			}
			if err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
			if err != nil {
				t.Errorf("rewrite the worker's spec: %v", err)
			}
		}
	}
	h := newHarness(t, func(c *Config) { eng.Engine = c.Engine; c.Engine = eng; c.Grace = 2 * time.Second })
	h.start()
	req := request(`touch /workspace/ready; sleep 300`)
	req.Spec.TimeoutSeconds = 1
	h.enqueue(req)
	id := req.Spec.DispatchID
	h.awaitReady(id)
	ev := h.terminal(id, 3*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonTimeout {
		t.Fatalf("terminal = %s %+v, want failed/timeout from the runner's backstop", ev.Kind, ev.Failure)
	}
	if !strings.Contains(ev.Failure.Detail, "stopped by the runner") {
		t.Errorf("detail = %q, want the backstop named", ev.Failure.Detail)
	}
	h.settled(id)
}

var _ compute.Engine = (*hookEngine)(nil)

// firstLine passes its first line on to w and drops the rest.
type firstLine struct {
	w    io.Writer
	done bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.done {
		return len(p), nil
	}
	if i := strings.IndexByte(string(p), '\n'); i >= 0 {
		f.done = true
		_, err := f.w.Write(p[:i+1])
		return len(p), err
	}
	_, err := f.w.Write(p)
	return len(p), err
}

// TestFollowStreamEndsEarly: when the engine's follow stream ends before
// the worker's terminal event line (seen once under load on Engine 20.10),
// the runner reads the ended container's output again and settles the
// dispatch with the worker's outcome, not as worker-lost.
func TestFollowStreamEndsEarly(t *testing.T) {
	t.Parallel()
	eng := &hookEngine{}
	eng.logs = func(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) (bool, error) {
		if !follow {
			return false, nil
		}
		// The stream gives dispatch.started only, then ends.
		return true, eng.Engine.Logs(ctx, id, true, &firstLine{w: stdout}, stderr)
	}
	h := newHarness(t, func(c *Config) { eng.Engine = c.Engine; c.Engine = eng })
	h.start()
	req := request(`echo done`)
	h.enqueue(req)
	id := req.Spec.DispatchID
	ev := h.terminal(id, 2*time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal = %s %+v, want dispatch.finished from the second read", ev.Kind, ev.Failure)
	}
	h.assertCleaned(id)
}
