package orchestrator

// End-to-end tests of the whole loop on real Docker and an embedded NATS:
// orchestrator → AGORA_QUEUE → runner → container → worker → events →
// orchestrator → answerers → the next round, with the answer and the
// partial_state the sub-agent left.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

type stack struct {
	t      *testing.T
	srv    *natsserver.Server
	bus    *bus.Bus
	store  storage.Store
	orch   *Orchestrator
	runner *runner.Runner
	cfg    Config
}

var seq atomic.Int64

func newStack(t *testing.T, tweak func(*Config)) *stack {
	t.Helper()
	return newStackOn(t, nil, tweak)
}

// newStackOn is newStack with the runner's configuration changed by
// onRunner, given the Docker engine (its engine, storage, mode); the
// orchestrator uses the runner's storage.
func newStackOn(t *testing.T, onRunner func(eng *docker.Engine, rc *runner.Config), tweak func(*Config)) *stack {
	t.Helper()
	testenv.NeedDocker(t, workerImage, dockerErr)
	runnerID := fmt.Sprintf("orch-test-%d-%d", testutil.RunNumber(), seq.Add(1))
	p := newStackParts(t, runnerID)
	rc := p.runnerConfig(t, runnerID, natstest.Logger(t))
	if onRunner != nil {
		onRunner(p.docker, &rc)
	}
	s := &stack{t: t, srv: p.srv, bus: p.bus, store: rc.Store, runner: startRunner(t, rc)}
	s.cfg = Config{Bus: p.bus, Store: rc.Store, Logger: natstest.Logger(t)}
	if tweak != nil {
		tweak(&s.cfg)
	}
	s.orch = s.startOrchestrator()
	return s
}

func (s *stack) startOrchestrator() *Orchestrator {
	s.t.Helper()
	return startOrchestrator(s.t, s.cfg)
}

// stackParts are what every whole-stack test and benchmark here runs on:
// a NATS server and a connection, file storage, the Docker engine.
type stackParts struct {
	srv      *natsserver.Server
	bus      *bus.Bus
	store    storage.Store
	storeDir string
	docker   *docker.Engine
}

// newStackParts starts them; when the test ends, no container of the
// given runners may be left.
func newStackParts(tb testing.TB, runnerIDs ...string) stackParts {
	tb.Helper()
	ctx := context.Background()
	p := stackParts{srv: natstest.Start(tb), storeDir: tb.TempDir()}
	var err error
	if p.bus, err = bus.Connect(ctx, p.srv.ClientURL(), bus.Options{Name: tb.Name()}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.bus.Close)
	if p.store, err = storage.Open(ctx, "file://"+p.storeDir, storage.Options{}); err != nil {
		tb.Fatal(err)
	}
	if p.docker, err = docker.New(docker.Config{}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, id := range runnerIDs {
			left, _ := p.docker.List(context.Background(), map[string]string{runner.LabelRunner: id})
			for _, c := range left {
				tb.Errorf("container %s of dispatch %s left behind", c.ID[:12], c.Labels[compute.LabelDispatchID])
				_ = p.docker.Remove(context.Background(), c.ID)
			}
		}
		p.docker.Close()
	})
	return p
}

// runnerConfig is a runner of id on these parts: 2 slots, the worker
// image, a grace of 3 s.
func (p stackParts) runnerConfig(tb testing.TB, id string, log *slog.Logger) runner.Config {
	return runner.Config{ID: id, Slots: 2, Image: workerImage, DataDir: tb.TempDir(),
		StorageURI: "file://" + p.storeDir, Store: p.store, Bus: p.bus, Engine: p.docker, Grace: 3 * time.Second,
		Logger: log}
}

// startRunner starts a runner, stopped when the test ends.
func startRunner(tb testing.TB, cfg runner.Config) *runner.Runner {
	tb.Helper()
	r, err := runner.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return r
}

// startOrchestrator starts an orchestrator, stopped when the test ends.
func startOrchestrator(tb testing.TB, cfg Config) *Orchestrator {
	tb.Helper()
	o, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		tb.Fatalf("start orchestrator: %v", err)
	}
	tb.Cleanup(func() { _ = o.Stop(context.Background()) })
	return o
}

