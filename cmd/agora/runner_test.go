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

	tag := fmt.Sprintf("agora-worker:cli-test-%d", os.Getpid())
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
	id := fmt.Sprintf("cli-test-%d", os.Getpid())
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

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := []string{"runner", "--nats", srv.ClientURL(), "--data-dir", t.TempDir(), "--image", tag,
		"--id", id, "--slots", "1", "--grace", "3s", "--log-cap", "65536"}
	var code int
	returned := make(chan struct{}) // closed once code is set
	go func() {
		defer close(returned)
		code = run(ctx, args, os.Environ(), logs, logs)
	}()
	t.Cleanup(func() {
		// A failed test must not leave run behind.
		cancel()
		select {
		case <-returned:
		case <-time.After(2 * time.Minute):
			t.Error("agora runner did not return within 2m of its context being cancelled")
		}
	})

	// What an orchestrator does: its own connection, streams ensured, a request.
	b, err := bus.Connect(context.Background(), srv.ClientURL(), bus.Options{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.EnsureEventStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureQueue(context.Background()); err != nil {
		t.Fatal(err)
	}
	dispatchID := fmt.Sprintf("cli-%d-%s", os.Getpid(), computetest.RandomSuffix())
	req := schemas.DispatchRequest{Spec: schemas.DispatchSpec{
		DispatchID: dispatchID, TaskID: "task-" + dispatchID, Round: 1,
		Subagent: schemas.Subagent{Name: "hello", Runtime: schemas.RuntimeExec, Command: []string{"sh", "-c", "echo hi"}},
		Input:    json.RawMessage(`{}`),
	}}
	if _, err := b.Enqueue(context.Background(), req); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}

	var ev *schemas.Event
	testutil.Eventually(t, 2*time.Minute, "the terminal event of "+dispatchID, func() bool {
		select {
		case <-returned:
			t.Fatalf("agora runner returned %d before the dispatch ended", code)
		default:
		}
		ev, err = b.TerminalEvent(context.Background(), dispatchID)
		if err != nil {
			t.Fatalf("TerminalEvent(%s): %v", dispatchID, err)
		}
		return ev != nil
	})
	if ev.Kind != schemas.KindFinished || ev.ExitCode == nil || *ev.ExitCode != 0 {
		t.Fatalf("terminal event of %s = %s (exit %v, failure %+v); want dispatch.finished, exit 0", dispatchID, ev.Kind, ev.ExitCode, ev.Failure)
	}
	testutil.Eventually(t, time.Minute, "the runner to remove the container of "+dispatchID, func() bool {
		left, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
		return err == nil && len(left) == 0
	})

	cancel() // the first SIGINT
	select {
	case <-returned:
		if code != 0 {
			t.Errorf("agora runner returned %d after its context was cancelled; want 0", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("agora runner did not stop within 1m of its context being cancelled")
	}
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
