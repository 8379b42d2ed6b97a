package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/images/imagestest"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

var (
	workerImage string
	dockerErr   error
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(serveChildEnv); dir != "" {
		os.Exit(serveChild(dir)) // the serve process of BenchmarkServeAt100k
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	image, cleanup, err := imagestest.WorkerImage(ctx, "../../../..")
	cancel()
	workerImage, dockerErr = image, err
	code := m.Run()
	cleanup()
	if code == 0 {
		// Stop must leave nothing running: no server, no connection, no stream.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// asker asks once, keeps a note in its partial_state and finishes with the
// answer on the next round (orchestrator/e2e_test.go has the longer one).
const asker = `
if [ -z "$AGORA_ANSWER" ]; then
  echo '{"seen": 1}' > /tmp/state.json
  agora-worker ask "Pick a colour" --option red --option green --option blue --state /tmp/state.json
  exit 0
fi
grep -q '"seen": 1' "$AGORA_RESUME_FILE"
echo "painted $AGORA_ANSWER"
`

func subagent(name, script string) schemas.Subagent {
	return schemas.Subagent{Name: name, Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script}}
}

// TestServeStopRestart runs the whole stack on real Docker and an embedded
// NATS, as `agora serve` does: a question asked, answered through the API
// with a named token and the task finished; /metrics behind the same
// token; a graceful Stop that leaves a running dispatch's container
// running; and a second Start on the same data dir that still has the
// tasks (JetStream on disk) and adopts the container, whose task finishes.
func TestServeStopRestart(t *testing.T) {
	testenv.NeedDocker(t, workerImage, dockerErr)
	eng := computetest.Docker(t)
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", Tokens: []string{"alice:s3cret"}, Orchestrator: true, Runner: true,
		Slots: 2, Image: workerImage, Metrics: true, Logger: natstest.Logger(t)}
	s := start(t, cfg)
	id := s.RunnerID()
	if id == "" || !strings.Contains(id, "-") {
		t.Fatalf("RunnerID() = %q, want host name and suffix", id)
	}
	t.Cleanup(func() {
		left, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
		if err != nil {
			t.Errorf("list containers of runner %s: %v", id, err)
		}
		for _, c := range left {
			t.Errorf("container %s (%s) of runner %s left behind", c.Name, c.State, id)
			_ = eng.Remove(context.Background(), c.ID)
		}
	})
	if _, err := Start(ctx, cfg); err == nil || !strings.Contains(err.Error(), "in use by another agora (pid ") {
		t.Errorf("a second Start on the data dir = %v; want it refused, naming the pid", err)
	}

	c := client.New(s.URL(), "s3cret")
	if _, err := client.New(s.URL(), "").List(ctx, wire.ListOptions{}); !isStatus(err, http.StatusUnauthorized) {
		t.Errorf("List without a token = %v; want 401", err)
	}
	task, err := c.Submit(ctx, wire.SubmitRequest{TaskID: "paint", Subagent: subagent("painter", asker)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	task = wait(t, c, task.ID, wire.StateNeedsInput)
	if q := task.Rounds[0].Question; q == nil || q.Question != "Pick a colour" {
		t.Fatalf("round 1 question = %+v", q)
	}
	metrics := scrape(t, s.URL(), "s3cret", http.StatusOK)
	expectSeries(t, metrics, `agora_open_questions 1`, `agora_tasks{state="needs_input"} 1`,
		`agora_dispatch_duration_seconds_count{outcome="needs_input"} 1`)
	if _, err := c.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "2"}); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	task = wait(t, c, task.ID, wire.StateFinished)
	if a := task.Rounds[0].Answer; len(task.Rounds) != 2 || a == nil || a.Value != "green" || a.By != "alice" {
		t.Fatalf("task after the answer: %d rounds, answer %+v; want 2 rounds, green by alice", len(task.Rounds), a)
	}

	metrics = scrape(t, s.URL(), "s3cret", http.StatusOK)
	expectSeries(t, metrics,
		`agora_tasks{state="finished"} 1`,
		`agora_tasks{state="needs_input"} 0`,
		`agora_open_questions 0`,
		`agora_answer_wait_seconds_count 1`,
		`agora_task_rounds_bucket{le="2"} 1`,
		`agora_task_rounds_bucket{le="1"} 0`,
		`agora_dispatch_duration_seconds_count{outcome="finished"} 1`,
		`agora_dispatch_duration_seconds_count{outcome="needs_input"} 1`,
		fmt.Sprintf(`agora_runner_slots{runner=%q} 2`, id),
		fmt.Sprintf(`agora_runner_egress_denied_total{runner=%q} 0`, id),
		`go_goroutines `,
	)
	// The runner lets go of the slot after the terminal event, once the
	// container is removed.
	idle := fmt.Sprintf(`agora_runner_slots_in_use{runner=%q} 0`, id)
	testutil.Eventually(t, time.Minute, idle, func() bool {
		return strings.Contains(scrape(t, s.URL(), "s3cret", http.StatusOK), "\n"+idle+"\n")
	})
	scrape(t, s.URL(), "", http.StatusUnauthorized)
	scrape(t, s.URL(), "wrong", http.StatusUnauthorized)

	// A dispatch that runs through the restart.
	sleeper, err := c.Submit(ctx, wire.SubmitRequest{TaskID: "sleep", Subagent: subagent("sleeper", "sleep 8; echo slept")})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	testutil.Eventually(t, 2*time.Minute, "the sleeper to run", func() bool {
		got, err := c.Get(ctx, sleeper.ID)
		return err == nil && got.State == wire.StateRunning
	})
	expectSeries(t, scrape(t, s.URL(), "s3cret", http.StatusOK), `agora_tasks{state="running"} 1`,
		fmt.Sprintf(`agora_runner_slots_in_use{runner=%q} 1`, id))
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done is open after Stop")
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after a clean Stop = %v", err)
	}
	if err := s.Stop(stopCtx); err != nil {
		t.Errorf("second Stop = %v; want nil (idempotent)", err)
	}
	left, err := eng.List(ctx, map[string]string{runner.LabelRunner: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || !left[0].Running() {
		t.Fatalf("containers of runner %s after Stop = %+v; want the sleeper's, still running", id, left)
	}

	s = start(t, cfg) // same data dir: same JetStream store, same runner id
	if s.RunnerID() != id {
		t.Errorf("RunnerID() after a restart = %q, want %q (kept in the data dir)", s.RunnerID(), id)
	}
	c = client.New(s.URL(), "s3cret")
	got, err := c.Get(ctx, "paint")
	if err != nil || got.State != wire.StateFinished || len(got.Rounds) != 2 {
		t.Fatalf("Get(paint) after a restart = %+v, %v; want it finished after 2 rounds", got, err)
	}
	got = wait(t, c, sleeper.ID, wire.StateFinished)
	if got.Rounds[0].Attempt > 1 {
		t.Errorf("the sleeper ran %d times; want the adopted dispatch only", got.Rounds[0].Attempt)
	}
	testutil.Eventually(t, time.Minute, "the runner to remove the sleeper's container", func() bool {
		left, err := eng.List(ctx, map[string]string{runner.LabelRunner: id})
		return err == nil && len(left) == 0
	})
}

// start starts a stack and stops it in t.Cleanup. What it serves is
// checked against openapi.json (checkAPI).
func start(t *testing.T, cfg Config) *Stack {
	t.Helper()
	cfg.WrapHTTP = checkAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

// wait follows the task through the API until it is in state (or ended).
func wait(t *testing.T, c *client.Client, id string, state wire.State) *wire.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		task, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatalf("Wait(%s): %v", id, err)
		}
		if task.State == state {
			return task
		}
		if task.State.Terminal() || task.State == wire.StateNeedsInput {
			t.Fatalf("task %s is %s (%+v), want %s", id, task.State, task.Outcome, state)
		}
	}
}

func isStatus(err error, status int) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == status
}

// scrape GETs /metrics with token (none when empty) and checks the status.
func scrape(t *testing.T, base, token string, want int) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET /metrics (token %q) = %d, want %d:\n%s", token, resp.StatusCode, want, body)
	}
	return string(body)
}

// expectSeries checks that the exposition has each of want: a whole line
// (a series and its value), or a line's beginning when want ends in a space.
func expectSeries(t *testing.T, exposition string, want ...string) {
	t.Helper()
	lines := strings.Split(exposition, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w || strings.HasSuffix(w, " ") && strings.HasPrefix(l, w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", exposition)
	}
}

// checkAPI is a Config.WrapHTTP that checks every request and response of
// the API against openapi.json, failing t on a mismatch.
func checkAPI(t testing.TB) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler { return openapitest.Handler(t, h, openapitest.Lenient) }
}
