package main

// Tests of the task verbs through run, against the real API handler in
// front of the real orchestrator on an embedded NATS server, with no
// runner: the tests play the runner, publishing each round's lifecycle
// events (and output) on the bus with the dispatch ids <task>-r1, … as a
// worker does. The Docker end-to-end tests of dispatch --wait and logs -f
// are in dispatch_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// taskServer is an agora API with the real orchestrator and no runner.
type taskServer struct {
	url      string
	env      []string // AGORA_SERVER=url
	bus      *bus.Bus
	store    storage.Store
	storeURI string
	orch     *orchestrator.Orchestrator
}

func newTaskServer(t *testing.T) *taskServer {
	t.Helper()
	return newTaskServerWith(t, nil)
}

// newTaskServerWith is newTaskServer with the API serving wrap(the
// orchestrator), so a test can act between the API's calls.
func newTaskServerWith(t *testing.T, wrap func(orchestrator.Service) orchestrator.Service) *taskServer {
	t.Helper()
	ctx := t.Context()
	b := bustest.Bus(t)
	storeURI := "file://" + t.TempDir()
	store, err := storage.Open(ctx, storeURI, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, b, store)
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Store: store, Registry: reg, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start orchestrator: %v", err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	var svc orchestrator.Service = o
	if wrap != nil {
		svc = wrap(o)
	}
	h, err := api.NewHandler(api.Config{Service: svc, Registry: reg, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, h, openapitest.Lenient))
	t.Cleanup(srv.Close)
	return &taskServer{url: srv.URL, env: []string{"AGORA_SERVER=" + srv.URL, "USER=tester"}, bus: b, store: store, storeURI: storeURI, orch: o}
}

// result is what one run of the CLI gave.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// agora runs the CLI with args in environment env.
func agora(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, env, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// want checks the exit code and that stdout and stderr contain the given
// substrings; a failure (code not 0) must be one line on stderr.
func (r result) want(t *testing.T, what string, code int, stdout, stderr []string) {
	t.Helper()
	ok := r.code == code
	for _, s := range stdout {
		ok = ok && strings.Contains(r.stdout, s)
	}
	for _, s := range stderr {
		ok = ok && strings.Contains(r.stderr, s)
	}
	if !ok {
		t.Errorf("%s: %v; want exit %d, stdout with %q, stderr with %q", what, r, code, stdout, stderr)
	}
	if code != 0 && strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("%s: stderr %q, want one line", what, r.stderr)
	}
}

// submit creates a task that runs echo.
func (s *taskServer) submit(t *testing.T, id string) {
	t.Helper()
	req := wire.SubmitRequest{TaskID: id, Subagent: schemas.Subagent{Name: "echoer", Runtime: schemas.RuntimeExec, Command: []string{"echo", "hi"}}}
	if _, err := s.orch.Submit(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}

// event publishes a lifecycle event of dispatch id, as a worker would.
func (s *taskServer) event(t *testing.T, kind schemas.EventKind, id string, edit func(*schemas.Event)) {
	t.Helper()
	zero, ms := 0, int64(1500)
	ev := schemas.Event{Kind: kind, DispatchID: id, Time: time.Now().UTC()}
	if kind.Terminal() {
		ev.ExitCode, ev.DurationMS = &zero, &ms
	}
	if edit != nil {
		edit(&ev)
	}
	if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
		t.Fatalf("publish %s of %s: %v", kind, id, err)
	}
}

// ask makes round 1 of task id ask question with options.
func (s *taskServer) ask(t *testing.T, id, question string, options ...string) {
	t.Helper()
	s.event(t, schemas.KindStarted, id+"-r1", nil)
	s.event(t, schemas.KindNeedsInput, id+"-r1", func(ev *schemas.Event) {
		ev.NeedsInput = &schemas.NeedsInput{Question: question, Options: options}
	})
	s.waitState(t, id, wire.StateNeedsInput)
}

