package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
)

// secretCLI runs `agora secret ARGS` with stdin and returns the exit code,
// stdout and stderr.
func secretCLI(t *testing.T, environ []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runWith(context.Background(), append([]string{"secret"}, args...), environ, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestSecretVerbs(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home}
	valueFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(valueFile, []byte("-----BEGIN KEY-----\nfile-secret-value\n-----END KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args              []string
		stdin             string
		code              int
		stdout, stderr    string // parts each must hold
		notStdout, notErr string
	}{
		{args: []string{"list"}, stdout: "no secrets in " + filepath.Join(home, ".agora", "secrets")},
		{args: []string{"list", "--json"}, stdout: "[]"},
		{args: []string{"set", "github"}, stdin: "ghp_stdin_value", stdout: "secret github set (15 bytes) in " + filepath.Join(home, ".agora", "secrets") + "; env bundles refer to it as local:github", notErr: "newline"},
		{args: []string{"set", "github"}, stdin: "ghp_rotated_value\n", stdout: "secret github replaced (18 bytes)", stderr: "note: the value ends with a newline, which is kept"},
		{args: []string{"set", "--from-file", valueFile, "ssh-key"}, stdout: "secret ssh-key set (56 bytes)"},
		{args: []string{"set", "empty"}, stdin: "", code: 1, stderr: "agora secret set: refusing an empty value for empty (stdin was empty)"},
		{args: []string{"set", "github", "ghp_on_the_command_line"}, code: 2, stderr: "never from an argument, so it stays out of your shell history"},
		{args: []string{"set"}, code: 2, stderr: "want the secret's NAME"},
		{args: []string{"set", "../escape"}, stdin: "x", code: 2, stderr: `invalid secret name "../escape"`},
		{args: []string{"set", "big"}, stdin: strings.Repeat("x", 64<<10+1), code: 1, stderr: "larger than 65536 bytes"},
		{args: []string{"set", "x", "--from-file", filepath.Join(home, "nope")}, code: 1, stderr: "read the value of x: open"},
		{args: []string{"list"}, stdout: "NAME     BYTES  MODIFIED", notStdout: "ghp_"},
		{args: []string{"rm", "github"}, stdout: "secret github removed"},
		{args: []string{"rm", "github"}, code: 1, stderr: "no secret github in " + filepath.Join(home, ".agora", "secrets") + "; 'agora secret list' lists them"},
		{args: []string{"rm"}, code: 2, stderr: "want the NAME"},
		{args: []string{"frob"}, code: 2, stderr: `unknown subcommand "frob"`},
		{args: nil, code: 2, stderr: "want set NAME, list or rm NAME"},
		{args: []string{"-h"}, stdout: "agora secret set NAME [--from-file FILE]"},
	}
	for _, s := range steps {
		code, stdout, stderr := secretCLI(t, env, s.stdin, s.args...)
		if code != s.code || !strings.Contains(stdout, s.stdout) || !strings.Contains(stderr, s.stderr) ||
			(s.notStdout != "" && strings.Contains(stdout, s.notStdout)) || (s.notErr != "" && strings.Contains(stderr, s.notErr)) {
			t.Errorf("agora secret %q = %d\nstdout %q\nstderr %q\nwant %d, stdout with %q, stderr with %q", s.args, code, stdout, stderr, s.code, s.stdout, s.stderr)
		}
		for _, v := range []string{"ghp_stdin", "ghp_rotated", "file-secret-value"} {
			if strings.Contains(stdout+stderr, v) {
				t.Errorf("agora secret %q printed a secret value: %q %q", s.args, stdout, stderr)
			}
		}
		if n := strings.Count(stderr, "\n"); n > 1 {
			t.Errorf("agora secret %q wrote %d lines on stderr, want at most one: %q", s.args, n, stderr)
		}
	}

	// The exact bytes are stored where the runner reads them.
	got, err := os.ReadFile(filepath.Join(home, ".agora", "secrets", "ssh-key"))
	if err != nil || string(got) != "-----BEGIN KEY-----\nfile-secret-value\n-----END KEY-----\n" {
		t.Errorf("stored ssh-key = %q, %v", got, err)
	}
	code, stdout, _ := secretCLI(t, env, "", "list", "--json")
	var infos []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	}
	if err := json.Unmarshal([]byte(stdout), &infos); code != 0 || err != nil || len(infos) != 1 || infos[0].Name != "ssh-key" || infos[0].Size != 56 {
		t.Errorf("list --json = %d %q (%v), want ssh-key of 56 bytes", code, stdout, err)
	}
}

func TestSecretDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// --data-dir wins over HOME, and works without one.
	if code, stdout, stderr := secretCLI(t, nil, "v4lue", "set", "db", "--data-dir", dir); code != 0 {
		t.Fatalf("set with --data-dir = %d %q %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "secrets", "db")); err != nil {
		t.Errorf("secret not under --data-dir: %v", err)
	}
	if code, _, stderr := secretCLI(t, nil, "v4lue", "set", "db"); code != 2 || !strings.Contains(stderr, "HOME is not set") {
		t.Errorf("set without HOME or --data-dir = %d %q, want 2 and a hint", code, stderr)
	}
	// Registered as a verb of agora.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"secret", "list", "--data-dir", dir}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "db") {
		t.Errorf("agora secret list = %d %q %q", code, stdout.String(), stderr.String())
	}
}

