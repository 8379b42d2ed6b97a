package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/claudecode"
	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
	"github.com/agoradev/agora/schemas"
)

const waitLimit = 20 * time.Second

func TestRun(t *testing.T) {
	t.Parallel()
	resumed := &schemas.Resume{Question: "A or B?", Answer: "B", PartialState: json.RawMessage(`{"k":1}`)}
	tests := []struct {
		name     string
		mode     string
		model    string
		resume   *schemas.Resume
		env      []string
		wantCode int
		// wantArgs must appear, in order, as a contiguous run of claude's args.
		wantArgs  []string
		noArgs    []string
		wantUsage *schemas.Usage // session_id aside, which is checked against the record
		// wantStdout: the stream is exactly fakeclaude.Transcript's.
		wantStdout bool
		wantAsked  bool
		wantEnv    map[string]string
		// wantText is the final result text Run reports; nil: none.
		wantText *string
	}{
		{
			name: "streams usage", mode: fakeclaude.ModeOK, model: "claude-sonnet-4-5",
			wantArgs:   []string{"--print", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5", "--permission-mode", "bypassPermissions"},
			wantUsage:  ptr(fakeclaude.ReportedUsage("claude-sonnet-4-5", false)),
			wantStdout: true,
			wantText:   ptr(fakeclaude.ResultText),
		},
		{
			name: "no model given", mode: fakeclaude.ModeOK,
			noArgs:    []string{"--model"},
			wantUsage: ptr(fakeclaude.ReportedUsage("", false)),
		},
		{
			name: "permission mode and extra args from the runtime env", mode: fakeclaude.ModeOK,
			env:      []string{claudecode.EnvPermissionMode + "=acceptEdits", claudecode.EnvExtraArgs + "=  --max-turns 40 "},
			wantArgs: []string{"--permission-mode", "acceptEdits", "--max-turns", "40"},
		},
		{
			name: "writes the sentinel", mode: fakeclaude.ModeAsk,
			wantAsked: true,
			wantUsage: ptr(fakeclaude.ReportedUsage("", false)),
		},
		{
			name: "fails", mode: fakeclaude.ModeFail,
			wantCode:  fakeclaude.FailExitCode,
			wantUsage: &schemas.Usage{Model: fakeclaude.DefaultModel, Turns: 1, CostUSD: 0.001, InputTokens: 10},
			// An error result carries no text to hand back.
		},
		{
			name: "malformed lines are passed through and ignored", mode: fakeclaude.ModeGarbage,
			wantUsage: ptr(fakeclaude.ReportedUsage("", false)),
			wantText:  ptr(fakeclaude.ResultText),
		},
		{
			name: "resumed round", mode: fakeclaude.ModeOK, resume: resumed,
			wantEnv: map[string]string{adapters.EnvAnswer: "B", adapters.EnvRound: "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.mode)
			h.spec.Subagent.Model = tt.model
			if tt.resume != nil {
				h.spec.Round, h.spec.Resume = 2, tt.resume
			}
			h.inv.Env = append(h.inv.Env, tt.env...)

			res, err := claudecode.New().Run(t.Context(), h.inv)
			if err != nil {
				t.Fatalf("Run() error = %v (stderr %q)", err, h.stderr.String())
			}
			if res.Exit.ExitCode != tt.wantCode || res.Exit.Signal != "" || res.Exit.Err != nil {
				t.Errorf("Run().Exit = %+v, want exit code %d (stderr %q)", res.Exit, tt.wantCode, h.stderr.String())
			}
			rec := h.record(t)
			if tt.wantUsage != nil {
				want := *tt.wantUsage
				want.SessionID = rec.SessionID
				if res.Usage == nil || *res.Usage != want {
					t.Errorf("Run().Usage = %+v, want %+v", res.Usage, want)
				}
			}
			switch {
			case tt.wantText == nil && res.Text != nil && tt.mode == fakeclaude.ModeFail:
				t.Errorf("Run().Text = %q, want none from an error result", *res.Text)
			case tt.wantText != nil && (res.Text == nil || *res.Text != *tt.wantText):
				t.Errorf("Run().Text = %v, want %q", res.Text, *tt.wantText)
			}
			if want := fakeclaude.Transcript(fakeclaude.Stream{Model: tt.model, SessionID: rec.SessionID, Cwd: h.inv.Workspace, PermissionMode: "bypassPermissions"}); tt.wantStdout && h.stdout.String() != want {
				t.Errorf("Run() stdout = %q, want the stream unchanged: %q", h.stdout.String(), want)
			}
			if tt.wantArgs != nil && !containsRun(rec.Args, tt.wantArgs) {
				t.Errorf("claude args = %q, want them to contain %q", rec.Args, tt.wantArgs)
			}
			for _, a := range tt.noArgs {
				if slices.Contains(rec.Args, a) {
					t.Errorf("claude args = %q, want no %q", rec.Args, a)
				}
			}
			if want := claudecode.RenderPrompt(h.spec); rec.Prompt != want {
				t.Errorf("claude stdin = %q, want RenderPrompt(spec) = %q", rec.Prompt, want)
			}
			if rec.Dir != h.inv.Workspace {
				t.Errorf("claude ran in %q, want the workspace %q", rec.Dir, h.inv.Workspace)
			}
			wantEnv := map[string]string{
				adapters.EnvDispatchID:     h.spec.DispatchID,
				adapters.EnvWorkspace:      h.inv.Workspace,
				adapters.EnvNeedsInputFile: filepath.Join(h.inv.Workspace, ".agora", "needs_input.json"),
			}
			for k, v := range tt.wantEnv {
				wantEnv[k] = v
			}
			for k, v := range wantEnv {
				if rec.Env[k] != v {
					t.Errorf("claude env %s = %q, want %q", k, rec.Env[k], v)
				}
			}

			data, err := os.ReadFile(filepath.Join(h.inv.Workspace, ".agora", "needs_input.json"))
			switch {
			case tt.wantAsked && err != nil:
				t.Errorf("read sentinel: %v", err)
			case tt.wantAsked:
				got, err := schemas.ParseNeedsInput(data)
				if err != nil {
					t.Fatalf("ParseNeedsInput(sentinel) error = %v", err)
				}
				if want := fakeclaude.AskSentinel(); got.Question != want.Question {
					t.Errorf("sentinel question = %q, want %q", got.Question, want.Question)
				}
			case err == nil:
				t.Errorf("sentinel written in mode %q: %s", tt.mode, data)
			}
		})
	}
}

func TestRunGarbageStreamIsPassedThrough(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeclaude.ModeGarbage)
	if _, err := claudecode.New().Run(t.Context(), h.inv); err != nil {
		t.Fatal(err)
	}
	out := h.stdout.String()
	for _, want := range []string{"not json at all\n", `{"type":"assistant","message":` + "\n", `["an","array"]` + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("Run() stdout lacks %q:\n%s", want, out)
		}
	}
	if last := `{"type":"unknown_future_message"}`; !strings.HasSuffix(out, last) {
		t.Errorf("Run() stdout does not end with the unterminated line %q:\n%s", last, out)
	}
}