// end makes the current round of task id end as kind.
func (s *taskServer) end(t *testing.T, id, dispatchID string, kind schemas.EventKind, state wire.State) {
	t.Helper()
	s.event(t, schemas.KindStarted, dispatchID, nil)
	s.event(t, kind, dispatchID, func(ev *schemas.Event) {
		if kind == schemas.KindFailed {
			three := 3
			ev.ExitCode = &three
			ev.Failure = &schemas.Failure{Reason: schemas.ReasonWorkerFailed, Detail: "the command exited 3"}
		}
	})
	s.waitState(t, id, state)
}

func (s *taskServer) waitState(t *testing.T, id string, state wire.State) *wire.Task {
	t.Helper()
	var task *wire.Task
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("task %s to be %s", id, state), func() bool {
		var err error
		task, err = s.orch.Get(context.Background(), id)
		return err == nil && task.State == state
	})
	return task
}

func (s *taskServer) get(t *testing.T, id string) *wire.Task {
	t.Helper()
	task, err := s.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// TestStatusQuestionsAnswer: the attention view, the open questions and
// answering them, with every bad answer refused in one line and nothing
// changed.
func TestStatusQuestionsAnswer(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	env := s.env
	s.submit(t, "paint")
	s.ask(t, "paint", "Which colour?", "red", "green", "blue")
	s.submit(t, "waiting")
	s.submit(t, "done")
	s.end(t, "done", "done-r1", schemas.KindFinished, wire.StateFinished)
	s.submit(t, "broken")
	s.end(t, "broken", "broken-r1", schemas.KindFailed, wire.StateFailed)

	r := agora(t, env, "status")
	r.want(t, "status", 0, []string{"1 queued · 1 needs input · 1 finished · 1 failed", "TASK", "NEXT", "agora answer paint red",
		"agora respawn broken", `agora continue done "<follow-up message>"`, "agora logs waiting -f"}, nil)
	lines := strings.Split(r.stdout, "\n")
	if len(lines) < 7 || !strings.HasPrefix(lines[3], "paint ") || !strings.HasPrefix(lines[4], "broken ") {
		t.Errorf("status table:\n%s\nwant the question first, then the failure", r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("status wrote colors to a buffer: %q", r.stdout)
	}
	r = agora(t, env, "status", "--json")
	var list wire.TaskList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Tasks) != 4 || list.Summary.Counts[wire.StateNeedsInput] != 1 {
		t.Errorf("status --json = %v: %d tasks, %+v, %v", r, len(list.Tasks), list.Summary, err)
	}
	agora(t, env, "status", "--state", "failed").want(t, "status --state failed", 0,
		[]string{"1 queued · 1 needs input · 1 finished · 1 failed\nshowing failed: 1 of 4 tasks\n", "broken"}, nil)
	agora(t, env, "status", "--state", "weird").want(t, "status --state weird", 2, nil, []string{`--state "weird": want one of`})
	agora(t, env, "status", "paint").want(t, "status paint", 0,
		[]string{"task paint · sub-agent echoer · needs input", "next: agora answer paint red", "round 1  needs input",
			"asked", "Which colour? (red / green / blue)", "waiting   for an answer"}, nil)
	agora(t, env, "status", "nope").want(t, "status of an unknown task", 1, nil,
		[]string{"agora status: no task nope on " + s.url + "; 'agora status' lists the tasks"})
	agora(t, env, "status", "a", "b").want(t, "status with two tasks", 2, nil, []string{"want at most one TASK"})

	r = agora(t, env, "questions")
	r.want(t, "questions", 0, []string{"TASK", "ANSWER WITH", "paint", "Which colour?", "red / green / blue", "agora answer paint red",
		"IF UNANSWERED", " UTC (in "}, nil)
	for _, args := range [][]string{{"questions", "--json"}, {"questions", "-o", "json"}} {
		r = agora(t, env, args...)
		var qs wire.QuestionList
		if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs.Questions) != 1 || qs.Questions[0].TaskID != "paint" {
			t.Errorf("%v = %v, %v", args, r, err)
		} else if iu := qs.Questions[0].IfUnanswered; iu == nil || iu.At.IsZero() || iu.Action == "" || !strings.Contains(r.stdout, `"if_unanswered":`) {
			t.Errorf("%v: if_unanswered = %+v, want what happens and when", args, iu)
		}
	}

	// Bad answers: one line each, and the question stays open.
	agora(t, env, "answer", "paint", "purple").want(t, "an answer that is not an option", 2, nil,
		[]string{`agora answer: task paint round 1: answer "purple" is not one of: red, green, blue (or 1-3)`})
	agora(t, env, "answer", "paint", "7").want(t, "an option number out of range", 2, nil, []string{"is not one of: red, green, blue"})
	agora(t, env, "answer", "paint", "red", "--round", "2").want(t, "an answer for another round", 1, nil,
		[]string{"round 2 has no open question (the current round is 1)"})
	agora(t, env, "answer", "waiting", "red").want(t, "an answer to a queued task", 1, nil,
		[]string{"task waiting is queued: no open question; 'agora questions' lists the open ones"})
	agora(t, env, "answer", "nope", "red").want(t, "an answer to an unknown task", 1, nil, []string{"no task nope"})
	agora(t, env, "answer", "paint").want(t, "answer without ANSWER", 2, nil, []string{"want TASK ANSWER"})
	agora(t, env, "answer", "paint", " ").want(t, "an empty answer", 2, nil, []string{"the ANSWER is empty"})
	agora(t, env, "answer", "paint", "red", "--round", "x").want(t, "a round that is not a number", 2, nil, []string{`invalid value "x" for flag -round`})
	if task := s.get(t, "paint"); task.State != wire.StateNeedsInput || view.LastRound(task).Answer != nil {
		t.Fatalf("after bad answers the task is %s with answer %+v; want the question still open", task.State, view.LastRound(task).Answer)
	}

	// The answer by its number, flags after the arguments.
	agora(t, env, "answer", "paint", "2", "--by", "alice", "--round", "1").want(t, "answer by index", 0,
		[]string{"paint round 1 answered: green (by alice); round 2 queued"}, nil)
	agora(t, env, "answer", "paint", "red").want(t, "a second answer", 1, nil,
		[]string{"task paint round 1: question already answered by alice via cli at", `(answer "green")`})
	agora(t, env, "status", "paint").want(t, "status after the answer", 0,
		[]string{"answer    green — by alice via cli", "round 2  queued"}, nil)
	agora(t, env, "questions").want(t, "questions when none is open", 0, []string{"no open questions"}, nil)

	// Without --by and without a token, $USER answers.
	s.submit(t, "second")
	s.ask(t, "second", "Proceed?")
	r = agora(t, env, "answer", "second", "yes, go ahead", "--json")
	var task wire.Task
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil || task.Rounds[0].Answer == nil ||
		task.Rounds[0].Answer.By != "tester" || task.Rounds[0].Answer.Channel != "cli" || task.Rounds[0].Answer.Value != "yes, go ahead" {
		t.Errorf("answer --json = %v, %v; want the answer by $USER (tester) via cli", r, err)
	}
}