// TestSecretsDirFlags: agora runner and agora serve find the store where
// agora secret writes it, or at --secrets-dir; the runner's AWS variables
// go into its config for the dispatches with aws-sm: refs.
func TestSecretsDirFlags(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	environ := []string{"HOME=" + home, "AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=AKID", "AGORA_X=1", "PATH=/bin"}
	f, err := parseRunnerFlags([]string{"--nats", "nats://127.0.0.1:4222"}, environ, &bytes.Buffer{})
	if err != nil || f.SecretsDir != filepath.Join(home, ".agora", "secrets") {
		t.Errorf("agora runner secrets dir = %q, %v; want %s", f.SecretsDir, err, filepath.Join(home, ".agora", "secrets"))
	}
	f, err = parseRunnerFlags([]string{"--nats", "x", "--secrets-dir", "rel/secrets", "--data-dir", "/srv/agora"}, nil, &bytes.Buffer{})
	if wd, _ := os.Getwd(); err != nil || f.SecretsDir != filepath.Join(wd, "rel", "secrets") {
		t.Errorf("agora runner --secrets-dir rel/secrets = %q, %v; want it absolute", f.SecretsDir, err)
	}
	if f, err = parseRunnerFlags([]string{"--nats", "x", "--data-dir", "/srv/agora"}, nil, &bytes.Buffer{}); err != nil || f.SecretsDir != "" {
		t.Errorf("agora runner without HOME or --secrets-dir: secrets dir %q, %v; want none", f.SecretsDir, err)
	}
	if got := awsVariables(environ); strings.Join(got, ",") != "AWS_REGION=eu-west-1,AWS_ACCESS_KEY_ID=AKID" {
		t.Errorf("awsVariables = %q", got)
	}

	s, err := parseServeFlags(nil, environ, &bytes.Buffer{})
	if err != nil || s.WithDefaults().SecretsDir != filepath.Join(home, ".agora", "secrets") || len(s.AWSEnv) != 2 {
		t.Errorf("agora serve secrets dir = %q (AWS %q), %v; want %s", s.WithDefaults().SecretsDir, s.AWSEnv, err, filepath.Join(home, ".agora", "secrets"))
	}
	s, err = parseServeFlags([]string{"--data-dir", "/srv/agora"}, environ, &bytes.Buffer{})
	if err != nil || s.WithDefaults().SecretsDir != "/srv/agora/secrets" {
		t.Errorf("agora serve --data-dir /srv/agora: secrets dir %q, %v; want /srv/agora/secrets", s.WithDefaults().SecretsDir, err)
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--no-runner", "--secrets-dir", "/x"}, environ, &bytes.Buffer{}, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "--secrets-dir configure the runner, which --no-runner leaves out") {
		t.Errorf("agora serve --no-runner --secrets-dir = %d %q, want 2", code, stderr.String())
	}
}

// TestSecretThroughServe is the whole path a user takes: `agora secret set`,
// an env bundle and a sub-agent registered with a local: ref, a dispatch on
// `agora serve` (real Docker). The sub-agent gets the value; `agora logs`
// shows [REDACTED:GITHUB_TOKEN] instead.
func TestSecretThroughServe(t *testing.T) {
	t.Parallel()
	computetest.Docker(t)
	computetest.Busybox(t)
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	dataDir := t.TempDir()
	if code, out, errOut := secretCLI(t, nil, "ghp_serve_secret_value\n", "set", "github-token", "--data-dir", dataDir); code != 0 {
		t.Fatalf("agora secret set = %d %q %q", code, out, errOut)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := freeAddr(t)
	done := make(chan int, 1)
	// With the openapicheck tag (make test) the API checks its traffic.
	report := openapitest.Env(t)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", dataDir, "--listen", addr, "--slots", "1", "--worker", worker}, append(os.Environ(), report), io.Discard, logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("agora serve did not stop")
		}
	})
	testutil.Eventually(t, time.Minute, "agora serve to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	// The example in examples/registry, as its README runs it; the route is
	// cut short so the question's default is taken.
	examples := filepath.Join("..", "..", "examples", "registry")
	server := "http://" + addr
	for _, args := range [][]string{
		{"capability", "register", filepath.Join(examples, "skill.yaml"), "--server", server},
		{"env", "register", filepath.Join(examples, "env.yaml"), "--server", server},
		{"subagent", "register", filepath.Join(examples, "reviewer.yaml"), "--server", server},
		{"dispatch", "--subagent", "reviewer", "--task-id", "secret-1", "--route", "human=1s", "--wait", "--server", server},
	} {
		var out, errOut bytes.Buffer
		if code := run(ctx, args, nil, &out, &errOut); code != 0 {
			t.Fatalf("agora %q = %d\n%s%s", args, code, out.String(), errOut.String())
		}
	}
	for round, want := range map[string]string{
		"1": "checklist: # Review checklist; log level debug; token [REDACTED:GITHUB_TOKEN]",
		"2": "reviewing main.go first, with token [REDACTED:GITHUB_TOKEN]",
	} {
		var out bytes.Buffer
		if code := run(ctx, []string{"logs", "secret-1", "--round", round, "--server", server}, nil, &out, io.Discard); code != 0 {
			t.Fatalf("agora logs --round %s = %d", round, code)
		}
		if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "ghp_serve") {
			t.Errorf("agora logs secret-1 --round %s =\n%s\nwant %q, the token redacted", round, out.String(), want)
		}
	}
	// The runner removes them before it publishes the outcome.
	if entries, _ := os.ReadDir(filepath.Join(dataDir, "runner", "dispatch-secrets")); len(entries) != 0 {
		t.Errorf("dispatch secrets left on the host after the task finished: %v", entries)
	}
}
