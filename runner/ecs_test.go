package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// ecsHarness is a harness whose runner places its dispatches as ECS tasks
// (the EC2 launch type: the runner's files reach them as host volumes)
// through the real SDK against the loopback fake, which runs each task's
// container — the real worker image — on the local Docker engine.
type ecsHarness struct {
	*harness
	fake *ecsfake.Server
	opts ecstest.Options
}

func newECSHarness(t *testing.T, fake func(*ecsfake.Config), tweak func(*Config)) *ecsHarness {
	t.Helper()
	h := newHarness(t, tweak)
	return onECS(t, h, ecstest.Options{EC2: true, Fake: fake})
}

// onECS makes h's runner place its dispatches as ECS tasks on a new fake.
func onECS(t *testing.T, h *harness, o ecstest.Options) *ecsHarness {
	t.Helper()
	o.Cluster = "agora-test-" + h.cfg.ID
	o.Engine = func(c *ecs.Config) { c.StopTimeout = h.cfg.Grace }
	srv := ecstest.StartFake(t, h.docker, o)
	e := &ecsHarness{harness: h, fake: srv, opts: o}
	e.useNewEngine()
	// Registered after the fake's Close, so it runs before it (and after the
	// runner's Stop): nothing of this runner is left as a managed task.
	t.Cleanup(func() {
		left, err := h.engine.List(context.Background(), map[string]string{LabelRunner: h.cfg.ID})
		if err != nil {
			t.Errorf("list leftover tasks: %v", err)
		}
		for _, c := range left {
			t.Errorf("task %s (%s, dispatch %s) left behind", c.ID, c.State, c.Labels[compute.LabelDispatchID])
		}
	})
	return e
}

// useNewEngine gives the next runner a new ECS engine on the same cluster,
// as a new runner process would have.
func (e *ecsHarness) useNewEngine() {
	eng := ecstest.Engine(e.t, e.fake, e.opts)
	e.cfg.Engine, e.engine = eng, eng
}