// TestTaskOperations: cancel, respawn, continue and rm, and each refused
// in one line, with what fits the task's state, when it does not fit.
func TestTaskOperations(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	env := s.env
	s.submit(t, "op")
	agora(t, env, "cancel", "op").want(t, "cancel a queued task", 0, []string{"op cancelled (cancelled while queued); 'agora respawn op' runs it again"}, nil)
	// A cleanup step can always run cancel: an ended task is exit 0, saying how it ended.
	agora(t, env, "cancel", "op").want(t, "cancel a cancelled task", 0,
		[]string{"op had already ended: cancelled (cancelled while queued); nothing to cancel"}, nil)
	agora(t, env, "respawn", "op").want(t, "respawn", 0, []string{"op respawned: round 1 (attempt 2) queued"}, nil)
	if task := s.get(t, "op"); task.State != wire.StateQueued || view.LastRound(task).DispatchID != "op-r1-2" {
		t.Fatalf("after respawn: %s, %s; want queued op-r1-2", task.State, view.LastRound(task).DispatchID)
	}
	agora(t, env, "respawn", "op").want(t, "respawn a queued task", 1, nil,
		[]string{"task op is queued; respawn takes a failed, cancelled or expired task; what fits now: agora logs op -f"})
	agora(t, env, "continue", "op", "more").want(t, "continue a queued task", 1, nil, []string{"continue takes a finished task"})
	s.end(t, "op", "op-r1-2", schemas.KindFinished, wire.StateFinished)
	agora(t, env, "continue", "op", "now in French", "--by", "bob").want(t, "continue", 0,
		[]string{"op continued: round 2 queued with the message"}, nil)
	if task := s.get(t, "op"); task.Rounds[len(task.Rounds)-2].Answer.By != "bob" || view.LastRound(task).FollowUp != "now in French" {
		t.Errorf("after continue: rounds %+v; want round 2 following up on bob's message", task.Rounds)
	}
	agora(t, env, "continue", "op").want(t, "continue without a message", 2, nil, []string{"want TASK MESSAGE"})
	agora(t, env, "continue", "op", "  ").want(t, "continue with an empty message", 2, nil, []string{"want TASK MESSAGE"})
	r := agora(t, env, "cancel", "op", "--json")
	var task wire.Task
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil || task.State != wire.StateCancelled {
		t.Errorf("cancel --json = %v, %v", r, err)
	}

	agora(t, env, "rm", "op").want(t, "rm", 0, []string{"removed op and its stored output"}, nil)
	agora(t, env, "status", "op").want(t, "status of a removed task", 1, nil, []string{"no task op"})
	for _, v := range []string{"cancel", "respawn", "rm"} {
		agora(t, env, v, "nope").want(t, v+" of an unknown task", 1, nil, []string{"agora " + v + ": no task nope on " + s.url})
		agora(t, env, v).want(t, v+" without a task", 2, nil, []string{"want one TASK"})
		agora(t, env, v, "a", "b").want(t, v+" with two tasks", 2, nil, []string{"want one TASK"})
	}
	agora(t, env, "continue", "nope", "more").want(t, "continue an unknown task", 1, nil, []string{"no task nope"})
	s.submit(t, "rmjson")
	r = agora(t, env, "rm", "rmjson", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"removed": true`) {
		t.Errorf("rm --json = %v", r)
	}
	if page, err := s.orch.List(t.Context(), wire.ListOptions{}); err != nil || len(page.Tasks) != 0 {
		t.Errorf("after rm: %d tasks, %v; want none", len(page.Tasks), err)
	}
}

// TestServerNotRunning: every verb says, in one line, that there is no
// server where it looked, and how to start one; --server and
// $AGORA_SERVER choose where it looks.
func TestServerNotRunning(t *testing.T) {
	t.Parallel()
	addr := "http://" + freeAddr(t)
	for _, args := range [][]string{
		{"dispatch", "--command", "true"}, {"dispatch", "--command", "true", "--wait"}, {"status"}, {"status", "t-1"},
		{"questions"}, {"answer", "t-1", "A"}, {"watch"}, {"logs", "t-1"}, {"logs", "t-1", "-f"},
		{"cancel", "t-1"}, {"respawn", "t-1"}, {"continue", "t-1", "more"}, {"rm", "t-1"}, {"stats"},
	} {
		agora(t, []string{"AGORA_SERVER=" + addr}, args...).want(t, strings.Join(args, " "), 1, nil,
			[]string{"agora " + args[0] + ": cannot reach the agora server at " + addr + " (is `agora serve` running?)\n"})
	}
	agora(t, nil, "status", "--server", strings.TrimPrefix(addr, "http://")).want(t, "status --server HOST:PORT", 1, nil,
		[]string{"cannot reach the agora server at " + addr + " "})
	agora(t, []string{"AGORA_SERVER=ftp://x"}, "status").want(t, "a server URL of another scheme", 2, nil,
		[]string{`AGORA_SERVER "ftp://x": want the agora server's URL, e.g. http://127.0.0.1:7070`})
}

// TestNotAnAgoraServer: a URL that answers, but not as agora, and a token
// the server refuses, each say what to check.
func TestNotAnAgoraServer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nil) // 404 for everything
	t.Cleanup(srv.Close)
	agora(t, []string{"AGORA_SERVER=" + srv.URL}, "status").want(t, "status against another server", 1, nil,
		[]string{"does not answer like an agora server", "check --server or AGORA_SERVER"})

	s := newTaskServer(t)
	h, err := api.NewHandler(api.Config{Service: s.orch, Tokens: []string{"ci:s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	authed := httptest.NewServer(openapitest.Handler(t, h, openapitest.Lenient))
	t.Cleanup(authed.Close)
	agora(t, []string{"AGORA_SERVER=" + authed.URL, "AGORA_TOKEN=wrong"}, "questions").want(t, "a wrong token", 1, nil,
		[]string{"refused the request", "pass --token or set AGORA_TOKEN"})
	agora(t, []string{"AGORA_SERVER=" + authed.URL}, "questions", "--token", "s3cret").want(t, "the right token", 0,
		[]string{"no open questions"}, nil)
}

// started runs the CLI in the background until ctx ends or it returns.
type started struct {
	stdout, stderr *testutil.Buffer
	done           chan int
}

func start(ctx context.Context, env []string, args ...string) *started {
	s := &started{stdout: &testutil.Buffer{}, stderr: &testutil.Buffer{}, done: make(chan int, 1)}
	go func() { s.done <- run(ctx, args, env, s.stdout, s.stderr) }()
	return s
}

// wait returns the exit code, failing the test after timeout.
func (s *started) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case code := <-s.done:
		return code
	case <-time.After(timeout):
		t.Fatalf("the command did not return within %s; stdout %q, stderr %q", timeout, s.stdout.String(), s.stderr.String())
		return -1
	}
}

