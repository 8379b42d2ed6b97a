package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
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
// the runner reaches with the AWS_* variables of its environ, the task
// with the task role's credentials.
func TestRunnerOnFargate(t *testing.T) {
	t.Parallel()
	runnerOnECS(t, true)
}

func runnerOnECS(t *testing.T, fargate bool) {
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	tag := fmt.Sprintf("agora-worker:cli-ecs-test-%d-%t", testutil.RunNumber(), fargate)
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

	cluster := "agora-cli-" + computetest.RandomSuffix()
	args := []string{"runner", "--nats", srv.ClientURL(), "--data-dir", t.TempDir(), "--image", tag, "--slots", "1", "--grace", "3s",
		"--compute", "ecs", "--ecs-cluster", cluster, "--ecs-log-group", "/agora/cli-test",
		"--ecs-endpoint", fake.URL(), "--ecs-logs-endpoint", fake.URL(), "--ecs-poll", "200ms"}
	network := ""
	if fargate {
		args = append(args, "--storage", storagetest.StartS3(t).URI("cli"), "--ecs-launch-type", "FARGATE",
			"--ecs-subnet", ecstest.Subnet, "--ecs-security-group", ecstest.Group, "--ecs-isolated-security-group", ecstest.IsolatedGroup,
			"--ecs-task-role", "arn:aws:iam::000000000000:role/agora-worker", "--ecs-execution-role", "arn:aws:iam::000000000000:role/agora-task-execution")
		network = schemas.NetworkBridge
	}
	environ := append(os.Environ(), "AWS_REGION="+ecstest.Region, "AWS_ACCESS_KEY_ID="+ecstest.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+ecstest.Secret)
	p := startInProcess(t, args, environ, logs)
	b := queueBus(t, srv.ClientURL())
	ev := terminalEvent(t, b, enqueueScript(t, b, "cli-ecs", "echo hi from ecs", network), p)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal event = %s %+v; want dispatch.finished", ev.Kind, ev.Failure)
	}
	runs := fake.Calls("RunTask")
	if len(runs) != 1 || !strings.Contains(string(runs[0].Body), `"cluster":"`+cluster+`"`) {
		t.Errorf("RunTask calls = %d (%v); want one in cluster %s", len(runs), runs, cluster)
	}
	p.stop(t)
}

// TestFargateRunnerSurvivesKill9: `agora runner` on Fargate is killed
// (SIGKILL) while its dispatch's task runs; a new process with the same
// data dir adopts the task by its tags and settles it once — one RunTask,
// one terminal event, its exchange in S3 removed.
func TestFargateRunnerSurvivesKill9(t *testing.T) {
	t.Parallel()
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	ctx := context.Background()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	tag := fmt.Sprintf("agora-worker:fargate-kill9-%d", testutil.RunNumber())
	if _, err := images.Build(ctx, eng, images.Options{WorkerBinary: worker, Tag: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), tag) })
	fake := ecstest.StartFake(t, eng, ecstest.Options{Fake: func(c *ecsfake.Config) {
		c.TaskRoleCredentials = aws.Credentials{AccessKeyID: "ASIAAGORAKILL9TASK", SecretAccessKey: "task-secret", SessionToken: "task-token"}
	}})
	srv := natstest.Start(t)
	s3 := storagetest.StartS3(t)
	storageURI, store := s3.URI("kill9"), s3.Open(t, "kill9", "k")
	b := queueBus(t, srv.ClientURL())

	agora := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	dataDir := t.TempDir()
	cluster := "agora-kill9-" + computetest.RandomSuffix()
	start := func() *exec.Cmd {
		cmd := exec.Command(agora, "runner", "--nats", srv.ClientURL(), "--data-dir", dataDir, "--image", tag, "--slots", "1", "--grace", "3s",
			"--storage", storageURI, "--compute", "ecs", "--ecs-launch-type", "FARGATE", "--ecs-cluster", cluster, "--ecs-log-group", "/agora/kill9",
			"--ecs-subnet", ecstest.Subnet, "--ecs-security-group", ecstest.Group, "--ecs-isolated-security-group", ecstest.IsolatedGroup,
			"--ecs-task-role", "arn:aws:iam::000000000000:role/agora-worker", "--ecs-execution-role", "arn:aws:iam::000000000000:role/agora-task-execution",
			"--ecs-endpoint", fake.URL(), "--ecs-logs-endpoint", fake.URL(), "--ecs-poll", "200ms")
		cmd.Env = append(os.Environ(), "AWS_REGION="+ecstest.Region, "AWS_ACCESS_KEY_ID="+ecstest.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+ecstest.Secret)
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
		return cmd
	}
	first := start()
	dispatchID := enqueueScript(t, b, "fargate-kill9", "sleep 4; echo survived", schemas.NetworkBridge)
	testutil.Eventually(t, 2*time.Minute, "the dispatch to start", func() bool {
		evs, err := b.Events(ctx, dispatchID)
		return err == nil && len(evs) > 0
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	start()
	ev := terminalEvent(t, b, dispatchID, nil)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("terminal event = %s %+v; want dispatch.finished", ev.Kind, ev.Failure)
	}
	if n := len(fake.Calls("RunTask")); n != 1 {
		t.Errorf("RunTask calls = %d, want 1 (adopted, not run again)", n)
	}
	testutil.Eventually(t, time.Minute, "the exchange to be removed", func() bool {
		keys, err := store.List(ctx, "exchange/")
		return err == nil && len(keys) == 0
	})
	testutil.Eventually(t, time.Minute, "the task to be removed", func() bool {
		left, err := eng.List(ctx, map[string]string{ecsfake.LabelFake: fake.ID()})
		return err == nil && len(left) == 0
	})
}
