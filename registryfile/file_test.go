package registryfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/wire"
)

func TestParseSubagentFile(t *testing.T) {
	data, err := ReadFile(filepath.Join("testdata", "reviewer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSubagent("reviewer.yaml", data)
	if err != nil {
		t.Fatalf("ParseSubagent: %v", err)
	}
	if s.Name != "reviewer" || s.Runtime != "exec" || s.TimeoutSeconds != 600 || s.Limits.MaxRounds != 4 {
		t.Errorf("parsed %+v", s)
	}
	if want := []string{"/bin/sh", "-c", "echo reviewing\n"}; strings.Join(s.Command, "|") != strings.Join(want, "|") {
		t.Errorf("command = %q, want %q", s.Command, want)
	}
	if len(s.Capabilities) != 1 || s.Capabilities[0] != "review-skill" || s.Env[0] != "review-env" {
		t.Errorf("capabilities %v, env %v", s.Capabilities, s.Env)
	}
	if r := s.Retry; r == nil || r.Attempts != 3 || r.Backoff == nil || r.Backoff.InitialSeconds != 5 || r.Backoff.Multiplier != 3 ||
		len(r.On) != 2 || r.On[0] != "worker-lost" || r.On[1] != "timeout" {
		t.Errorf("retry = %+v", r)
	}
	if _, err := ParseSubagent("r.yaml", []byte("name: r\nruntime: exec\ncommand: x\nretry: {attempts: 2, on: [fetch-failed]}\n")); err == nil ||
		!strings.Contains(err.Error(), `line 4: field retry.on.0: value must be one of "worker-lost", "provider-failed", "timeout"`) {
		t.Errorf("a retry on fetch-failed: %v; want an error naming retry.on.0 and the reasons", err)
	}
}

// TestParseFileIntegers: integers as JSON Schema defines them (60.0, 1e2)
// fill integer fields; a fraction is refused naming the field.
func TestParseFileIntegers(t *testing.T) {
	s, err := ParseSubagent("a.json", []byte(`{"name":"a","runtime":"exec","command":"x","timeout_seconds":60.0,"limits":{"max_rounds":1e2}}`))
	if err != nil {
		t.Fatalf("ParseSubagent(timeout_seconds 60.0, max_rounds 1e2): %v", err)
	}
	if s.TimeoutSeconds != 60 || s.Limits.MaxRounds != 100 {
		t.Errorf("timeout_seconds %d, max_rounds %d; want 60 and 100", s.TimeoutSeconds, s.Limits.MaxRounds)
	}
	_, err = ParseSubagent("a.json", []byte(`{"name":"a","runtime":"exec","command":"x","timeout_seconds":60.5}`))
	if err == nil || !strings.Contains(err.Error(), "a.json: line 1: field timeout_seconds:") || strings.Contains(err.Error(), "unmarshal") {
		t.Errorf("ParseSubagent(timeout_seconds 60.5) = %v; want an error naming timeout_seconds", err)
	}
}

// Every error names the file, the line and the field, and says what is
// wrong in words a person acts on.
func TestParseFileErrors(t *testing.T) {
	typo, err := os.ReadFile(filepath.Join("testdata", "typo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, data string
		parse            func(string, []byte) error
		want             []string
	}{
		{"unknown fields with their lines and the known ones", "typo.yaml", string(typo), subagent,
			[]string{"typo.yaml: ", "line 4: field timeout: unknown field (known: allow_memory, capabilities,", "timeout_seconds", "line 6: field limits.max_round: unknown field (known: max_rounds, max_wait_seconds)"}},
		{"missing runtime", "a.yaml", "name: a\ncommand: echo\n", subagent,
			[]string{"a.yaml: line 1: field runtime: missing"}},
		{"exec without command", "a.yaml", "name: a\nruntime: exec\n", subagent,
			[]string{"field command: missing"}},
		{"wrong type", "a.json", `{"name": "a", "runtime": "exec", "command": "x", "timeout_seconds": "ten"}`, subagent,
			[]string{"a.json: line 1: field timeout_seconds: expected integer, but got string"}},
		{"bad runtime", "a.yaml", "name: a\nruntime: python\ncommand: x\n", subagent,
			[]string{"line 2: field runtime: value must be one of"}},
		{"bad capability ref", "a.yaml", "name: a\nruntime: exec\ncommand: x\ncapabilities:\n  - ok\n  - bad@v1\n", subagent,
			[]string{"line 6: field capabilities.1: does not match pattern"}},
		{"bad name", "a.yaml", "name: has space\nruntime: exec\ncommand: x\n", subagent,
			[]string{"line 1: field name: does not match pattern"}},
		{"an outputs glob leaving the workspace", "a.yaml", "name: a\nruntime: exec\ncommand: x\noutputs:\n  - dist/*.tgz\n  - ../secrets/*\n", subagent,
			[]string{`line 6: field outputs.1: "../secrets/*" is not a glob of files inside the workspace`}},
		{"an outputs glob path.Match cannot use", "a.yaml", "name: a\nruntime: exec\ncommand: x\noutputs: [\"[a-\"]\n", subagent,
			[]string{`a.yaml: field outputs: glob "[a-": syntax error in pattern`}},
		{"not YAML", "a.yaml", "name: [unclosed\n", subagent,
			[]string{"a.yaml: line ", "not valid YAML or JSON"}},
		{"empty", "a.yaml", "", subagent, []string{"a.yaml: the file is empty"}},
		{"duplicate key", "a.yaml", "name: a\nname: b\nruntime: exec\ncommand: x\n", subagent,
			[]string{"line 2: field name: given twice"}},
		{"not a mapping", "a.yaml", "- a\n", subagent, []string{"expected object, but got array"}},
		{"capability without path", "c.yaml", "name: c\n", capability, []string{"c.yaml: line 1: field path: missing"}},
		{"env secret ref without scheme", "e.yaml", "name: e\nsecrets:\n  TOKEN: just-a-value\n", env,
			[]string{"e.yaml: line 3: field secrets.TOKEN: does not match pattern"}},
		{"env value not a string", "e.yaml", "name: e\nvalues:\n  N: 3\n", env,
			[]string{"line 3: field values.N: expected string, but got number"}},
		{"env bad variable name", "e.yaml", "name: e\nvalues:\n  1BAD: x\n", env,
			[]string{"field values"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse(tc.file, []byte(tc.data))
			if err == nil {
				t.Fatal("parsed; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func subagent(f string, d []byte) error   { _, err := ParseSubagent(f, d); return err }
func capability(f string, d []byte) error { _, err := ParseCapability(f, d); return err }
func env(f string, d []byte) error        { _, err := ParseEnv(f, d); return err }

func TestReadFileTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, make([]byte, MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("ReadFile(big) = %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("ReadFile(missing) = %v", err)
	}
}

// TestParse: each kind fills its one field; a capability's path is read
// from the file's directory and packed; an unknown kind and a missing
// directory are errors naming the file.
func TestParse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skill"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("# review\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	capFile := filepath.Join(dir, "cap.yaml")
	f, err := Parse(wire.KindCapability, capFile, []byte("name: review-skill\ndescription: d\npath: skill\n"))
	if err != nil || f.Capability == nil || f.Capability.Name != "review-skill" || len(f.Archive) == 0 || f.Subagent != nil || f.Env != nil {
		t.Errorf("Parse(capability) = %+v, %v; want the capability and its packed directory", f, err)
	}
	if _, err := Parse(wire.KindCapability, capFile, []byte("name: c\ndescription: d\npath: nope\n")); err == nil ||
		!strings.HasPrefix(err.Error(), capFile+": field path: ") {
		t.Errorf("Parse(capability, missing dir) = %v; want an error naming the file and field path", err)
	}
	if f, err := Parse(wire.KindEnv, "e.yaml", []byte("name: e\nvalues: {A: b}\n")); err != nil || f.Env == nil || f.Env.Values["A"] != "b" {
		t.Errorf("Parse(env) = %+v, %v", f, err)
	}
	if f, err := Parse(wire.KindSubagent, "s.yaml", []byte("name: s\nruntime: exec\ncommand: x\n")); err != nil || f.Subagent == nil || f.Subagent.Name != "s" {
		t.Errorf("Parse(subagent) = %+v, %v", f, err)
	}
	if _, err := Parse("widget", "w.yaml", nil); err == nil || err.Error() != `w.yaml: no registry kind "widget"` {
		t.Errorf("Parse(widget) = %v", err)
	}
}
