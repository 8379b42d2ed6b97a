package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/secrets/awssm"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// The task role's credentials, as the fake's credentials endpoint gives
// them to a Fargate task; the runner's own are others.
const (
	taskRoleKeyID  = "ASIAAGORATASKROLE"
	runnerS3KeyID  = "AKIDAGORARUNNER"
	fargateTimeout = 2 * time.Minute
)

// newFargateHarness is a harness whose runner places its dispatches on
// Fargate through the fake: no host mounts, S3 storage the task reaches
// with the task role's credentials, and aws-sm secrets the fake resolves
// with the execution role when the task starts.
func newFargateHarness(t *testing.T, sm *awssmtest.Server, fake func(*ecsfake.Config)) (*ecsHarness, *storagetest.S3) {
	t.Helper()
	s3 := storagetest.StartS3(t)
	store := s3.Open(t, "fargate", runnerS3KeyID)
	h := newHarness(t, func(c *Config) {
		c.StorageURI, c.Store, c.NoHostMounts = s3.URI("fargate"), store, true
		if sm != nil {
			c.AWSEnv = sm.Environ() // the runner turns secret names into ARNs
		}
	})
	h.store = store
	e := onECS(t, h, ecstest.Options{Fake: func(c *ecsfake.Config) {
		c.TaskRoleCredentials = aws.Credentials{AccessKeyID: taskRoleKeyID, SecretAccessKey: "task-role-secret", SessionToken: "task-role-token"}
		if sm != nil {
			resolver := awssm.New(awssm.Options{Environ: sm.Environ()})
			c.ResolveSecret = func(ctx context.Context, valueFrom string) (string, error) {
				return resolver.Resolve(ctx, "aws-sm:"+valueFrom)
			}
		}
		if fake != nil {
			fake(c)
		}
	}})
	return e, s3
}

// exchanges lists what is left under exchange/ in storage.
func exchanges(t *testing.T, store storage.Store) []string {
	t.Helper()
	keys, err := store.List(context.Background(), "exchange/")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestFargateAskAnswerResume: the demo's loop on Fargate. Round 1 gets an
// aws-sm secret resolved by ECS at start, edits its workspace and asks;
// the worker snapshots the workspace to S3 with the task role; round 2
// is restored from it by its worker, resumes with the answer and finishes,
// leaving an answer file. No task gets a host volume, no ECS call carries
// the secret or an AWS credential, the sub-agent cannot read the event key
// (the worker deleted it from storage before it started), and the
// dispatches' exchanges are gone once they are settled.
func TestFargateAskAnswerResume(t *testing.T) {
	t.Parallel()
	sm := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db-password": {String: awssmtest.Str("aws-db-password")}})
	h, s3 := newFargateHarness(t, sm, nil)
	h.start()
	ctx := context.Background()

	r1 := request(`test "$DB_PASSWORD" = aws-db-password || { echo "secret not injected" >&2; exit 3; }
mkdir -p src && echo "edited in round 1" > src/notes.txt && echo asking && agora-worker ask "Deploy to staging or production?" --option staging --option production`)
	r1.Network = schemas.NetworkBridge
	r1.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"DB_PASSWORD":"aws-sm:prod/db-password"}}`)}
	h.enqueue(r1)
	ev := h.terminal(r1.Spec.DispatchID, fargateTimeout)
	if ev.Kind != schemas.KindNeedsInput || ev.NeedsInput.Question != "Deploy to staging or production?" {
		t.Fatalf("round 1 ended %s %+v %+v; output:\n%s", ev.Kind, ev.Failure, ev.NeedsInput, h.output(r1.Spec.DispatchID))
	}
	h.settled(r1.Spec.DispatchID)
	rec, err := h.store.Get(ctx, snapshotKey(r1.Spec.DispatchID))
	if err != nil {
		t.Fatalf("round 1's workspace record: %v", err)
	}
	rec.Close()

	r2 := request(`test "$(cat src/notes.txt)" = "edited in round 1" || exit 4