// TestECSAskAnswerResume: a round asks, its workspace is kept, the answer
// resumes it in a new task that finishes — every step an ECS task run by
// the real worker, its output read back from CloudWatch Logs.
func TestECSAskAnswerResume(t *testing.T) {
	t.Parallel()
	h := newECSHarness(t, nil, nil)
	h.start()
	r1 := request(`mkdir -p src && echo "edited in round 1" > src/notes.txt && echo asking && agora-worker ask "Deploy to staging or production?" --option staging --option production`)
	h.enqueue(r1)
	ev := h.terminal(r1.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindNeedsInput || ev.NeedsInput.Question != "Deploy to staging or production?" {
		t.Fatalf("round 1 ended %s %+v %+v", ev.Kind, ev.Failure, ev.NeedsInput)
	}
	h.settled(r1.Spec.DispatchID)
	if out := h.output(r1.Spec.DispatchID); !strings.Contains(out, "asking") {
		t.Errorf("round 1's stored output (from CloudWatch Logs) = %q, want the runtime's output", out)
	}

	r2 := request(`test "$(cat src/notes.txt)" = "edited in round 1" && test "$AGORA_ANSWER" = staging && echo "deploying to $AGORA_ANSWER"`)
	r2.Spec.TaskID, r2.Spec.Round = r1.Spec.TaskID, 2
	r2.Spec.Resume = &schemas.Resume{Question: ev.NeedsInput.Question, Answer: "staging"}
	r2.Workspace = &schemas.WorkspaceRequest{RestoreFrom: r1.Spec.DispatchID}
	h.enqueue(r2)
	if ev := h.terminal(r2.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("round 2 ended %s %+v; output:\n%s", ev.Kind, ev.Failure, h.output(r2.Spec.DispatchID))
	}
	h.settled(r2.Spec.DispatchID)
	if out := h.output(r2.Spec.DispatchID); !strings.Contains(out, "deploying to staging") {
		t.Errorf("round 2's stored output = %q", out)
	}

	runs := h.fake.Calls("RunTask")
	if len(runs) != 2 {
		t.Errorf("RunTask calls = %d, want one per round", len(runs))
	}
	for i, req := range []schemas.DispatchRequest{r1, r2} {
		body := string(runs[i].Body)
		for _, want := range []string{
			`"clientToken":"` + containerName(h.cfg.ID, req.Spec.DispatchID) + `"`,
			`{"key":"agora.dispatch_id","value":"` + req.Spec.DispatchID + `"}`,
			`{"key":"agora.task_id","value":"` + req.Spec.TaskID + `"}`,
			`{"key":"agora.runner","value":"` + h.cfg.ID + `"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("RunTask of round %d lacks %s: %s", i+1, want, body)
			}
		}
		var in struct{ Overrides json.RawMessage }
		if err := json.Unmarshal(runs[i].Body, &in); err != nil {
			t.Fatal(err)
		}
		t.Logf("RunTask of round %d: %d bytes, overrides %d bytes (ECS allows 8192)", i+1, len(body), len(in.Overrides))
		if len(in.Overrides) > 2048 {
			t.Errorf("overrides of round %d are %d bytes: the spec must travel as a file, not in them", i+1, len(in.Overrides))
		}
	}
	// Host volumes are per dispatch: each definition is used once.
	if reg, dereg := len(h.fake.Calls("RegisterTaskDefinition")), len(h.fake.Calls("DeregisterTaskDefinition")); reg != 2 || dereg != 2 {
		t.Errorf("task definitions registered %d, deregistered %d; want 2 and 2", reg, dereg)
	}
}

// TestECSCancelWhileProvisioning: a dispatch cancelled while its task is
// still provisioning ends cancelled, and no container ever runs.
func TestECSCancelWhileProvisioning(t *testing.T) {
	t.Parallel()
	cancelWhileProvisioning(t, newECSHarness(t, func(c *ecsfake.Config) { c.ProvisionDelay = 10 * time.Minute }, nil), "")
}

// cancelWhileProvisioning cancels a dispatch whose task is still
// provisioning (h's fake must be slow to provision) and wants it ended
// cancelled, the task stopped and no container run.
func cancelWhileProvisioning(t *testing.T, h *ecsHarness, network string) {
	t.Helper()
	h.start()
	req := request(`echo should never run`)
	req.Network = network
	h.enqueue(req)
	testutil.Eventually(t, time.Minute, "the task to be launched", func() bool { return len(h.fake.Calls("RunTask")) == 1 })
	if _, err := h.bus.Cancel(context.Background(), req.Spec.DispatchID); err != nil {
		t.Fatal(err)
	}
	ev := h.terminal(req.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindCancelled || *ev.ExitCode != 0 {
		t.Fatalf("terminal = %s exit %d %+v, want cancelled 0", ev.Kind, *ev.ExitCode, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	if n := len(h.fake.Calls("StopTask")); n < 1 {
		t.Errorf("StopTask calls = %d, want the cancel's", n)
	}
	left, err := h.docker.List(context.Background(), map[string]string{ecsfake.LabelFake: h.fake.ID()})
	if err != nil || len(left) != 0 {
		t.Errorf("containers run by the fake = %+v, %v; want none", left, err)
	}
}

// TestECSRunnerRestartAdopts: the runner process goes away with its task
// running; the next process (a new ECS engine, nothing in memory) finds
// the task by its tags, follows it, and the dispatch ends once.
func TestECSRunnerRestartAdopts(t *testing.T) {
	t.Parallel()
	h := newECSHarness(t, nil, nil)
	restartAdopts(t, h.harness, h.useNewEngine)
	if n := len(h.fake.Calls("RunTask")); n != 1 {
		t.Errorf("RunTask calls = %d, want 1 (adopted, not run again)", n)
	}
}

// TestECSSecretsNeverInOverrides: an aws-sm: secret is resolved by the
// runner on its host and reaches the task as a file of its secrets volume;
// no ECS call carries its value, and the task has no AWS variable.
func TestECSSecretsNeverInOverrides(t *testing.T) {
	t.Parallel()
	sm := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"aws-db-password"}`)}})
	h := newECSHarness(t, nil, func(c *Config) { c.AWSEnv = sm.Environ() })
	h.start()
	req := request(`cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^AWS_' && exit 9
test "$DB_PASSWORD" = aws-db-password || exit 3; echo "db password: $DB_PASSWORD"`)
	req.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"DB_PASSWORD":"aws-sm:prod/db#password"}}`)}
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	out := h.output(req.Spec.DispatchID)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("dispatch ended %s %+v (exit 9: AWS variables in the task); output:\n%s", ev.Kind, ev.Failure, out)
	}
	h.settled(req.Spec.DispatchID)
	if !strings.Contains(out, "db password: [REDACTED:DB_PASSWORD]") {
		t.Errorf("stored output = %q", out)
	}
	for _, c := range h.fake.Calls("") {
		if strings.Contains(string(c.Body), "aws-db-password") {
			t.Errorf("%s carries the secret's value: %s", c.Target, c.Body)
		}
	}
}

// TestECSTaskThatNeverRan: a task stopped before its container ran (here
// its image cannot be pulled) has no exit code and no worker event: the
// runner reports worker-lost with ECS's stoppedReason.
func TestECSTaskThatNeverRan(t *testing.T) {
	t.Parallel()
	h := newECSHarness(t, nil, nil)
	h.start()
	req := request(`echo never`)
	req.Image = "agora-test-no-such-image:" + h.cfg.ID
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonWorkerLost || *ev.ExitCode != exitEngineError ||
		!strings.Contains(ev.Failure.Detail, "never ran") || !strings.Contains(ev.Failure.Detail, "CannotPullContainerError") {
		t.Errorf("terminal = %s exit %d %+v; want worker-lost %d naming CannotPullContainerError", ev.Kind, *ev.ExitCode, ev.Failure, exitEngineError)
	}
	h.settled(req.Spec.DispatchID)
}