// TestWatch: without a terminal, one line per change of a task's state or
// round, with the command that answers a question; --json one change per
// line; interrupted, it exits 0.
func TestWatch(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	s.submit(t, "before")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	plain := start(ctx, s.env, "watch")
	jsonOut := start(ctx, s.env, "watch", "--json")
	testutil.Eventually(t, 30*time.Second, "watch to show the task there was", func() bool {
		return strings.Contains(plain.stdout.String(), "before  queued  round 1") && strings.Contains(jsonOut.stdout.String(), `"task_id":"before"`)
	})
	s.submit(t, "w")
	s.ask(t, "w", "Left or right?", "left", "right")
	testutil.Eventually(t, 30*time.Second, "watch to show the question", func() bool {
		return strings.Contains(plain.stdout.String(), "w  needs input  round 1  needs input: Left or right? (left / right)  → agora answer w left")
	})
	if err := s.orch.Remove(t.Context(), "before"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "watch to show the removal", func() bool {
		return strings.Contains(plain.stdout.String(), "before  removed") && strings.Contains(jsonOut.stdout.String(), `"removed":true`)
	})
	cancel()
	if code := plain.wait(t, 30*time.Second); code != 0 {
		t.Errorf("watch exited %d after the interrupt, want 0; stderr %q", code, plain.stderr.String())
	}
	if code := jsonOut.wait(t, 30*time.Second); code != 0 {
		t.Errorf("watch --json exited %d after the interrupt, want 0", code)
	}
	for _, line := range strings.Split(strings.TrimSpace(plain.stdout.String()), "\n") {
		if strings.Count(plain.stdout.String(), line) != 1 {
			t.Errorf("watch wrote %q more than once:\n%s", line, plain.stdout.String())
		}
	}
	var states []wire.State
	for _, line := range strings.Split(strings.TrimSpace(jsonOut.stdout.String()), "\n") {
		var ch wire.Change
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("watch --json line %q: %v", line, err)
		}
		if ch.TaskID == "w" && ch.Task != nil {
			states = append(states, ch.Task.State)
		}
	}
	if len(states) == 0 || states[len(states)-1] != wire.StateNeedsInput {
		t.Errorf("watch --json states of w = %v, want them to end in needs_input", states)
	}
	agora(t, s.env, "watch", "a", "b").want(t, "watch with two tasks", 2, nil, []string{"want at most one TASK"})
}
