package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// TestRunnerOnECS runs `agora runner --compute ecs` as a user would, its
// ECS and CloudWatch Logs endpoints the loopback fake and its credentials
// the AWS_* variables of its environment, through one dispatch to
// dispatch.finished and a graceful stop: on the EC2 launch type, and on
// Fargate with S3 storage the task reaches with the task role.
func TestRunnerOnECS(t *testing.T) {
	t.Parallel()
	runnerOnECS(t, false)
}

// TestRunnerOnFargate is TestRunnerOnECS on Fargate: S3 storage, which
// the runner reaches with the AWS_* variables of the process (storage
// reads the SDK's default chain, not run's environ; so this test sets
// them, and may not run in parallel), the task with the task role's.
func TestRunnerOnFargate(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", ecstest.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", ecstest.Secret)
	t.Setenv("AWS_REGION", ecstest.Region)
	runnerOnECS(t, true)
}

func runnerOnECS(t *testing.T, fargate bool) {
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	tag := fmt.Sprintf("agora-worker:cli-ecs-test-%d-%t", os.Getpid(), fargate)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := eng.RemoveImage(ctx, tag); err != nil {
			t.Errorf("remove test image %s: %v", tag, err)
		}
	})
	if code := run(context.Background(), []string{"image", "build", "--worker", worker, "--tag", tag}, os.Environ(), logs, logs); code != 0 {
		t.Fatalf("agora image build = %d", code)
	}
	fake := ecstest.StartFake(t, eng, ecstest.Options{EC2: !fargate, Fake: func(c *ecsfake.Config) {
		c.TaskRoleCredentials = aws.Credentials{AccessKeyID: "ASIAAGORACLITASK", SecretAccessKey: "task-secret", SessionToken: "task-token"}
	}})
	srv := natstest.Start(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster := "agora-cli-" + computetest.RandomSuffix()
	args := []string{"runner", "--nats", srv.ClientURL(), "--data-dir", t.TempDir(), "--image", tag, "--slots", "1", "--grace", "3s",
		"--compute", "ecs", "--ecs-cluster", cluster, "--ecs-log-group", "/agora/cli-test",
		"--ecs-endpoint", fake.URL(), "--ecs-logs-endpoint", fake.URL(), "--ecs-poll", "200ms"}
	network := ""
	if fargate {
		backend := s3mem.New()
		if err := backend.CreateBucket("agora"); err != nil {
			t.Fatal(err)
		}
		s3 := httptest.NewServer(gofakes3.New(backend).Server())
		t.Cleanup(s3.Close)
		args = append(args, "--storage", "s3://agora/cli?endpoint="+s3.URL, "--ecs-launch-type", "FARGATE",
			"--ecs-subnet", ecstest.Subnet, "--ecs-security-group", ecstest.Group, "--ecs-isolated-security-group", ecstest.IsolatedGroup,
			"--ecs-task-role", "arn:aws:iam::000000000000:role/agora-worker", "--ecs-execution-role", "arn:aws:iam::000000000000:role/agora-task-execution")
		network = schemas.NetworkBridge
	}
	environ := append(os.Environ(), "AWS_REGION="+ecstest.Region, "AWS_ACCESS_KEY_ID="+ecstest.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+ecstest.Secret)
	var code int
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		code = run(ctx, args, environ, logs, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(2 * time.Minute):
			t.Error("agora runner did not return within 2m of its context being cancelled")
		}
	})

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
	dispatchID := fmt.Sprintf("cli-ecs-%d-%s", os.Getpid(), computetest.RandomSuffix())
	req := schemas.DispatchRequest{Spec: schemas.DispatchSpec{
		DispatchID: dispatchID, TaskID: "task-" + dispatchID, Round: 1,
		Subagent: schemas.Subagent{Name: "hello", Runtime: schemas.RuntimeExec, Command: []string{"sh", "-c", "echo hi from ecs"}},
		Input:    json.RawMessage(`{}`),
	}, Network: network}
	if _, err := b.Enqueue(context.Background(), req); err != nil {
		t.Fatal(err)
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
			t.Fatal(err)
		}
		return ev != nil
	})
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal event = %s %+v; want dispatch.finished", ev.Kind, ev.Failure)
	}
	runs := fake.Calls("RunTask")
	if len(runs) != 1 || !strings.Contains(string(runs[0].Body), `"cluster":"`+cluster+`"`) {
		t.Errorf("RunTask calls = %d (%v); want one in cluster %s", len(runs), runs, cluster)
	}
	cancel()
	select {
	case <-returned:
		if code != 0 {
			t.Errorf("agora runner returned %d after its context was cancelled; want 0", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("agora runner did not stop within 1m")
	}
}
