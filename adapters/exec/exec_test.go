package exec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/adapters"
	execadapter "github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/schemas"
)

// childName is the name the test binary is installed under on the runtime
// PATH; started under it, the binary is the fake sub-agent command.
const childName = "agora-test-child"

const waitLimit = 20 * time.Second

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == childName {
		os.Exit(child(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// childReport is what the fake command prints in mode "report".
type childReport struct {
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// child is the fake sub-agent command. Sleeping is its job; the tests
// themselves never sleep.
func child(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fake command: no mode")
		return 2
	}
	switch args[0] {
	case "report":
		dir, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake command:", err)
			return 2
		}
		if err := json.NewEncoder(os.Stdout).Encode(childReport{Args: args, Dir: dir, Env: os.Environ()}); err != nil {
			fmt.Fprintln(os.Stderr, "fake command:", err)
			return 2
		}
		fmt.Fprintln(os.Stderr, "reported")
		return 0
	case "exit":
		code, err := strconv.Atoi(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake command:", err)
			return 2
		}
		return code
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	default:
		fmt.Fprintln(os.Stderr, "fake command: unknown mode", args[0])
		return 2
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		command  func(h *harness) []string
		resume   *schemas.Resume
		wantCode int
		wantOK   bool
	}{
		{name: "found on the runtime PATH", command: func(*harness) []string { return []string{childName, "report", "x y"} }, wantOK: true},
		{name: "relative to the workspace", command: func(h *harness) []string { return []string{"./" + h.installInWorkspace(t), "report"} }, wantOK: true},
		{name: "absolute path", command: func(h *harness) []string { return []string{filepath.Join(h.bin, childName), "report"} }, wantOK: true},
		{name: "resumed round", command: func(*harness) []string { return []string{childName, "report"} }, resume: &schemas.Resume{Question: "Q?", Answer: "yes"}, wantOK: true},
		{name: "exit code", command: func(*harness) []string { return []string{childName, "exit", "3"} }, wantCode: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.spec.Subagent.Command = tt.command(h)
			if tt.resume != nil {
				h.spec.Round, h.spec.Resume = 2, tt.resume
			}
			res, err := execadapter.New().Run(t.Context(), h.inv)
			if err != nil {
				t.Fatalf("Run(%q) error = %v", h.spec.Subagent.Command, err)
			}
			if res.Exit.ExitCode != tt.wantCode || res.Exit.Successful() != tt.wantOK {
				t.Errorf("Run(%q).Exit = %+v, want exit code %d (stderr %q)", h.spec.Subagent.Command, res.Exit, tt.wantCode, h.stderr.String())
			}
			if res.Usage != nil {
				t.Errorf("Run().Usage = %+v, want nil: a plain command reports none", res.Usage)
			}
			if tt.wantCode != 0 {
				return
			}
			var got childReport
			if err := json.Unmarshal(h.stdout.Bytes(), &got); err != nil {
				t.Fatalf("decode the command's report %q: %v", h.stdout.String(), err)
			}
			if want := h.spec.Subagent.Command[1:]; !slices.Equal(got.Args, want) {
				t.Errorf("command args = %q, want %q", got.Args, want)
			}
			if got.Dir != h.inv.Workspace {
				t.Errorf("command ran in %q, want the workspace %q", got.Dir, h.inv.Workspace)
			}
			// Exactly the runtime env plus the dispatch variables: nothing
			// leaks from the worker's own environment.
			wantEnv := adapters.MergeEnv(h.inv.Env, adapters.DispatchEnv(h.spec, h.inv.Workspace)...)
			slices.Sort(got.Env)
			slices.Sort(wantEnv)
			if !slices.Equal(got.Env, wantEnv) {
				t.Errorf("command env =\n%q\nwant\n%q", got.Env, wantEnv)
			}
			if h.stderr.String() != "reported\n" {
				t.Errorf("command stderr = %q, want %q", h.stderr.String(), "reported\n")
			}
		})
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command []string
		edit    func(h *harness)
		want    string
	}{
		// sh is on the worker's PATH but not on the runtime's.
		{name: "not on the runtime PATH", command: []string{"sh", "-c", "true"}, want: `exec runtime: command "sh" not found`},
		{name: "missing in the workspace", command: []string{"./missing.sh"}, want: `exec runtime: command "./missing.sh" not found`},
		{name: "empty command", command: nil, want: "exec runtime: subagent.command is empty"},
		{name: "no spec", command: []string{childName}, edit: func(h *harness) { h.inv.Spec = nil }, want: "exec runtime: no dispatch spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.spec.Subagent.Command = tt.command
			if tt.edit != nil {
				tt.edit(h)
			}
			_, err := execadapter.New().Run(t.Context(), h.inv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run(%q) error = %v, want one containing %q", tt.command, err, tt.want)
			}
		})
	}
}

