package adapters_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/schemas"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDispatchEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec *schemas.DispatchSpec
		want []string
	}{
		{
			name: "first round, no task",
			spec: &schemas.DispatchSpec{DispatchID: "d-1", Subagent: schemas.Subagent{Name: "fixer"}},
			want: []string{
				"AGORA_DISPATCH_ID=d-1",
				"AGORA_ROUND=1",
				"AGORA_WORKSPACE=/ws",
				"AGORA_INPUT_FILE=/ws/.agora/input.json",
				"AGORA_NEEDS_INPUT_FILE=/ws/.agora/needs_input.json",
				"AGORA_SUBAGENT=fixer",
			},
		},
		{
			name: "resumed round of a task",
			spec: &schemas.DispatchSpec{
				DispatchID: "d-3", TaskID: "t-9", Round: 3, Subagent: schemas.Subagent{Name: "fixer"},
				Resume: &schemas.Resume{Question: "A or B?", Answer: "B, because\nit is newer"},
			},
			want: []string{
				"AGORA_DISPATCH_ID=d-3",
				"AGORA_TASK_ID=t-9",
				"AGORA_ROUND=3",
				"AGORA_WORKSPACE=/ws",
				"AGORA_INPUT_FILE=/ws/.agora/input.json",
				"AGORA_NEEDS_INPUT_FILE=/ws/.agora/needs_input.json",
				"AGORA_SUBAGENT=fixer",
				"AGORA_ANSWER=B, because\nit is newer",
				"AGORA_RESUME_FILE=/ws/.agora/resume.json",
			},
		},
	}
	for _, tt := range tests {
		if got := adapters.DispatchEnv(tt.spec, "/ws"); !slices.Equal(got, tt.want) {
			t.Errorf("%s: DispatchEnv() =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		base      []string
		overrides []string
		want      []string
	}{
		{"nothing", nil, nil, []string{}},
		{"no overrides", []string{"A=1", "B=2"}, nil, []string{"A=1", "B=2"}},
		{"override keeps the first position", []string{"A=1", "B=2"}, []string{"A=3"}, []string{"A=3", "B=2"}},
		{"new names are appended", []string{"A=1"}, []string{"C=3", "D="}, []string{"A=1", "C=3", "D="}},
		{"duplicates in base collapse, last wins", []string{"A=1", "B=2", "A=9"}, nil, []string{"A=9", "B=2"}},
		{"last override wins", nil, []string{"A=1", "A=2"}, []string{"A=2"}},
		{"values may hold =", []string{"A=x=y"}, []string{"B=p=q"}, []string{"A=x=y", "B=p=q"}},
		{"names are case-sensitive", []string{"path=a"}, []string{"PATH=b"}, []string{"path=a", "PATH=b"}},
	}
	for _, tt := range tests {
		if got := adapters.MergeEnv(tt.base, tt.overrides...); !slices.Equal(got, tt.want) {
			t.Errorf("%s: MergeEnv(%q, %q) = %q, want %q", tt.name, tt.base, tt.overrides, got, tt.want)
		}
	}
}

func TestGetenv(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "B=", "A=2", "NOEQUALS"}
	tests := []struct {
		name      string
		want      string
		wantFound bool
	}{
		{"A", "2", true},
		{"B", "", true},
		{"C", "", false},
		{"NOEQUALS", "", false},
	}
	for _, tt := range tests {
		got, found := adapters.LookupEnv(env, tt.name)
		if got != tt.want || found != tt.wantFound {
			t.Errorf("LookupEnv(%q) = %q, %v; want %q, %v", tt.name, got, found, tt.want, tt.wantFound)
		}
		if got := adapters.Getenv(env, tt.name); got != tt.want {
			t.Errorf("Getenv(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first, second, ws := mkdir(t, root, "first"), mkdir(t, root, "second"), mkdir(t, root, "ws")
	writeFile(t, filepath.Join(first, "tool"), 0o644) // not executable: skipped
	writeFile(t, filepath.Join(second, "tool"), 0o755)
	mkdir(t, first, "dirtool") // a directory: skipped
	writeFile(t, filepath.Join(second, "dirtool"), 0o755)
	writeFile(t, filepath.Join(ws, "run.sh"), 0o755)
	writeFile(t, filepath.Join(ws, "local"), 0o755)
	writeFile(t, filepath.Join(ws, "data.txt"), 0o644)
	if err := os.Symlink(filepath.Join(second, "tool"), filepath.Join(first, "linked")); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + first + string(filepath.ListSeparator) + second

	tests := []struct {
		name    string
		file    string
		env     []string
		want    string
		wantErr error
	}{
		{name: "first executable on PATH", file: "tool", env: []string{path}, want: filepath.Join(second, "tool")},
		{name: "directory skipped", file: "dirtool", env: []string{path}, want: filepath.Join(second, "dirtool")},
		{name: "symlink to an executable", file: "linked", env: []string{path}, want: filepath.Join(first, "linked")},
		{name: "relative path is relative to dir", file: "./run.sh", env: nil, want: filepath.Join(ws, "run.sh")},
		{name: "absolute path", file: filepath.Join(second, "tool"), env: nil, want: filepath.Join(second, "tool")},
		{name: "relative PATH entries are ignored", file: "local", env: []string{"PATH=.:" + ws[1:]}, wantErr: adapters.ErrNotFound},
		{name: "not on PATH", file: "nope", env: []string{path}, wantErr: adapters.ErrNotFound},
		{name: "no PATH", file: "tool", env: []string{"HOME=/"}, wantErr: adapters.ErrNotFound},
		{name: "empty name", file: "", env: []string{path}, wantErr: adapters.ErrNotFound},
		{name: "path not executable", file: "./data.txt", wantErr: fs.ErrPermission},
		{name: "path missing", file: "./missing", wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		got, err := adapters.LookPath(tt.file, ws, tt.env)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: LookPath(%q) = %q, %v; want error %v", tt.name, tt.file, got, err, tt.wantErr)
			} else if tt.file != "" && !strings.Contains(err.Error(), tt.file) {
				t.Errorf("%s: LookPath(%q) error %q does not name the file", tt.name, tt.file, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: LookPath(%q) = %q, %v; want %q", tt.name, tt.file, got, err, tt.want)
		}
	}
}

func TestByRuntime(t *testing.T) {
	t.Parallel()
	execA, claudeA := stub{rt: schemas.RuntimeExec}, stub{rt: schemas.RuntimeClaudeCode}
	list := []adapters.Adapter{execA, claudeA}
	for _, want := range list {
		got, err := adapters.ByRuntime(list, want.Runtime())
		if err != nil || got != want {
			t.Errorf("ByRuntime(%q) = %v, %v; want %v", want.Runtime(), got, err, want)
		}
	}
	_, err := adapters.ByRuntime(list, "codex")
	if !errors.Is(err, adapters.ErrUnknownRuntime) || err.Error() != `unknown runtime "codex" (known: claude-code, exec)` {
		t.Errorf("ByRuntime(codex) error = %v, want ErrUnknownRuntime naming codex and the known runtimes", err)
	}
	if _, err := adapters.ByRuntime(nil, "exec"); err == nil || !strings.Contains(err.Error(), "known: none") {
		t.Errorf("ByRuntime(nil, exec) error = %v, want one saying no runtime is known", err)
	}
}

type stub struct{ rt schemas.Runtime }

func (s stub) Runtime() schemas.Runtime { return s.rt }
func (s stub) SkillPath() string        { return "SKILL.md" }
func (s stub) Run(context.Context, adapters.Invocation) (adapters.Result, error) {
	return adapters.Result{}, errors.New("stub")
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}
