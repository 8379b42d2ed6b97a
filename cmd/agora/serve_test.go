package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestServeFlagErrors: every mistake on the command line of agora serve
// is one line on stderr and exit code 2, before anything starts; a missing
// worker binary is a failure (1) that says what to do.
func TestServeFlagErrors(t *testing.T) {
	t.Parallel()
	nats := []string{"--nats", "nats://127.0.0.1:4222"}
	tests := []struct {
		args        []string
		env         []string // default: a HOME
		code        int
		out, errOut string
	}{
		{args: []string{"--no-runner", "--runner-only"}, code: 2, errOut: "--no-runner and --runner-only exclude each other"},
		{args: []string{"--slots", "0"}, code: 2, errOut: "agora serve: --slots must be at least 1\n"},
		{args: []string{"--slots", "many"}, code: 2, errOut: `invalid value "many" for flag -slots`},
		{args: []string{"--listen", "0.0.0.0:7070"}, code: 2, errOut: "refusing to listen on 0.0.0.0:7070 without --token"},
		{args: []string{"--listen", "7070"}, code: 2, errOut: `listen address "7070"`},
		{args: []string{"--token", "ci:"}, code: 2, errOut: "token 1: want SECRET or NAME:SECRET"},
		{args: []string{"extra"}, code: 2, errOut: `agora serve: unexpected argument "extra"`},
		{args: append([]string{"--nats-port", "4222"}, nats...), code: 2, errOut: "--nats-port is the embedded server's port: not with --nats"},
		{args: []string{"--nats-port", "70000"}, code: 2, errOut: "--nats-port 70000: want a port"},
		{args: []string{"--runner-only"}, code: 2, errOut: "--runner-only needs --nats URL"},
		{args: []string{"--no-runner", "--slots", "2", "--image", "x"}, code: 2, errOut: "--image, --slots configure the runner, which --no-runner leaves out"},
		{args: append([]string{"--runner-only", "--rules", "r.yaml"}, nats...), code: 2, errOut: "--rules configure the orchestrator, which --runner-only leaves out"},
		{args: []string{"--worker-env", "TOKEN"}, code: 2, errOut: `--worker-env "TOKEN": want KEY=VALUE`},
		{args: []string{"--ci-route", "human=soon"}, code: 2, errOut: `agora serve: --ci-route "human=soon": route step 1 "human=soon": timeout: "soon" is not a duration like 30s, 2m, 24h or 7d; e.g. --ci-route human=10m`},
		{args: append([]string{"--runner-only", "--ci-route", "human=1m"}, nats...), code: 2, errOut: "--ci-route configure the orchestrator, which --runner-only leaves out"},
		{args: []string{"-h"}, out: "--ci-route ROUTE"},
		{args: []string{"--storage", "ftp://host/dir"}, code: 2, errOut: "want file:///abs/dir or s3://bucket/prefix"},
		{args: nil, env: []string{}, code: 2, errOut: "HOME is not set, so there is no default --data-dir; pass --data-dir DIR"},
		{args: []string{"--slack-signing-secret", "s"}, code: 2, errOut: "--slack-… flags need a bot token: --slack-token or $AGORA_SLACK_TOKEN"},
		{args: []string{"--slack-token", "xoxb-1"}, code: 2, errOut: "slack: a signing secret is required (--slack-signing-secret)"},
		{args: nil, env: []string{"HOME=/tmp", "AGORA_SLACK_TOKEN=xoxb-1", "AGORA_SLACK_SIGNING_SECRET=s", "AGORA_PUBLIC_URL=nope"}, code: 2, errOut: `slack: public URL "nope"`},
		{args: []string{"--slack-token", "xoxb-1", "--slack-socket-mode"}, code: 2, errOut: "Socket Mode needs an app-level token (--slack-app-token)"},
		{args: append([]string{"--runner-only", "--slack-token", "xoxb-1"}, nats...), code: 2, errOut: "--slack-token configure the orchestrator, which --runner-only leaves out"},
		{args: []string{"-h"}, out: "-runner-only"},
		{args: []string{"-h"}, out: "-slack-signing-secret"},
		// The test binary has no agora-worker next to it, as an agora built alone would not.
		{args: nil, code: 1, errOut: "run 'make build'"},
		{args: []string{"--worker", "/nonexistent/agora-worker"}, code: 1, errOut: "no worker binary at /nonexistent/agora-worker (--worker)"},
	}
	for _, tt := range tests {
		args := append([]string{"serve"}, tt.args...)
		env := tt.env
		if env == nil {
			env = []string{"HOME=" + t.TempDir()}
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, env, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.errOut) {
			t.Errorf("agora %q = %d, stdout %q, stderr %q; want %d, %q, %q", args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.errOut)
		}
		if tt.code != 0 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("agora %q wrote %q to stderr; want one line", args, stderr.String())
		}
	}
}

// TestServeAndDemo runs the README's first command (agora demo) and
// `agora serve` with a dispatch through it, on the real Docker engine.
func TestServeAndDemo(t *testing.T) {
	t.Parallel()
	computetest.Docker(t)
	computetest.Busybox(t)
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)

	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo", "--answer", "2", "--worker", worker}, os.Environ(), &out, logs); code != 0 {
		t.Fatalf("agora demo = %d\n%s", code, out.String())
	}
	for _, want := range []string{"registered sub-agent config-tidier@", "the sub-agent asks: Two config files", `answer  "config.json"`, "round 2", "finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddr(t)
	done := make(chan int, 1)
	var serveOut bytes.Buffer // read once run has returned
	// With the openapicheck tag (make test) the API checks its traffic.
	report := openapitest.Env(t)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--listen", addr, "--slots", "1", "--worker", worker}, append(os.Environ(), report), &serveOut, logs)
	}()
	testutil.Eventually(t, time.Minute, "agora serve to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	c := client.New("http://"+addr, "")
	task, err := c.Submit(ctx, wire.SubmitRequest{TaskID: "serve-1",
		Subagent: schemas.Subagent{Name: "hello", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", "echo hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	if task, err = c.Wait(ctx, task.ID); err != nil || task.State != wire.StateFinished {
		t.Fatalf("task = %+v, %v", task, err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `agora_tasks{state="finished"} 1`) {
		t.Errorf("/metrics lacks the finished task:\n%s", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("agora serve exited %d after a graceful stop", code)
		}
		for _, want := range []string{"agora serve: API on http://" + addr + " (metrics at /metrics)\n",
			"agora serve: NATS on nats://127.0.0.1:", "(embedded, JetStream in ", "agora serve: runner "} {
			if !strings.Contains(serveOut.String(), want) {
				t.Errorf("agora serve printed %q; want %q in it", serveOut.String(), want)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("agora serve did not stop")
	}
}
