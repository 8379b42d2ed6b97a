package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// TestHelpFromFlags: every verb's -h (and agora help VERB) exits 0 and
// lists every flag the verb parses, because the help is made from the very
// flag set cobra parses with; agora runner -h lists the flags its
// hand-written synopsis had dropped.
func TestHelpFromFlags(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	tr := &tree{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard}
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			check(sub)
		}
		if c == tr.root || c.Name() == "help" || c.Name() == "completion" || c.Parent().Name() == "completion" ||
			tr.declared[c].help != "" || tr.declared[c].argHelp {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		for _, a := range [][]string{append(slices.Clone(path), "-h"), append([]string{"help"}, path...)} {
			r := agora(t, env, a...)
			if r.code != 0 || !strings.Contains(r.stdout, "usage: "+c.CommandPath()) {
				t.Errorf("agora %q = %v; want exit 0 and the usage", a, r)
				continue
			}
			c.LocalFlags().VisitAll(func(f *flag.Flag) {
				if !strings.Contains(r.stdout, "--"+f.Name+" ") && !strings.Contains(r.stdout, "--"+f.Name+"\n") {
					t.Errorf("agora %q does not list --%s:\n%s", a, f.Name, r.stdout)
				}
			})
		}
	}
	check(tr.build(verbs(nil)))
	r := agora(t, env, "runner", "--help")
	for _, f := range []string{"--cpus CPUS", "--memory-mb MB", "--pids N", "--worker-env KEY=VALUE", "--worker-nats URL"} {
		if !strings.Contains(r.stdout, f) {
			t.Errorf("agora runner --help does not list %s:\n%s", f, r.stdout)
		}
	}
}

// TestSingleDashLongFlags: the one-dash spellings Go's flag package took
// (-json, -slots=2, -nats URL) still parse, after arguments too.
func TestSingleDashLongFlags(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	agora(t, env, "runner", "-nats", "nats://127.0.0.1:4222", "-slots=0").want(t, "runner -slots=0", 2, nil, []string{"agora runner: --slots must be at least 1"})
	agora(t, env, "runner", "-nats", "nats://127.0.0.1:4222", "-grace", "1ms").want(t, "runner -grace 1ms", 2, nil, []string{"--grace must be at least 1s"})
	agora(t, env, "status", "-state", "bogus").want(t, "status -state bogus", 2, nil, []string{`--state "bogus"`})
	agora(t, env, "status", "-help").want(t, "status -help", 0, []string{"usage: agora status"}, nil)
}

// TestGlobalFlagsAnywhere: --server and --token before the command, -o
// and --context anywhere; a bad one is one line and exit 2.
func TestGlobalFlagsAnywhere(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	for _, args := range [][]string{
		{"--server", "http://127.0.0.1:1", "status"},
		{"--server=http://127.0.0.1:1", "-o", "json", "status"},
		{"status", "--server", "http://127.0.0.1:1", "-o", "name"},
		{"-o", "table", "status", "--server", "http://127.0.0.1:1"},
	} {
		agora(t, env, args...).want(t, strings.Join(args, " "), 1, nil, []string{"cannot reach the agora server at http://127.0.0.1:1"})
	}
	agora(t, env, "-o", "yaml", "status").want(t, "-o yaml", 2, nil, []string{`agora: -o "yaml": want json, name or table`})
	agora(t, env, "--bogus", "status").want(t, "--bogus status", 2, nil, []string{"unknown flag --bogus before the command"})
	agora(t, env, "status", "-o").want(t, "status -o", 2, nil, []string{"flag needs an argument: -o"})
	agora(t, env, "schema", "-o", "json").want(t, "schema -o json", 2, nil, []string{"-o json: agora schema prints no JSON"})
	agora(t, env, "completion", "tcsh").want(t, "completion tcsh", 2, nil, []string{"agora completion: want one shell: bash, zsh, fish or powershell"})
	agora(t, env, "completion").want(t, "completion", 2, nil, []string{"agora completion: want one shell"})
	agora(t, env, "-o", "name", "version").want(t, "-o name version", 0, []string{"dev\n"}, nil)
	agora(t, env, "frobnicate").want(t, "unknown command", 2, nil, []string{`unknown command "frobnicate"`})
	agora(t, env, "help").want(t, "help", 0, []string{"usage: agora <command>", "exit codes", "completion bash|zsh|fish"}, nil)
}

// TestOutputName: -o name prints the ids one per line; -o json is --json.
func TestOutputName(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, id := range []string{"name-1", "name-2"} {
		agora(t, s.env, "dispatch", "--command", "true", "--task-id", id, "-o", "name").want(t, "dispatch -o name", 0, []string{id + "\n"}, nil)
	}
	r := agora(t, s.env, "-o", "name", "status")
	if lines := strings.Fields(r.stdout); r.code != 0 || !slices.Contains(lines, "name-1") || !slices.Contains(lines, "name-2") || len(lines) != 2 {
		t.Errorf("agora -o name status = %v; want name-1 and name-2, one per line", r)
	}
	json := agora(t, s.env, "status", "name-1", "-o", "json")
	plain := agora(t, s.env, "status", "name-1", "--json")
	if json.code != 0 || json.stdout != plain.stdout {
		t.Errorf("status -o json = %v; want what --json prints, %v", json, plain)
	}
}

