package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestOrchestratorSurvivesKill9 runs `agora orchestrator` as its own
// process and kills it with SIGKILL twice: between a question and its
// answer, and right after an answer was accepted. Each time a new process
// takes over from JetStream alone: the question is still answerable, the
// next round runs exactly once, and the task finishes.
func TestOrchestratorSurvivesKill9(t *testing.T) {
	t.Parallel()
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	ctx := context.Background()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	tag := fmt.Sprintf("agora-worker:kill9-test-%d", testutil.RunNumber())
	if _, err := images.Build(ctx, eng, images.Options{WorkerBinary: worker, Tag: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), tag) })

	srv := natstest.Start(t)
	b, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	storeDir := t.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{ID: fmt.Sprintf("kill9-%d", testutil.RunNumber()), Slots: 2, Image: tag, DataDir: t.TempDir(),
		StorageURI: "file://" + storeDir, Store: store, Bus: b, Engine: eng, Grace: 3 * time.Second, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })

	agora := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true)
	addr := freeAddr(t)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	start := func() *exec.Cmd {
		cmd := exec.Command(agora, "orchestrator", "--nats", srv.ClientURL(), "--storage", "file://"+storeDir, "--listen", addr)
		cmd.Stderr, cmd.Env = logs, append(os.Environ(), openapitest.Env(t))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		testutil.Eventually(t, 30*time.Second, "the API to answer", func() bool {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == 200
		})
		return cmd
	}
	kill := func(cmd *exec.Cmd) {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}

	proc := start()
	script := `n=$(cat .agora/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .agora/n
if [ $n -le 2 ]; then agora-worker ask "step $n: A or B?" --option A --option B; exit 0; fi
echo "done after $AGORA_ANSWER"`
	sub := schemas.Subagent{Name: "stepper", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script}}
	var task wire.Task
	call(t, "POST", "http://"+addr+"/v1/tasks", wire.SubmitRequest{TaskID: "k9", Subagent: sub}, &task)
	task = waitTask(t, addr, "k9", wire.StateNeedsInput)

	kill(proc) // between the question and its answer
	proc = start()
	call(t, "POST", "http://"+addr+"/v1/tasks/k9/answer", map[string]any{"answer": "A", "by": "alice"}, &task)
	kill(proc) // right after an answer was accepted
	proc = start()
	task = waitTask(t, addr, "k9", wire.StateNeedsInput)
	if task.Rounds[len(task.Rounds)-1].N != 2 {
		t.Fatalf("round %d asks, want 2", task.Rounds[len(task.Rounds)-1].N)
	}
	call(t, "POST", "http://"+addr+"/v1/tasks/k9/answer", map[string]any{"answer": "2", "by": "bob"}, &task)
	task = waitTask(t, addr, "k9", wire.StateFinished)
	if len(task.Rounds) != 3 || task.Rounds[1].Answer.Value != "B" {
		t.Errorf("rounds = %+v", task.Rounds)
	}
	for _, rd := range task.Rounds {
		evs, err := b.Events(ctx, rd.DispatchID)
		if err != nil {
			t.Fatal(err)
		}
		started := 0
		for _, ev := range evs {
			if ev.Kind == schemas.KindStarted {
				started++
			}
		}
		if started != 1 {
			t.Errorf("round %d started %d times, want once", rd.N, started)
		}
	}
	kill(proc)
}

func freeAddr(t *testing.T) string { return testutil.FreeAddr(t) }

func call(t *testing.T, method, url string, body, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s = %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
}

func waitTask(t *testing.T, addr, id string, want wire.State) wire.Task {
	t.Helper()
	var task wire.Task
	testutil.Eventually(t, 3*time.Minute, fmt.Sprintf("task %s to be %s", id, want), func() bool {
		resp, err := http.Get("http://" + addr + "/v1/tasks/" + id)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return false
		}
		task = wire.Task{}
		if json.NewDecoder(resp.Body).Decode(&task) != nil {
			return false
		}
		if task.State.Terminal() && task.State != want {
			t.Fatalf("task %s ended %s: %+v", id, task.State, task.Outcome)
		}
		return task.State == want
	})
	return task
}