// A command that ignores SIGTERM is killed after inv.Grace.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.spec.Subagent.Command = []string{childName, "ignore-term"}
	h.inv.Grace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		res adapters.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := execadapter.New().Run(ctx, h.inv)
		done <- result{res, err}
	}()
	h.stdout.waitFor(t, "ready\n")
	cancel()
	var got result
	select {
	case got = <-done:
	case <-time.After(waitLimit):
		t.Fatalf("Run() did not return within %v of the cancel", waitLimit)
	}
	if got.err != nil {
		t.Fatalf("Run() error = %v", got.err)
	}
	if got.res.Exit.Signal != "SIGKILL" || got.res.Exit.ExitCode != 137 || !errors.Is(got.res.Exit.Err, context.Canceled) {
		t.Errorf("Run().Exit = %+v, want killed by SIGKILL after the grace, with context.Canceled", got.res.Exit)
	}
}

func TestAdapterIdentity(t *testing.T) {
	t.Parallel()
	a := execadapter.New()
	if a.Runtime() != schemas.RuntimeExec || a.SkillPath() != ".agora/skills/agora-needs-input/SKILL.md" {
		t.Errorf("exec adapter = runtime %q, skill path %q", a.Runtime(), a.SkillPath())
	}
}

// --- helpers ---

type harness struct {
	bin            string
	spec           *schemas.DispatchSpec
	inv            adapters.Invocation
	stdout, stderr *output
}

// newHarness puts the test binary on a fresh runtime PATH as childName and
// prepares a workspace and an invocation.
func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{bin: t.TempDir(), stdout: newOutput(), stderr: newOutput()}
	install(t, filepath.Join(h.bin, childName))
	ws := t.TempDir()
	h.spec = &schemas.DispatchSpec{
		DispatchID: "d-exec-1",
		TaskID:     "t-exec",
		Subagent:   schemas.Subagent{Name: "runner", Runtime: schemas.RuntimeExec},
	}
	h.inv = adapters.Invocation{
		Spec:      h.spec,
		Workspace: ws,
		Env:       []string{"PATH=" + h.bin, "GREETING=hello", "GORACE=atexit_sleep_ms=0"},
		Stdout:    h.stdout,
		Stderr:    h.stderr,
		Grace:     5 * time.Second,
		Logger:    slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return h
}

// installInWorkspace links the fake command into the workspace, under the
// name that makes it act as one, and returns that name.
func (h *harness) installInWorkspace(t *testing.T) string {
	sub := filepath.Join(h.inv.Workspace, "tools")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, filepath.Join(sub, childName))
	return filepath.Join("tools", childName)
}

func install(t *testing.T, path string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
}

// output collects what a process writes and lets a test wait for a string.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.changed)
	o.changed = make(chan struct{})
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func (o *output) Bytes() []byte { return []byte(o.String()) }

func (o *output) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		o.mu.Lock()
		found, changed := strings.Contains(o.buf.String(), s), o.changed
		o.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("output %q: no %q within %v", o.String(), s, waitLimit)
		}
	}
}

// tWriter routes log lines to t.Log so they show up with the failing test.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
