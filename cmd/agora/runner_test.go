package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
)

// TestRunnerEndToEnd drives the two verbs as a user would, through run: it
// builds the worker image with `agora image build` from a freshly compiled
// worker, starts `agora runner` on the real Docker engine against an
// in-process NATS server, runs one exec dispatch to dispatch.finished, and
// stops the runner by cancelling its context, as the first SIGINT does.
func TestRunnerEndToEnd(t *testing.T) {
	t.Parallel()
	eng := computetest.Docker(t) // skips without Docker, fails under CI=true
	computetest.Busybox(t)       // the dispatch below needs /bin/sh in the image
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)

	tag := fmt.Sprintf("agora-worker:cli-test-%d", testutil.RunNumber())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := eng.RemoveImage(ctx, tag); err != nil {
			t.Errorf("remove test image %s: %v", tag, err)
		}
	})
	build := []string{"image", "build", "--worker", worker, "--tag", tag, "--json"}
	var stdout bytes.Buffer
	if code := run(context.Background(), build, os.Environ(), &stdout, logs); code != 0 {
		t.Fatalf("agora %s = %d; want 0", strings.Join(build, " "), code)
	}
	var img imageResult
	if err := json.Unmarshal(stdout.Bytes(), &img); err != nil {
		t.Fatalf("agora image build --json printed %q: %v", stdout.String(), err)
	}
	if img.Image != tag || !strings.HasPrefix(img.ID, "sha256:") || !img.Busybox || (img.Status != "built" && img.Status != "up-to-date") {
		t.Errorf("agora image build --json = %+v; want image %s with busybox, built or up-to-date", img, tag)
	}
	stdout.Reset()
	if code := run(context.Background(), build[:len(build)-1], os.Environ(), &stdout, logs); code != 0 || stdout.String() != tag+" is up to date ("+img.ID+")\n" {
		t.Errorf("second agora image build = %d, %q; want 0, %q", code, stdout.String(), tag+" is up to date ("+img.ID+")")
	}

	srv := natstest.Start(t)
	id := fmt.Sprintf("cli-test-%d", testutil.RunNumber())
	t.Cleanup(func() {
		// The runner removes every container it settles: none may be left.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		left, err := eng.List(ctx, map[string]string{runner.LabelRunner: id})
		if err != nil {
			t.Errorf("list containers of runner %s: %v", id, err)
		}
		for _, c := range left {
			t.Errorf("container %s (%s) of runner %s left behind", c.ID, c.State, id)
			if err := eng.Remove(ctx, c.ID); err != nil {
				t.Errorf("remove container %s: %v", c.ID, err)
			}
		}
	})

	args := []string{"runner", "--nats", srv.ClientURL(), "--data-dir", t.TempDir(), "--image", tag,
		"--id", id, "--slots", "1", "--grace", "3s", "--log-cap", "65536"}
	p := startInProcess(t, args, os.Environ(), logs)
	// What an orchestrator does: its own connection, streams ensured, a request.
	b := queueBus(t, srv.ClientURL())
	dispatchID := enqueueScript(t, b, "cli", "echo hi", "")
	ev := terminalEvent(t, b, dispatchID, p)
	if ev.Kind != schemas.KindFinished || ev.ExitCode == nil || *ev.ExitCode != 0 {
		t.Fatalf("terminal event of %s = %s (exit %v, failure %+v); want dispatch.finished, exit 0", dispatchID, ev.Kind, ev.ExitCode, ev.Failure)
	}
	testutil.Eventually(t, time.Minute, "the runner to remove the container of "+dispatchID, func() bool {
		left, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
		return err == nil && len(left) == 0
	})

	p.stop(t)
}

// testWriter turns what run writes to stdout and stderr into t.Log lines,
// and drops what comes after the test's cleanup.
type testWriter struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}

// inProcess is `agora <args>` run in this test's process, as main runs it,
// until its context is cancelled (the first SIGINT).
type inProcess struct {
	cancel   context.CancelFunc
	returned chan struct{} // closed once code is set
	code     int
}

// startInProcess runs `agora <args>` in the background; a test that ends
// early still cancels it and waits for it.
func startInProcess(t *testing.T, args, environ []string, logs *testWriter) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{cancel: cancel, returned: make(chan struct{})}
	go func() {
		defer close(p.returned)
		p.code = run(ctx, args, environ, logs, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.returned:
		case <-time.After(2 * time.Minute):
			t.Errorf("agora %s did not return within 2m of its context being cancelled", args[0])
		}
	})
	return p
}

// stop cancels it, as the first SIGINT does, and wants exit code 0.
func (p *inProcess) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case <-p.returned:
		if p.code != 0 {
			t.Errorf("agora returned %d after its context was cancelled; want 0", p.code)
		}
	case <-time.After(time.Minute):
		t.Fatal("agora did not stop within 1m of its context being cancelled")
	}
}

// queueBus is what an orchestrator has before it enqueues: its own
// connection, the streams ensured.
func queueBus(t *testing.T, natsURL string) *bus.Bus {
	t.Helper()
	ctx := context.Background()
	b, err := bus.Connect(ctx, natsURL, bus.Options{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureEventStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

// enqueueScript enqueues one exec dispatch of `sh -c script` and returns
// its id.
func enqueueScript(t *testing.T, b *bus.Bus, prefix, script, network string) string {
	t.Helper()
	id := fmt.Sprintf("%s-%d-%s", prefix, testutil.RunNumber(), computetest.RandomSuffix())
	req := schemas.DispatchRequest{Spec: schemas.DispatchSpec{
		DispatchID: id, TaskID: "task-" + id, Round: 1,
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: []string{"sh", "-c", script}},
		Input:    json.RawMessage(`{}`),
	}, Network: network}
	if _, err := b.Enqueue(context.Background(), req); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return id
}

// terminalEvent waits for the dispatch's terminal event; p, when given,
// must not return before it.
func terminalEvent(t *testing.T, b *bus.Bus, id string, p *inProcess) *schemas.Event {
	t.Helper()
	var ev *schemas.Event
	testutil.Eventually(t, 2*time.Minute, "the terminal event of "+id, func() bool {
		if p != nil {
			select {
			case <-p.returned:
				t.Fatalf("agora returned %d before dispatch %s ended", p.code, id)
			default:
			}
		}
		var err error
		if ev, err = b.TerminalEvent(context.Background(), id); err != nil {
			t.Fatalf("TerminalEvent(%s): %v", id, err)
		}
		return ev != nil
	})
	return ev
}
