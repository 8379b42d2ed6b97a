package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agoradev/agora/wire"
)

// TestRegistryVerbs registers a capability, an env bundle and a sub-agent
// that uses both, registers them again unchanged, changes one, and
// dispatches the sub-agent by name: the task pins the versions.
func TestRegistryVerbs(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := filepath.Join("..", "..", "examples", "registry")
	file := func(name string) string { return filepath.Join(dir, name) }

	agora(t, s.env, "subagent", "register", file("reviewer.yaml")).want(t, "sub-agent before its capability", 2, nil,
		[]string{"agora subagent register: invalid registration: sub-agent reviewer: capability review-skill: not registered (see 'agora capability list')"})
	agora(t, s.env, "capability", "list").want(t, "empty list", 0, []string{"no capability registered; 'agora capability register FILE' adds one"}, nil)

	capOut := agora(t, s.env, "capability", "register", file("skill.yaml"))
	capOut.want(t, "capability register", 0, []string{"registered capability review-skill@", "(version 1)"}, nil)
	agora(t, s.env, "capability", "register", file("skill.yaml")).want(t, "capability again", 0,
		[]string{"is registered already (version 1); nothing changed"}, nil)
	agora(t, s.env, "env", "register", file("env.yaml")).want(t, "env register", 0, []string{"registered env bundle review-env@", "(version 1)"}, nil)
	agora(t, s.env, "subagent", "register", file("reviewer.yaml")).want(t, "subagent register", 0, []string{"registered sub-agent reviewer@"}, nil)

	// A changed env makes version 2; the sub-agent follows it at the next submit.
	changed := filepath.Join(t.TempDir(), "env.yaml")
	if err := os.WriteFile(changed, []byte("name: review-env\nvalues:\n  LOG_LEVEL: info\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	envOut := agora(t, s.env, "env", "register", changed, "--json")
	envOut.want(t, "env v2", 0, []string{`"created": true`, `"seq": 2`}, nil)
	var env2 wire.Registered
	if err := json.Unmarshal([]byte(envOut.stdout), &env2); err != nil {
		t.Fatal(err)
	}

	agora(t, s.env, "env", "list").want(t, "env list", 0, []string{"NAME", "review-env", env2.Entry.Version, "2 (latest)"}, nil)
	agora(t, s.env, "env", "show", "review-env", "--versions").want(t, "env versions", 0, []string{"review-env", "1 ", "2 "}, nil)
	agora(t, s.env, "env", "show", "review-env").want(t, "env show", 0, []string{"value  LOG_LEVEL=info"}, nil)
	agora(t, s.env, "subagent", "show", "reviewer").want(t, "subagent show", 0,
		[]string{"runtime: exec", "capabilities: review-skill", "env: review-env", "retry: 2 attempts on worker-lost, timeout; waits 10s, then ×2, at most 5m0s\n",
			"dispatch: agora dispatch --subagent reviewer@"}, nil)
	agora(t, s.env, "capability", "list").want(t, "capability list", 0, []string{"review-skill", "1 (latest)", "The review checklist."}, nil)

	out := agora(t, s.env, "dispatch", "--subagent", "reviewer", "--task-id", "rev-1", "--json")
	out.want(t, "dispatch by name", 0, nil, nil)
	var task wire.Task
	if err := json.Unmarshal([]byte(out.stdout), &task); err != nil {
		t.Fatalf("dispatch --json: %v: %s", err, out.stdout)
	}
	capRef := regexp.MustCompile(`review-skill@[0-9a-f]{12}`).FindString(capOut.stdout)
	if task.Pins == nil || task.Pins.Env[0] != env2.Entry.Ref() || task.Pins.Capabilities[0] != capRef || !strings.HasPrefix(task.Pins.Subagent, "reviewer@") {
		t.Errorf("pins = %+v; want reviewer@…, %s, %s", task.Pins, capRef, env2.Entry.Ref())
	}
	if task.Request.Route != "memory,human=1h" || task.Request.TimeoutSeconds != 300 || task.Request.Limits.MaxRounds != 3 || len(task.Request.Capabilities) != 1 ||
		task.Request.Retry == nil || task.Request.Retry.Attempts != 2 {
		t.Errorf("the definition's defaults did not reach the task: %+v", task.Request)
	}
	agora(t, s.env, "status", "rev-1").want(t, "status shows the pins", 0, []string{"pinned: " + task.Pins.Subagent + " with capabilities " + capRef + " and env " + env2.Entry.Ref()}, nil)
	// Resubmitting the same request is the same task, pinned as before.
	agora(t, s.env, "dispatch", "--subagent", "reviewer", "--task-id", "rev-1").want(t, "dispatch again", 0, []string{"rev-1"}, nil)
	// A pinned version is dispatched as it is.
	agora(t, s.env, "dispatch", "--subagent", task.Pins.Subagent, "--task-id", "rev-2").want(t, "dispatch a pinned version", 0, []string{"rev-2"}, nil)
}

// TestRegistryBadInputs: each mistake is one line naming the file, the
// field and the problem, and nothing is registered.
func TestRegistryBadInputs(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	typo := file("typo.yaml", "name: r\nruntime: exec\ncommand: echo\ntimeout: 60\n")
	noPath := file("nopath.yaml", "name: c\npath: missing-dir\n")
	secretValue := file("secret.yaml", "name: e\nsecrets:\n  TOKEN: ghp_plainvalue\n")
	if err := os.Mkdir(filepath.Join(dir, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "linked", "passwd")); err != nil {
		t.Fatal(err)
	}
	symlink := file("symlink.yaml", "name: c\npath: linked\n")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"wrong field", []string{"subagent", "register", typo}, 2, typo + ": line 4: field timeout: unknown field (known:"},
		{"no file", []string{"subagent", "register"}, 2, "agora subagent register: want one FILE (YAML or JSON; 'agora schema subagent' prints its schema)"},
		{"missing file", []string{"env", "register", filepath.Join(dir, "nope.yaml")}, 2, "nope.yaml: no such file or directory"},
		{"missing capability dir", []string{"capability", "register", noPath}, 2, noPath + ": field path: capability directory: stat " + filepath.Join(dir, "missing-dir") + ": no such file or directory"},
		{"symlink in capability", []string{"capability", "register", symlink}, 2, "passwd is a symlink; a capability holds regular files and directories only"},
		{"secret value instead of a ref", []string{"env", "register", secretValue}, 2, secretValue + ": line 3: field secrets.TOKEN: does not match pattern"},
		{"unknown subcommand", []string{"env", "delete", "x"}, 2, `agora env: unknown subcommand "delete"; want register, list or show`},
		{"show nothing", []string{"subagent", "show", "ghost"}, 1, "agora subagent show: subagent ghost: not registered (see 'agora subagent list')"},
		{"show bad ref", []string{"subagent", "show", "ghost@v1"}, 2, `"ghost@v1": want NAME or NAME@VERSION (12 hex digits)`},
		{"show unknown version", []string{"env", "show", "ghost@0123456789ab"}, 1, "env ghost@0123456789ab: not registered"},
		{"dispatch unknown", []string{"dispatch", "--subagent", "ghost"}, 2, "agora dispatch: subagent ghost: not registered (see 'agora subagent list')"},
	} {
		agora(t, s.env, tc.args...).want(t, tc.name, tc.code, nil, []string{tc.stderr})
	}
	for _, kind := range []string{"subagent", "capability", "env"} {
		agora(t, s.env, kind, "list").want(t, kind+" list after the errors", 0, []string{"no "}, nil)
	}
	if page, err := s.orch.List(t.Context(), wire.ListOptions{}); err != nil || len(page.Tasks) != 0 {
		t.Errorf("tasks after the errors = %d, %v; want none", len(page.Tasks), err)
	}
	// A server that is not running: one line that says what to do.
	down := []string{"AGORA_SERVER=http://127.0.0.1:1"}
	agora(t, down, "subagent", "list").want(t, "server down", 1, nil, []string{"cannot reach the agora server at http://127.0.0.1:1 (is `agora serve` running?)"})
}