// TestConfigContexts: contexts set, listed and used; the server comes from
// the flag, else the environment, else the context; a token in a file
// others may read is refused.
func TestConfigContexts(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agora", "config.yaml")
	env := []string{"HOME=" + dir, "AGORA_CONFIG=" + cfg}
	agora(t, env, "config", "set-context", "away", "--server", "http://127.0.0.1:1").want(t, "set-context away", 0, nil, nil)
	agora(t, env, "config", "set-context", "here", "--server", s.url, "--token", "tok").want(t, "set-context here", 0, nil, nil)
	agora(t, env, "config", "current-context").want(t, "current-context", 0, []string{"away\n"}, nil)
	agora(t, env, "status").want(t, "status in context away", 1, nil, []string{"cannot reach the agora server at http://127.0.0.1:1"})
	agora(t, env, "--context", "here", "status").want(t, "status --context here", 0, nil, nil)
	agora(t, env, "config", "use-context", "here").want(t, "use-context here", 0, nil, nil)
	agora(t, env, "config", "get-contexts").want(t, "get-contexts", 0, []string{"*        here", "away", "(set)"}, nil)
	agora(t, env, "status").want(t, "status in context here", 0, nil, nil)
	agora(t, env, "config", "get-contexts", "-o", "name").want(t, "get-contexts -o name", 0, []string{"away\nhere\n"}, nil)
	// The environment wins over the current context, the flag over both.
	agora(t, append(env, "AGORA_SERVER=http://127.0.0.1:2"), "status").want(t, "AGORA_SERVER over the context", 1, nil, []string{"127.0.0.1:2"})
	agora(t, append(env, "AGORA_SERVER=http://127.0.0.1:2"), "status", "--server", "http://127.0.0.1:3").want(t, "--server over both", 1, nil, []string{"127.0.0.1:3"})
	agora(t, env, "--context", "nope", "status").want(t, "unknown context", 2, nil, []string{`no context "nope"`})
	agora(t, env, "config", "use-context", "nope").want(t, "use-context nope", 2, nil, []string{`no context "nope"`})
	info, err := os.Stat(cfg)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("config file = %v, %v; want mode 0600", info, err)
	}
	if err := os.Chmod(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	agora(t, env, "status").want(t, "status with a readable token", 2, nil, []string{"run chmod 600 " + cfg})
	agora(t, env, "config", "delete-context", "here").want(t, "delete-context", 0, nil, nil)
	agora(t, env, "--config", filepath.Join(dir, "other.yaml"), "config", "get-contexts").want(t, "--config other", 0, []string{"CURRENT"}, nil)
}

// TestCompletion: the scripts load in bash, and the completions of a verb
// are its own flags.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := agora(t, nil, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, "agora") {
			t.Errorf("agora completion %s = exit %d, stderr %q", shell, r.code, r.stderr)
		}
		if shell != "bash" {
			continue
		}
		if _, err := exec.LookPath("bash"); err != nil {
			t.Fatalf("bash: %v", err)
		}
		script := filepath.Join(t.TempDir(), "agora.bash")
		if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-c", "source "+script+" && complete -p agora").CombinedOutput(); err != nil {
			t.Errorf("bash cannot load agora completion bash: %v\n%s", err, out)
		}
	}
	r := agora(t, nil, "__complete", "runner", "--worker-")
	for _, want := range []string{"--worker-env", "--worker-nats"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("completions of agora runner --worker- = %q; want %s", r.stdout, want)
		}
	}
	r = agora(t, nil, "__complete", "status", "-o", "")
	if !strings.Contains(r.stdout, "json\nname\ntable\n") {
		t.Errorf("completions of agora status -o = %q; want json, name, table", r.stdout)
	}
	r = agora(t, nil, "__complete", "batch", "s")
	if !strings.Contains(r.stdout, "submit") || !strings.Contains(r.stdout, "status") {
		t.Errorf("completions of agora batch s = %q; want submit and status", r.stdout)
	}
}

// TestExitCodeTable: agora help and the README document the same four
// codes the verbs use.
func TestExitCodeTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	run(context.Background(), []string{"help"}, nil, &help, io.Discard)
	for code, words := range map[int]string{exitOK: "done", exitFailed: "the work failed", exitUsage: "a usage error or bad input", exitEnded: "the task expired"} {
		if !strings.Contains(help.String(), fmt.Sprintf("%d  %s", code, words)) {
			t.Errorf("agora help does not explain exit %d (%q)", code, words)
		}
		if !strings.Contains(string(readme), fmt.Sprintf("| %d | %s", code, words)) {
			t.Errorf("README's exit-code table does not explain exit %d (%q)", code, words)
		}
	}
}

// TestRunnerMetricsFlags: agora runner serves /metrics as serve does, so
// off loopback it needs a token, found before anything is contacted.
func TestRunnerMetricsFlags(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	agora(t, env, "runner", "--nats", "nats://127.0.0.1:4222", "--listen", "0.0.0.0:7071").want(t, "runner --listen off loopback", 2, nil,
		[]string{"agora runner: refusing to listen on 0.0.0.0:7071 without --token"})
	f, err := parseRunnerFlags([]string{"--nats", "x", "--listen", "0.0.0.0:7071", "--token", "prom:s3cret"}, env, io.Discard)
	if err != nil || f.Listen != "0.0.0.0:7071" || len(f.Tokens) != 1 {
		t.Errorf("parseRunnerFlags(--listen, --token) = %+v, %v", f, err)
	}
}
