package main

import (
	"os"
	"testing"
)

// TestExitCodesBadInput: input the CLI or the server refuses before
// anything changes exits 2, like a usage error; the server being away is
// still 1.
func TestExitCodesBadInput(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"dispatch", "--command", "true", "--task-id", "a b"}, `--task-id "a b"`},
		{[]string{"dispatch", "--command", "true", "--task-id", "-x"}, `--task-id "-x"`},
		{[]string{"dispatch", "--command", "true", "--timeout", "99999999"}, "--timeout 99999999: at most 604800"},
		{[]string{"dispatch", "--command", "true", "--timeout", "10000h"}, "--timeout 10000h: at most"},
		{[]string{"status", "--state", "bogus"}, `--state "bogus": want one of running, queued, needs_input`},
		{[]string{"status", "--cursor", "garbage"}, "cursor"},
	} {
		agora(t, s.env, tc.args...).want(t, tc.args[0]+" "+tc.args[len(tc.args)-1], 2, nil, []string{tc.stderr})
	}
	agora(t, []string{"AGORA_SERVER=http://127.0.0.1:1"}, "status").want(t, "status with no server", 1, nil, []string{"cannot reach"})
}

// TestBatchBadRoute: a --route that does not parse is a usage error before
// any line is submitted.
func TestBatchBadRoute(t *testing.T) {
	t.Parallel()
	file := t.TempDir() + "/b.jsonl"
	if err := os.WriteFile(file, []byte(`{"subagent": {"name": "x", "runtime": "exec", "command": ["true"]}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agora(t, []string{"AGORA_SERVER=http://127.0.0.1:1"}, "batch", "submit", file, "--route", "human=abc").want(t, "batch submit --route human=abc", 2, nil,
		[]string{`agora batch submit: --route "human=abc": route step 1 "human=abc": timeout: "abc" is not a duration`})
}
