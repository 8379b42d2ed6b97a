package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSchemaAndValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(`{"question":"A or B?","options":["A","B"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"options":"A"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "dup.json")
	if err := os.WriteFile(dup, []byte(`{"question":1,"question":"second?"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{args: []string{"schema"}, out: "dispatch-spec\nevent\nneeds-input\n"},
		{args: []string{"schema", "needs-input"}, out: `"title": "agora needs_input sentinel"`},
		{args: []string{"schema", "nope"}, code: 2, errOut: `unknown schema "nope"`},
		{args: []string{"validate", "needs-input", good}, out: "valid needs-input"},
		{args: []string{"validate", "needs-input", bad}, code: 1, errOut: "/options: expected array"},
		{args: []string{"validate", "needs-input"}, code: 2, errOut: "want NAME FILE"},
		{args: []string{"validate", "bogus", good}, code: 2, errOut: `agora validate: unknown schema "bogus"; want one of dispatch-request, dispatch-spec, event, needs-input, subagent, capability, env`},
		{args: []string{"validate", "bogus", filepath.Join(dir, "missing.json")}, code: 2, errOut: `unknown schema "bogus"`},
		{args: []string{"validate", "needs-input", dup}, code: 1, errOut: `key "question" appears more than once`},
		{args: []string{"validate", "needs-input", filepath.Join(dir, "missing.json")}, code: 2, errOut: "no such file"},
		{args: []string{"version"}, out: "agora "},
		{args: []string{"version", "--json"}, out: `"version": "`},
		{args: []string{"version", "--short"}, code: 2, errOut: `agora version: flag provided but not defined: -short; run 'agora version -h' for the flags`},
		{args: []string{"version", "short"}, code: 2, errOut: `agora version: unexpected argument "short"; the only flag is --json`},
		{args: []string{"frobnicate"}, code: 2, errOut: `unknown command "frobnicate"`},
		{args: nil, code: 2, errOut: "usage: agora"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, nil, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.errOut) {
			t.Errorf("agora %v = %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.errOut)
		}
	}
	var stdout bytes.Buffer
	run(context.Background(), []string{"schema", "event"}, nil, &stdout, &bytes.Buffer{})
	if !json.Valid(stdout.Bytes()) {
		t.Error("agora schema event does not print JSON")
	}
}