// script is an exec sub-agent.
func script(name, sh string) schemas.Subagent {
	return schemas.Subagent{Name: name, Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", sh}}
}

func (s *stack) submit(req wire.SubmitRequest) *wire.Task {
	s.t.Helper()
	if req.TaskID == "" {
		req.TaskID = fmt.Sprintf("t%d-%d", testutil.RunNumber(), seq.Add(1))
	}
	t, err := s.orch.Submit(context.Background(), req)
	if err != nil {
		s.t.Fatalf("Submit: %v", err)
	}
	return t
}

// waitState polls the task until it is in one of states.
func (s *stack) waitState(id string, states ...wire.State) *wire.Task {
	s.t.Helper()
	var t *wire.Task
	err := testutil.Poll(context.Background(), 3*time.Minute, 50*time.Millisecond, func() error {
		var err error
		if t, err = s.orch.Get(context.Background(), id); err != nil {
			return testutil.Permanent(err)
		}
		if slices.Contains(states, t.State) {
			return nil
		}
		return fmt.Errorf("task %s is %s, want one of %v", id, t.State, states)
	})
	if err != nil {
		data, _ := json.MarshalIndent(t, "", "  ")
		s.t.Fatalf("%v:\n%s", err, data)
	}
	return t
}

// asker asks on every round until it has n answers, keeping them in its
// partial_state; then it checks what it was given and finishes.
const asker = `
set -e
n=$(cat .agora/count 2>/dev/null || echo 0)
if [ -n "$AGORA_ANSWER" ]; then
  grep -q "\"seen\": $n" "$AGORA_RESUME_FILE"
  echo "$AGORA_ANSWER" >> answers.txt
fi
n=$((n+1)); echo $n > .agora/count
if [ $n -le ${ROUNDS:-1} ]; then
  echo "{\"seen\": $n}" > /tmp/state.json
  agora-worker ask "Pick a colour for step $n" --option red --option green --option blue --context "round $AGORA_ROUND" --state /tmp/state.json
  exit 0
fi
echo "answers: $(tr '\n' ' ' < answers.txt)"
`

func askerWith(rounds int) schemas.Subagent {
	return script("asker", "ROUNDS="+fmt.Sprint(rounds)+"\n"+asker)
}

func TestAskAnswerResume(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Input: json.RawMessage(`{"goal":"paint"}`)})
	if task.Attention.Kind != "none" || task.Attention.Required {
		t.Errorf("a queued task's attention = %+v, want kind none, nothing required", task.Attention)
	}
	task = s.waitState(task.ID, wire.StateNeedsInput)
	r := currentRound(task)
	if r.Question.Question != "Pick a colour for step 1" || len(r.Question.Options) != 3 || string(r.Question.PartialState) != `{"seen":1}` {
		t.Fatalf("question = %+v", r.Question)
	}
	if a := task.Attention; !a.Required || a.Kind != "needs_answer" || a.Action != "agora answer "+task.ID+" red" {
		t.Errorf("attention = %+v", a)
	}
	page, err := s.orch.Questions(ctx, wire.PageOptions{})
	if qs := page.Questions; err != nil || len(qs) != 1 || qs[0].TaskID != task.ID {
		t.Fatalf("Questions = %+v, %v", page, err)
	}
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "purple", By: "alice"}); !errors.Is(err, wire.ErrInvalidAnswer) {
		t.Errorf("Answer(purple) = %v, want ErrInvalidAnswer", err)
	}
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "2", By: "alice", Channel: "cli"}); err != nil {
		t.Fatalf("Answer(2): %v", err)
	}
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished {
		t.Fatalf("task ended %s: %+v", task.State, task.Outcome)
	}
	first := task.Rounds[0]
	if first.Answer.Value != "green" || first.Answer.By != "alice" || first.Answer.Channel != "cli" {
		t.Errorf("round 1 answer = %+v, want green by alice via cli", first.Answer)
	}
	out := s.output(task.Rounds[1].DispatchID)
	if !strings.Contains(out, "answers: green") {
		t.Errorf("round 2 output = %q, want it to have read the answer", out)
	}
}