test "$AGORA_ANSWER" = staging || exit 5
mkdir -p .agora/artifacts && echo '{"answer":"done"}' > .agora/answer.json
echo "deployed" > .agora/artifacts/deploy.log
printf '"%s"' "$(head -c 20000 /dev/zero | tr '\0' x)" > .agora/result.json
echo "deploying to $AGORA_ANSWER"`)
	r2.Network = schemas.NetworkBridge
	r2.Spec.TaskID, r2.Spec.Round = r1.Spec.TaskID, 2
	r2.Spec.Resume = &schemas.Resume{Question: ev.NeedsInput.Question, Answer: "staging"}
	r2.Workspace = &schemas.WorkspaceRequest{RestoreFrom: r1.Spec.DispatchID}
	h.enqueue(r2)
	ev2 := h.terminal(r2.Spec.DispatchID, fargateTimeout)
	if ev2.Kind != schemas.KindFinished {
		t.Fatalf("round 2 ended %s %+v; output:\n%s", ev2.Kind, ev2.Failure, h.output(r2.Spec.DispatchID))
	}
	h.settled(r2.Spec.DispatchID)
	// Its result (over the inline size) and its artifact were written to S3
	// by the worker with the task role, content-addressed, and are there by
	// their sha256.
	if ev2.ResultRef == nil || len(ev2.Artifacts) != 1 || ev2.Artifacts[0].Name != "deploy.log" {
		t.Fatalf("round 2's finished event: result_ref %+v, artifacts %+v; want a ref and deploy.log", ev2.ResultRef, ev2.Artifacts)
	}
	if data, err := storage.GetVerified(ctx, h.store, storage.BlobKey(ev2.ResultRef.SHA256), ev2.ResultRef.SHA256, schemas.ResultMaxBytes); err != nil || len(data) != 20002 {
		t.Errorf("round 2's result in S3: %d bytes, %v; want 20002", len(data), err)
	}
	if data, err := storage.GetVerified(ctx, h.store, storage.BlobKey(ev2.Artifacts[0].SHA256), ev2.Artifacts[0].SHA256, 1<<10); err != nil || string(data) != "deployed\n" {
		t.Errorf("round 2's artifact in S3 = %q, %v", data, err)
	}
	if out := h.output(r2.Spec.DispatchID); !strings.Contains(out, "deploying to staging") {
		t.Errorf("round 2's stored output = %q", out)
	}
	answer, err := getCapped(ctx, h.store, answerKey(r2.Spec.DispatchID), 1<<10)
	if err != nil || !strings.Contains(string(answer), `"done"`) {
		t.Errorf("round 2's answer file = %q, %v", answer, err)
	}

	if n := s3.RequestsBy(taskRoleKeyID); n == 0 {
		t.Error("no S3 request was signed with the task role's credentials: the worker did not read its files from storage")
	}
	for _, c := range h.fake.Calls("") {
		body := string(c.Body)
		for _, leak := range []string{"aws-db-password", runnerS3KeyID, "task-role-secret", `"sourcePath"`} {
			if strings.Contains(body, leak) {
				t.Errorf("%s carries %s: %s", c.Target, leak, body)
			}
		}
	}
	for i, run := range h.fake.Calls("RunTask") {
		var in struct{ Overrides json.RawMessage }
		if err := json.Unmarshal(run.Body, &in); err != nil {
			t.Fatal(err)
		}
		t.Logf("RunTask of round %d: overrides %d bytes (ECS allows 8192)", i+1, len(in.Overrides))
		if len(in.Overrides) > 2048 {
			t.Errorf("overrides of round %d are %d bytes: the spec must travel through storage, not in them", i+1, len(in.Overrides))
		}
	}
	if left := exchanges(t, h.store); len(left) != 0 {
		t.Errorf("exchange objects left after both rounds settled: %v", left)
	}
}

// TestFargatePrivateValuesGone: while the sub-agent runs, its dispatch's
// private values (the event key, --worker-env) are no longer in storage:
// the worker read and deleted them first.
func TestFargatePrivateValuesGone(t *testing.T) {
	t.Parallel()
	h, _ := newFargateHarness(t, nil, nil)
	h.cfg.WorkerEnv = []string{"AGORA_TEST_WORKER_ONLY=x"}
	h.start()
	ctx := context.Background()
	req := request(`while [ ! -e /tmp/go ]; do sleep 0.05; done 2>/dev/null; echo never`)
	req.Network = schemas.NetworkBridge
	req.Spec.TimeoutSeconds = 60
	h.enqueue(req)
	var prefix string
	testutil.Eventually(t, fargateTimeout, "the exchange's spec", func() bool {
		for _, k := range exchanges(t, h.store) {
			if strings.HasSuffix(k, "/"+schemas.ExchangeSpec) {
				prefix = strings.TrimSuffix(k, schemas.ExchangeSpec)
				return true
			}
		}
		return false
	})
	testutil.Eventually(t, fargateTimeout, "the worker to start", func() bool {
		evs, _ := h.bus.Events(ctx, req.Spec.DispatchID)
		for _, ev := range evs {
			if ev.Kind == schemas.KindStarted {
				return true
			}
		}
		return false
	})
	if _, err := h.store.Stat(ctx, prefix+schemas.ExchangePrivate); err == nil {
		t.Errorf("%s%s is still in storage while the sub-agent runs", prefix, schemas.ExchangePrivate)
	}
	if _, err := h.bus.Cancel(ctx, req.Spec.DispatchID); err != nil {
		t.Fatal(err)
	}
	// The cancel marker in the exchange makes the runner's SIGTERM a
	// cancel the worker reports itself.
	ev := h.terminal(req.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindCancelled {
		t.Fatalf("terminal = %s %+v, want cancelled", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	if left := exchanges(t, h.store); len(left) != 0 {
		t.Errorf("exchange objects left: %v", left)
	}
}

// TestFargateCancelWhileProvisioning: cancelled while its task is still
// provisioning, a dispatch ends cancelled, no container ever runs, and its
// exchange is removed.
func TestFargateCancelWhileProvisioning(t *testing.T) {
	t.Parallel()
	h, _ := newFargateHarness(t, nil, func(c *ecsfake.Config) { c.ProvisionDelay = 10 * time.Minute })
	cancelWhileProvisioning(t, h, schemas.NetworkBridge)
	if left := exchanges(t, h.store); len(left) != 0 {
		t.Errorf("exchange objects left: %v", left)
	}
}

// TestFargateRunnerRestartAdopts: the runner goes away with a task
// running; the next runner process (a new engine, nothing in memory)
// adopts it by its tags and settles it once, its exchange included.
func TestFargateRunnerRestartAdopts(t *testing.T) {
	t.Parallel()
	h, _ := newFargateHarness(t, nil, nil)
	first := h.start()
	ctx := context.Background()
	req := request(`sleep 4; echo adopted fine`)
	req.Network = schemas.NetworkBridge
	h.enqueue(req)
	testutil.Eventually(t, fargateTimeout, "the worker to start", func() bool {
		evs, _ := h.bus.Events(ctx, req.Spec.DispatchID)
		return len(evs) > 0
	})
	h.stop(first)
	h.useNewEngine()
	h.start()
	ev := h.terminal(req.Spec.DispatchID, fargateTimeout)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("adopted dispatch ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
	if out := h.output(req.Spec.DispatchID); !strings.Contains(out, "adopted fine") {
		t.Errorf("output = %q", out)
	}
	if n := len(h.fake.Calls("RunTask")); n != 1 {
		t.Errorf("RunTask calls = %d, want 1 (adopted, not run again)", n)
	}
	if left := exchanges(t, h.store); len(left) != 0 {
		t.Errorf("exchange objects left: %v", left)
	}
}

// TestFargateRefusesLocalSecrets: a local: secret lives on a runner's
// host, which a Fargate task cannot reach: the dispatch fails naming it,
// and no task is run.
func TestFargateRefusesLocalSecrets(t *testing.T) {
	t.Parallel()
	h, _ := newFargateHarness(t, nil, nil)
	h.start()
	req := request(`echo never`)
	req.Network = schemas.NetworkBridge
	req.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"TOKEN":"local:github-token"}}`)}
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonFetchFailed || !strings.Contains(ev.Failure.Detail, "local secret github-token") {
		t.Errorf("terminal = %s %+v; want fetch-failed naming local secret github-token", ev.Kind, ev.Failure)
	}
	if n := len(h.fake.Calls("RunTask")); n != 0 {
		t.Errorf("RunTask calls = %d, want none", n)
	}
}

// TestFargateNoEgress: a network "none" dispatch gets the isolated
// security groups; where those allow no egress at all (the fake's), its
// worker cannot reach storage for its files, and the dispatch ends
// worker-lost saying so (docs/ecs.md: the groups must allow S3).
func TestFargateNoEgress(t *testing.T) {
	t.Parallel()
	h, _ := newFargateHarness(t, nil, nil)
	h.start()
	req := request(`echo never`)
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, fargateTimeout)
	t.Logf("terminal: %s %+v", ev.Kind, ev.Failure)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonWorkerLost || !strings.Contains(ev.Failure.Detail, "private.json") {
		t.Errorf("terminal = %s %+v; want worker-lost naming the exchange's private.json the worker could not read", ev.Kind, ev.Failure)
	}
	h.settled(req.Spec.DispatchID)
}
