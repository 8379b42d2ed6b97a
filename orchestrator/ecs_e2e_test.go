package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestAskAnswerResumeOnECS is the demo's loop — ask, answer, resume,
// finish — with the runner placing every round as an ECS task through the
// real SDK against the loopback fake (ecsfake), which runs the worker image
// on the local Docker engine: on the EC2 launch type (the runner's files
// as host volumes), and on Fargate (no host files: S3 storage the task
// reaches with the task role, the workspace carried by the worker).
func TestAskAnswerResumeOnECS(t *testing.T) {
	t.Parallel()
	for _, launch := range []string{"EC2", "FARGATE"} {
		t.Run(launch, func(t *testing.T) {
			t.Parallel()
			askAnswerResumeOnECS(t, launch == "FARGATE")
		})
	}
}

func askAnswerResumeOnECS(t *testing.T, fargate bool) {
	var fake *ecsfake.Server
	s := newStackOn(t, func(eng *docker.Engine, rc *runner.Config) {
		o := ecstest.Options{EC2: !fargate, Cluster: "agora-" + rc.ID,
			Engine: func(c *ecs.Config) { c.StopTimeout = 3 * time.Second },
			Fake: func(c *ecsfake.Config) {
				c.TaskRoleCredentials = aws.Credentials{AccessKeyID: "ASIAAGORAE2ETASK", SecretAccessKey: "task-secret", SessionToken: "task-token"}
			}}
		fake = ecstest.StartFake(t, eng, o)
		e := ecstest.Engine(t, fake, o)
		runnerID := rc.ID
		t.Cleanup(func() { // before the fake closes, after the runner stops
			left, err := e.List(context.Background(), map[string]string{runner.LabelRunner: runnerID})
			if err != nil || len(left) != 0 {
				t.Errorf("tasks left: %+v, %v", left, err)
			}
		})
		rc.Engine = e
		if fargate {
			s3 := storagetest.StartS3(t)
			rc.StorageURI, rc.Store, rc.NoHostMounts = s3.URI("e2e"), s3.Open(t, "e2e", "k"), true
		}
	}, nil)
	ctx := context.Background()
	task := s.submit(wire.SubmitRequest{Subagent: askerWith(1), Input: json.RawMessage(`{"goal":"paint"}`), Network: schemas.NetworkBridge})
	task = s.waitState(task.ID, wire.StateNeedsInput)
	if q := currentRound(task).Question; q.Question != "Pick a colour for step 1" || string(q.PartialState) != `{"seen":1}` {
		t.Fatalf("question = %+v", q)
	}
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "blue", By: "alice", Channel: "cli"}); err != nil {
		t.Fatalf("Answer(blue): %v", err)
	}
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished {
		t.Fatalf("task ended %s: %+v", task.State, task.Outcome)
	}
	if out := s.output(task.Rounds[1].DispatchID); !strings.Contains(out, "answers: blue") {
		t.Errorf("round 2 output = %q, want it to have read the answer", out)
	}
	if n := len(fake.Calls("RunTask")); n != 2 {
		t.Errorf("RunTask calls = %d, want one per round", n)
	}
}
