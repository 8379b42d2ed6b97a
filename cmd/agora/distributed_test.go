package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/wire"
)

// TestDistributedRoles runs the demo's loop through separate processes, as
// a distributed deployment does: one NATS, S3-protocol storage on loopback,
// two `agora runner` processes with their own data directories and one
// `agora orchestrator`. A round's workspace reaches the next round only
// through S3, whichever runner takes it.
func TestDistributedRoles(t *testing.T) {
	t.Parallel()
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	ctx := context.Background()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	tag := fmt.Sprintf("agora-worker:distributed-test-%d", testutil.RunNumber())
	if _, err := images.Build(ctx, eng, images.Options{WorkerBinary: worker, Tag: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), tag) })

	srv := natstest.Start(t)
	backend := s3mem.New()
	if err := backend.CreateBucket("agora"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	storageURI := "s3://agora/shared?endpoint=" + s3.URL + "&path_style=true&region=us-east-1"
	env := append(os.Environ(), "AWS_ACCESS_KEY_ID=fake", "AWS_SECRET_ACCESS_KEY=fake", "AWS_REGION=us-east-1")

	agora := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	start := func(args ...string) {
		cmd := exec.Command(agora, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, logs, logs
		startStopped(t, cmd)
	}
	runnerIDs := []string{fmt.Sprintf("dist-a-%d", testutil.RunNumber()), fmt.Sprintf("dist-b-%d", testutil.RunNumber())}
	// Registered before the runners start, so it runs after they have
	// stopped: a stopped runner leaves running containers to the next one
	// with its id, and there is none here. After a passing test nothing is
	// left; after a failure whatever is left is removed.
	t.Cleanup(func() {
		for _, id := range runnerIDs {
			left, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
			if err != nil {
				t.Errorf("list containers of runner %s: %v", id, err)
			}
			for _, c := range left {
				if !t.Failed() {
					t.Errorf("container %s of runner %s left behind", c.ID[:12], id)
				}
				_ = eng.Remove(context.Background(), c.ID)
			}
		}
	})
	for _, id := range runnerIDs {
		start("runner", "--nats", srv.ClientURL(), "--storage", storageURI, "--data-dir", t.TempDir(),
			"--id", id, "--slots", "1", "--image", tag, "--grace", "3s")
	}
	addr := freeAddr(t)
	start("orchestrator", "--nats", srv.ClientURL(), "--storage", storageURI, "--listen", addr)
	c := client.New("http://"+addr, "")
	testutil.Eventually(t, time.Minute, "the orchestrator's API", func() bool {
		_, err := c.List(ctx, wire.ListOptions{})
		return err == nil
	})

	// Round 1 leaves a file in its workspace and notes in partial_state and
	// asks; round 2 (a fresh workspace directory, maybe on the other host)
	// must find both, or it fails and so does the task.
	script := `if [ -z "$AGORA_ANSWER" ]; then
  echo "notes from round 1" > notes.txt
  echo '{"plan":"from-round-1"}' | agora-worker ask "keep going?" --option yes --option no --state -
  exit 0
fi
test "$(cat notes.txt)" = "notes from round 1" || { echo "notes.txt lost" >&2; exit 5; }
grep -q 'from-round-1' "$AGORA_RESUME_FILE" || { echo "partial_state lost" >&2; exit 6; }
echo "round 2 found the notes and the plan after $AGORA_ANSWER"`
	// The script travels as a registered capability: its bundle is stored in
	// S3 by the orchestrator and fetched and verified there by each worker.
	regDir := t.TempDir()
	for name, content := range map[string]string{
		"steps/steps.sh":   script,
		"steps.yaml":       "name: dist-steps\npath: steps\n",
		"distributed.yaml": "name: distributed\nruntime: exec\ncommand: sh steps.sh\ncapabilities: [dist-steps]\n",
	} {
		p := filepath.Join(regDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"capability", "register", filepath.Join(regDir, "steps.yaml")}, {"subagent", "register", filepath.Join(regDir, "distributed.yaml")}} {
		if out, err := exec.Command(agora, append(args, "--server", "http://"+addr)...).CombinedOutput(); err != nil {
			t.Fatalf("agora %v: %v\n%s", args, err, out)
		}
	}
	ids := []string{"dist-1", "dist-2", "dist-3"}
	for _, id := range ids {
		if _, err := c.Submit(ctx, wire.SubmitRequest{TaskID: id, SubagentRef: "distributed"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		waitTask(t, addr, id, wire.StateNeedsInput)
		answer := exec.Command(agora, "answer", id, "yes", "--server", "http://"+addr)
		if out, err := answer.CombinedOutput(); err != nil {
			t.Fatalf("agora answer %s: %v\n%s", id, err, out)
		}
	}
	b, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ran := map[string]int{}
	for _, id := range ids {
		task := waitTask(t, addr, id, wire.StateFinished)
		for _, r := range task.Rounds {
			claim, err := b.GetClaim(ctx, r.DispatchID)
			if err != nil || claim == nil {
				t.Fatalf("claim of %s: %+v, %v", r.DispatchID, claim, err)
			}
			ran[claim.Runner]++
		}
		if len(task.Rounds) != 2 || task.Rounds[0].Answer == nil || task.Rounds[0].Answer.Value != "yes" {
			t.Fatalf("task %s rounds = %+v, want a question answered yes and a second round", id, task.Rounds)
		}
		// The workspace crossed from round 1 to round 2 through S3: the
		// snapshot record is in the bucket, under the storage prefix.
		key := "shared/dispatches/" + task.Rounds[0].DispatchID + "/workspace.json"
		if _, err := backend.HeadObject("agora", key); err != nil {
			t.Errorf("snapshot record %s not in the S3 bucket: %v", key, err)
		}
	}
	if len(ran) != 2 {
		t.Errorf("dispatches per runner = %v, want both runners to have taken part", ran)
	}

	t.Run("ci-pipeline-step", func(t *testing.T) {
		pipelineStep(t, agora, addr, env)
	})
}

// pipelineStep runs examples/ci/pipeline-step.sh against the distributed
// stack twice at once: nobody answers one (its route runs out and the
// question's default is taken), a person answers the other with `agora
// answer` while the step waits. Both steps exit 0 and never hang.
func pipelineStep(t *testing.T, agora, addr string, env []string) {
	script, err := filepath.Abs("../../examples/ci/pipeline-step.sh")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		code int
		out  string
	}
	run := func(job, route string) <-chan result {
		cmd := exec.Command("/bin/sh", script)
		cmd.Env = append(env, "PATH="+filepath.Dir(agora)+":"+os.Getenv("PATH"), "AGORA_SERVER=http://"+addr,
			"AGORA_ROUTE="+route, "CI_PIPELINE_ID=dist", "CI_JOB_ID="+job, "NO_COLOR=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done, exited := make(chan result, 1), make(chan struct{})
		go func() {
			_ = cmd.Wait()
			done <- result{cmd.ProcessState.ExitCode(), out.String()}
			close(exited)
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		return done
	}
	nobody := run("nobody", "human=2s")
	person := run("person", "human=10m")

	waitTask(t, addr, "ci-dist-person", wire.StateNeedsInput)
	if out, err := exec.Command(agora, "answer", "ci-dist-person", "publish", "--by", "alice", "--server", "http://"+addr).CombinedOutput(); err != nil {
		t.Fatalf("agora answer: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		job     string
		done    <-chan result
		answer  string
		assumed bool
	}{
		{"nobody", nobody, "draft", true},
		{"person", person, "publish", false},
	} {
		var res result
		select {
		case res = <-tt.done:
		case <-time.After(3 * time.Minute):
			t.Fatalf("pipeline-step.sh (%s) still waiting after 3m", tt.job)
		}
		if res.code != 0 {
			t.Errorf("pipeline-step.sh (%s) exited %d, want 0:\n%s", tt.job, res.code, res.out)
			continue
		}
		if !strings.Contains(res.out, "[default draft]") || !strings.Contains(res.out, "answer with:") {
			t.Errorf("pipeline-step.sh (%s) did not show the question, its default and the answer command:\n%s", tt.job, res.out)
		}
		task := waitTask(t, addr, "ci-dist-"+tt.job, wire.StateFinished)
		a := task.Rounds[0].Answer
		if a == nil || a.Value != tt.answer || a.Assumed != tt.assumed {
			t.Errorf("ci-dist-%s answer = %+v, want %q (assumed %v)", tt.job, a, tt.answer, tt.assumed)
		}
	}
}

// startStopped starts cmd and, when the test ends, interrupts it and waits
// (a minute at most, then kills it), as a person stopping agora would. The
// API it serves, if any, is checked against openapi.json (openapitest.Env).
func startStopped(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, openapitest.Env(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}