// A claude that ignores SIGTERM is killed after the grace period, and what it
// reported before that is kept.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeclaude.ModeHang)
	h.inv.Grace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		res adapters.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := claudecode.New().Run(ctx, h.inv)
		done <- result{res, err}
	}()
	h.stdout.waitFor(t, `"subtype":"init"`)
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
	if got.res.Usage == nil || got.res.Usage.Model != fakeclaude.DefaultModel {
		t.Errorf("Run().Usage = %+v, want the model from the init message", got.res.Usage)
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*harness)
		want string
	}{
		{
			name: "claude not on the runtime PATH",
			edit: func(h *harness) { h.inv.Env = adapters.MergeEnv(h.inv.Env, "PATH="+h.t.TempDir()) },
			want: "claude-code runtime: claude not found on PATH",
		},
		{
			name: "no PATH at all",
			edit: func(h *harness) { h.inv.Env = nil },
			want: "claude-code runtime: claude not found on PATH",
		},
		{
			name: "no spec",
			edit: func(h *harness) { h.inv.Spec = nil },
			want: "claude-code runtime: no dispatch spec",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fakeclaude.ModeOK)
			tt.edit(h)
			_, err := claudecode.New().Run(t.Context(), h.inv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	spec := func(model string) *schemas.DispatchSpec {
		return &schemas.DispatchSpec{Subagent: schemas.Subagent{Model: model}}
	}
	base := []string{"--print", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name string
		spec *schemas.DispatchSpec
		env  []string
		want []string
	}{
		{"defaults", spec(""), nil, slices.Concat(base, []string{"--permission-mode", "bypassPermissions"})},
		{"model", spec("opus"), nil, slices.Concat(base, []string{"--model", "opus", "--permission-mode", "bypassPermissions"})},
		{"permission mode", spec(""), []string{"AGORA_CLAUDE_PERMISSION_MODE=plan"}, slices.Concat(base, []string{"--permission-mode", "plan"})},
		{"extra args", spec(""), []string{"AGORA_CLAUDE_ARGS=--max-turns 5  --debug"}, slices.Concat(base, []string{"--permission-mode", "bypassPermissions", "--max-turns", "5", "--debug"})},
	}
	for _, tt := range tests {
		if got := claudecode.Args(tt.spec, tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Args() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestAdapterIdentity(t *testing.T) {
	t.Parallel()
	a := claudecode.New()
	if a.Runtime() != schemas.RuntimeClaudeCode || a.SkillPath() != ".claude/skills/agora-needs-input/SKILL.md" {
		t.Errorf("claudecode adapter = runtime %q, skill path %q", a.Runtime(), a.SkillPath())
	}
}

// --- helpers ---

type harness struct {
	t              *testing.T
	spec           *schemas.DispatchSpec
	inv            adapters.Invocation
	stdout, stderr *output
	recordPath     string
}

// newHarness puts the fake claude on a fresh runtime PATH and prepares a
// workspace and an invocation that runs it in mode.
func newHarness(t *testing.T, mode string) *harness {
	t.Helper()
	bin := t.TempDir()
	if _, err := fakeclaude.Install(bin); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".agora"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t: t,
		spec: &schemas.DispatchSpec{
			DispatchID: "d-test-1",
			TaskID:     "t-test",
			Subagent:   schemas.Subagent{Name: "tester", Runtime: schemas.RuntimeClaudeCode, Prompt: "Say hello."},
			Input:      json.RawMessage(`{"greeting":"hello"}`),
		},
		stdout:     newOutput(),
		stderr:     newOutput(),
		recordPath: filepath.Join(t.TempDir(), "record.json"),
	}
	h.inv = adapters.Invocation{
		Spec:      h.spec,
		Workspace: ws,
		Env: []string{
			"PATH=" + bin,
			// As in agora's containers: a HOME of its own, which holds
			// Claude Code's config dir (~/.claude) and does not outlive
			// the round.
			"HOME=" + t.TempDir(),
			fakeclaude.ModeEnv + "=" + mode,
			fakeclaude.RecordEnv + "=" + h.recordPath,
			"GORACE=atexit_sleep_ms=0",
		},
		Stdout: h.stdout,
		Stderr: h.stderr,
		Grace:  5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return h
}

func (h *harness) record(t *testing.T) fakeclaude.Record {
	t.Helper()
	rec, err := fakeclaude.ReadRecord(h.recordPath)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func containsRun(s, run []string) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

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
