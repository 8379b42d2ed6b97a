package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRegistryFiles: validate accepts what register accepts — the
// example YAML files — and words a bad one as register does.
func TestValidateRegistryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	examples := filepath.Join("..", "..", "examples", "registry")
	tests := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{args: []string{"subagent", filepath.Join(examples, "reviewer.yaml")}, out: "reviewer.yaml: valid subagent"},
		{args: []string{"capability", filepath.Join(examples, "skill.yaml")}, out: "skill.yaml: valid capability"},
		{args: []string{"env", filepath.Join(examples, "env.yaml")}, out: "env.yaml: valid env"},
		{args: []string{"subagent", write("s.json", `{"name":"s","runtime":"exec","command":"echo hi"}`)}, out: "valid subagent"},
		{args: []string{"subagent", write("typo.yaml", "name: x\nruntime: exec\ncomand: [echo]\n")}, code: 1,
			errOut: "typo.yaml: line 3: field comand: unknown field (known: "},
		{args: []string{"capability", write("nodir.yaml", "name: c\npath: missing\n")}, code: 1, errOut: "nodir.yaml: field path:"},
		{args: []string{"env", filepath.Join(dir, "missing.yaml")}, code: 2, errOut: "no such file"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		args := append([]string{"validate"}, tt.args...)
		code := run(context.Background(), args, nil, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.errOut) {
			t.Errorf("agora %v = %d, stdout %q, stderr %q; want %d, %q, %q", args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.errOut)
		}
	}
	var stdout, stderr bytes.Buffer
	yaml, err := os.ReadFile(filepath.Join(examples, "reviewer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if code := runValidate([]string{"subagent", "-"}, bytes.NewReader(yaml), &stdout, &stderr); code != 0 {
		t.Errorf("agora validate subagent - < reviewer.yaml = %d, stderr %q; want 0", code, stderr.String())
	}
}