func (s *stack) output(dispatchID string) string {
	s.t.Helper()
	rc, err := s.store.Get(context.Background(), "dispatches/"+dispatchID+"/output.log")
	if err != nil {
		s.t.Fatalf("output of %s (stored before its terminal event): %v", dispatchID, err)
	}
	defer rc.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := rc.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func TestThreeRoundsAndConcurrentAnswers(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	task := s.submit(wire.SubmitRequest{Subagent: askerWith(3)})
	for round, want := range []string{"red", "green", "blue"} {
		task = s.waitState(task.ID, wire.StateNeedsInput)
		if currentRound(task).N != round+1 {
			t.Fatalf("question on round %d, want %d", currentRound(task).N, round+1)
		}
		// Two answers race: exactly one wins, the other is told who won.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, who := range []string{"alice", "bob"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: want, By: who})
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case errors.Is(err, wire.ErrAlreadyAnswered):
				if !strings.Contains(err.Error(), "already answered by") {
					t.Errorf("loser's error = %v", err)
				}
			default:
				t.Errorf("Answer: %v", err)
			}
		}
		if wins != 1 {
			t.Errorf("round %d: %d answers won, want 1 (%v)", round+1, wins, errs)
		}
	}
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished || len(task.Rounds) != 4 {
		t.Fatalf("task %s after %d rounds: %+v", task.State, len(task.Rounds), task.Outcome)
	}
	if out := s.output(task.Rounds[3].DispatchID); !strings.Contains(out, "answers: red green blue") {
		t.Errorf("final output = %q", out)
	}
	hist := s.orch.request(task, &task.Rounds[3]).Spec.Resume.History
	if len(hist) != 3 || hist[2].Answer != "blue" {
		t.Errorf("round 4 history = %+v", hist)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	rules := t.TempDir() + "/rules.json"
	if err := os.WriteFile(rules, []byte(`[{"question": "colour for step 1", "answer": "blue"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, nil)
	ctx := context.Background()

	t.Run("lookup rule", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Route: "lookup:" + rules + ",human"})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		if a := task.Rounds[0].Answer; a == nil || a.Value != "blue" || !strings.HasPrefix(a.Channel, "lookup") {
			t.Errorf("answer = %+v, want blue from lookup", a)
		}
	})
	t.Run("memory reuses an answer", func(t *testing.T) {
		first := s.submit(wire.SubmitRequest{Subagent: askerWith(1), AllowMemory: true})
		first = s.waitState(first.ID, wire.StateNeedsInput)
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: first.ID, Answer: "green", By: "carol"}); err != nil {
			t.Fatal(err)
		}
		s.waitState(first.ID, wire.StateFinished)
		second := s.submit(wire.SubmitRequest{Subagent: askerWith(1), AllowMemory: true, Route: "memory,human"})
		second = s.waitState(second.ID, wire.StateFinished, wire.StateFailed)
		a := second.Rounds[0].Answer
		if a == nil || a.Value != "green" || a.Channel != "memory" || !strings.Contains(a.By, "carol") {
			t.Errorf("answer = %+v, want green from memory naming carol", a)
		}
	})
	t.Run("escalation after a timeout, then the default", func(t *testing.T) {
		sub := script("defaulter", `if [ -z "$AGORA_ANSWER" ]; then agora-worker ask "Proceed?" --option yes --option no --default no; fi`)
		task := s.submit(wire.SubmitRequest{Subagent: sub, Route: "human=1s,human=1s"})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed, wire.StateExpired)
		r := task.Rounds[0]
		if r.Answer == nil || r.Answer.Value != "no" || !r.Answer.Assumed || r.Answer.Channel != "default" {
			t.Fatalf("answer = %+v, want the default, assumed", r.Answer)
		}
		timedOut := 0
		for _, d := range r.Decisions {
			if d.Result == "timed out" {
				timedOut++
			}
		}
		if timedOut != 2 {
			t.Errorf("decisions = %+v, want both steps timed out", r.Decisions)
		}
	})
	t.Run("expired without a default", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Route: "human=1s"})
		task = s.waitState(task.ID, wire.StateExpired, wire.StateFinished, wire.StateFailed)
		if task.State != wire.StateExpired || task.Outcome == nil || !strings.Contains(task.Outcome.Detail, "no default") {
			t.Errorf("task = %s %+v", task.State, task.Outcome)
		}
		if task.Attention.Action != "agora respawn "+task.ID {
			t.Errorf("attention = %+v", task.Attention)
		}
	})
}

func TestLimitsAndOperations(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	t.Run("max rounds", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(5), Limits: wire.Limits{MaxRounds: 2}})
		task = s.waitState(task.ID, wire.StateNeedsInput)
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "red"}); err != nil {
			t.Fatal(err)
		}
		task = s.waitState(task.ID, wire.StateFailed, wire.StateFinished)
		if task.Outcome == nil || task.Outcome.Reason != "max_rounds" {
			t.Errorf("outcome = %+v, want max_rounds", task.Outcome)
		}
	})
	t.Run("cancel while waiting, then respawn", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(1)})
		task = s.waitState(task.ID, wire.StateNeedsInput)
		task, err := s.orch.Cancel(ctx, task.ID)
		if err != nil || task.State != wire.StateCancelled {
			t.Fatalf("Cancel = %v, %v", task, err)
		}
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "red"}); !errors.Is(err, wire.ErrNoQuestion) {
			t.Errorf("Answer after cancel = %v, want ErrNoQuestion", err)
		}
		task, err = s.orch.Respawn(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		task = s.waitState(task.ID, wire.StateNeedsInput)
		if r := currentRound(task); r.N != 1 || r.Attempt != 2 {
			t.Errorf("respawned round = %d attempt %d, want 1 attempt 2", r.N, r.Attempt)
		}
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "red"}); err != nil {
			t.Fatal(err)
		}
		s.waitState(task.ID, wire.StateFinished)
	})
	t.Run("cancel while running", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: script("sleeper", "echo working; sleep 300")})
		task = s.waitState(task.ID, wire.StateRunning)
		if _, err := s.orch.Cancel(ctx, task.ID); err != nil {
			t.Fatal(err)
		}
		task = s.waitState(task.ID, wire.StateCancelled)
		err := testutil.Poll(ctx, time.Minute, 50*time.Millisecond, func() error {
			if got := currentRound(task).State; got != wire.StateCancelled {
				if now, err := s.orch.Get(ctx, task.ID); err == nil {
					task = now
				}
				return fmt.Errorf("round state = %s, want the dispatch cancelled", got)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	t.Run("continue a finished task", func(t *testing.T) {
		sub := script("echoer", `if [ -n "$AGORA_ANSWER" ]; then echo "follow-up: $AGORA_ANSWER"; else echo first; fi`)
		task := s.submit(wire.SubmitRequest{Subagent: sub})
		task = s.waitState(task.ID, wire.StateFinished)
		task, err := s.orch.Continue(ctx, task.ID, "now do the docs", "dave")
		if err != nil {
			t.Fatal(err)
		}
		task = s.waitState(task.ID, wire.StateFinished)
		if len(task.Rounds) != 2 || !strings.Contains(s.output(task.Rounds[1].DispatchID), "follow-up: now do the docs") {
			t.Errorf("rounds = %d, output %q", len(task.Rounds), s.output(task.Rounds[1].DispatchID))
		}
	})
	t.Run("idempotent submit", func(t *testing.T) {
		req := wire.SubmitRequest{TaskID: fmt.Sprintf("idem-%d", testutil.RunNumber()), Subagent: script("x", "true")}
		a := s.submit(req)
		b := s.submit(req)
		if a.ID != b.ID || a.CreatedAt != b.CreatedAt {
			t.Errorf("same id and request gave two tasks")
		}
		req.Subagent = script("x", "false")
		if _, err := s.orch.Submit(ctx, req); !errors.Is(err, wire.ErrConflict) {
			t.Errorf("same id, other request = %v, want ErrConflict", err)
		}
		s.waitState(a.ID, wire.StateFinished)
		if err := s.orch.Remove(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.orch.Get(ctx, a.ID); !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("Get after Remove = %v", err)
		}
	})
	list, err := s.orch.List(ctx, wire.ListOptions{})
	if err != nil || list.Summary.Text == "" {
		t.Errorf("List summary = %+v, %v", list.Summary, err)
	}
}

// TestRestart: the orchestrator stops (its state is all in JetStream) between
// a question and its answer, and between an answer and the next round's
// enqueue; a new one picks up: the question is still answerable, its timer
// resumes, and the interrupted round is queued once.
func TestRestart(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	task := s.submit(wire.SubmitRequest{Subagent: askerWith(2), Route: "human=2s", Input: json.RawMessage(`{}`)})
	task = s.waitState(task.ID, wire.StateNeedsInput)
	if err := s.orch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s.orch = s.startOrchestrator()
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "red"}); err != nil {
		t.Fatalf("answer after restart: %v", err)
	}
	task = s.waitState(task.ID, wire.StateNeedsInput)
	if currentRound(task).N != 2 {
		t.Fatalf("round %d asks, want 2", currentRound(task).N)
	}

	// A crash after the answer was stored but before round 3 was enqueued.
	if err := s.orch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.orch.store.update(ctx, task.ID, func(t *wire.Task) error {
		r := currentRound(t)
		r.Answer = &wire.Answer{Value: "green", By: "erin", Channel: "api", At: time.Now()}
		s.orch.nextRound(t, r.N+1, "")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.orch = s.startOrchestrator()
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished || len(task.Rounds) != 3 {
		t.Fatalf("after recovery: %s with %d rounds %+v", task.State, len(task.Rounds), task.Outcome)
	}
	evs, _ := s.bus.Events(ctx, task.Rounds[2].DispatchID)
	started := 0
	for _, ev := range evs {
		if ev.Kind == schemas.KindStarted {
			started++
		}
	}
	if started != 1 {
		t.Errorf("round 3 started %d times, want once", started)
	}
}

// TestAgentAndWebhookAnswerers: another sub-agent answers (its
// .agora/answer.json), and a webhook answers over signed HTTP.
func TestAgentAndWebhookAnswerers(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	var calls atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := answer.VerifySignature(secret, r.Header.Get("X-Agora-Timestamp"), body, r.Header.Get("X-Agora-Signature")); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if calls.Add(1) == 1 {
			http.Error(w, "try again", http.StatusServiceUnavailable) // retried
			return
		}
		var q answer.Question
		_ = json.Unmarshal(body, &q)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"answer": %q, "by": "ops-bot"}`, q.Options[len(q.Options)-1])
	}))
	t.Cleanup(hook.Close)
	triage := script("triage", `grep -q '"options":\["red","green","blue"\]' "$AGORA_INPUT_FILE" && echo '{"answer": "green"}' > .agora/answer.json`)
	s := newStack(t, func(c *Config) {
		c.Subagents = map[string]schemas.Subagent{"triage": triage}
		c.Answerers = &answer.Resolver{WebhookSecret: secret, WebhookOptions: answer.WebhookOptions{Backoff: 10 * time.Millisecond}}
	})
	t.Run("agent", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Route: "agent:triage=2m,human"})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		a := task.Rounds[0].Answer
		if a == nil || a.Value != "green" || a.Channel != "agent:triage" || !strings.Contains(a.By, "triage") {
			t.Fatalf("answer = %+v, want green from the triage agent", a)
		}
	})
	t.Run("webhook", func(t *testing.T) {
		task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Route: "webhook:" + hook.URL + "=1m,human"})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		a := task.Rounds[0].Answer
		if a == nil || a.Value != "blue" || !strings.Contains(a.By, "ops-bot") {
			t.Fatalf("answer = %+v, want blue from the webhook", a)
		}
		if calls.Load() < 2 {
			t.Errorf("webhook called %d times, want a retry after 503", calls.Load())
		}
	})
}

// TestQueuedCancelTimersAndWaitLimit: a task queued behind busy slots is
// cancelled before it starts; a question's timer survives a restart (the
// default is taken after the deadline by the new process); and the total
// wait limit ends a task with its reason.
func TestQueuedCancelTimersAndWaitLimit(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()

	busy := []*wire.Task{s.submit(wire.SubmitRequest{Subagent: script("busy", "sleep 300")}), s.submit(wire.SubmitRequest{Subagent: script("busy", "sleep 300")})}
	for _, b := range busy {
		s.waitState(b.ID, wire.StateRunning)
	}
	queued := s.submit(wire.SubmitRequest{Subagent: script("late", "echo never")})
	if got, _ := s.orch.Get(ctx, queued.ID); got.State != wire.StateQueued || got.Attention.Kind != "none" {
		t.Fatalf("third task = %s %+v, want queued with nothing required", got.State, got.Attention)
	}
	list, _ := s.orch.List(ctx, wire.ListOptions{})
	if !strings.Contains(list.Summary.Text, "2 running · 1 queued") {
		t.Errorf("summary = %q", list.Summary.Text)
	}
	if _, err := s.orch.Cancel(ctx, queued.ID); err != nil {
		t.Fatal(err)
	}
	for _, b := range busy {
		if _, err := s.orch.Cancel(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range append(busy, queued) {
		s.waitState(b.ID, wire.StateCancelled)
	}
	evs, _ := s.bus.Events(ctx, currentRound(queued).DispatchID)
	for _, ev := range evs {
		if ev.Kind == schemas.KindStarted {
			t.Errorf("the cancelled queued task started")
		}
	}

	sub := script("defaulter", `if [ -z "$AGORA_ANSWER" ]; then agora-worker ask "Ship it?" --option yes --option no --default yes; fi`)
	timed := s.submit(wire.SubmitRequest{Subagent: sub, Route: "human=3s"})
	s.waitState(timed.ID, wire.StateNeedsInput)
	if err := s.orch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The next process starts after the deadline: its clock is an hour on.
	s.cfg.Now = func() time.Time { return time.Now().Add(time.Hour) }
	s.orch = s.startOrchestrator()
	timed = s.waitState(timed.ID, wire.StateFinished, wire.StateExpired, wire.StateFailed)
	if a := timed.Rounds[0].Answer; a == nil || a.Value != "yes" || !a.Assumed {
		t.Errorf("after a restart past the deadline: answer = %+v, want the default, assumed", a)
	}

	limited := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Route: "human=1h", Limits: wire.Limits{MaxWaitSeconds: 1}})
	limited = s.waitState(limited.ID, wire.StateFailed, wire.StateExpired)
	if limited.Outcome == nil || limited.Outcome.Reason != "max_wait" {
		t.Errorf("outcome = %+v, want max_wait", limited.Outcome)
	}
}
