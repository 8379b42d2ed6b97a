//go:build linux

package proc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/internal/proc"
	"github.com/agoradev/agora/internal/testutil"
)

// waitLimit bounds every wait in these tests; generous because -race and
// parallel tests slow process start-up.
const waitLimit = 20 * time.Second

func TestRunExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		stdin      string
		env        []string
		dir        string
		wantCode   int
		wantOK     bool
		wantStdout string
		wantStderr string
	}{
		{name: "exit 0", args: []string{"exit", "0"}, wantCode: 0, wantOK: true},
		{name: "exit 3", args: []string{"exit", "3"}, wantCode: 3},
		{name: "exit 42", args: []string{"exit", "42"}, wantCode: 42},
		{name: "prints", args: []string{"print"}, wantOK: true, wantStdout: "hello stdout\n", wantStderr: "hello stderr\n"},
		{name: "reads stdin", args: []string{"stdin"}, stdin: "the prompt\n", wantOK: true, wantStdout: "the prompt\n"},
		{name: "runs in dir", args: []string{"cwd"}, dir: dir, wantOK: true, wantStdout: dir + "\n"},
		{name: "gets env", args: []string{"env", "PROC_TEST_VALUE"}, env: []string{"PROC_TEST_VALUE=v1"}, wantOK: true, wantStdout: "v1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, stdout, stderr := childConfig(t, tt.args...)
			cfg.Env = append(cfg.Env, tt.env...)
			cfg.Dir = tt.dir
			if tt.stdin != "" {
				cfg.Stdin = strings.NewReader(tt.stdin)
			}
			res, err := proc.Run(t.Context(), cfg)
			if err != nil {
				t.Fatalf("Run(%v) error = %v", tt.args, err)
			}
			if res.ExitCode != tt.wantCode || res.Signal != "" || res.Err != nil {
				t.Errorf("Run(%v) = %+v, want exit code %d, no signal, no error", tt.args, res, tt.wantCode)
			}
			if got := res.Successful(); got != tt.wantOK {
				t.Errorf("Run(%v).Successful() = %v, want %v", tt.args, got, tt.wantOK)
			}
			if got := stdout.String(); tt.wantStdout != "" && got != tt.wantStdout {
				t.Errorf("Run(%v) stdout = %q, want %q", tt.args, got, tt.wantStdout)
			}
			if got := stderr.String(); tt.wantStderr != "" && got != tt.wantStderr {
				t.Errorf("Run(%v) stderr = %q, want %q", tt.args, got, tt.wantStderr)
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	errStop := errors.New("dispatch cancelled")
	tests := []struct {
		name       string
		mode       string
		grace      time.Duration
		wantSignal string
		wantCode   int
	}{
		// Dies of the SIGTERM sent to its group, well within the grace.
		{name: "dies of SIGTERM", mode: "sleep", grace: time.Hour, wantSignal: "SIGTERM", wantCode: 143},
		// Ignores SIGTERM, so only the SIGKILL after the grace ends it.
		{name: "ignores SIGTERM", mode: "ignore-term", grace: 200 * time.Millisecond, wantSignal: "SIGKILL", wantCode: 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, stdout, _ := childConfig(t, tt.mode)
			cfg.Grace = tt.grace
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			done := runAsync(ctx, cfg)
			stdout.waitFor(t, "ready\n")
			cancel(errStop)
			res := receive(t, done)
			if res.err != nil {
				t.Fatalf("Run(%s) error = %v", tt.mode, res.err)
			}
			if res.ExitCode != tt.wantCode || res.Signal != tt.wantSignal {
				t.Errorf("Run(%s) = exit code %d, signal %q; want %d, %q", tt.mode, res.ExitCode, res.Signal, tt.wantCode, tt.wantSignal)
			}
			if !errors.Is(res.Err, context.Canceled) || !errors.Is(res.Err, errStop) {
				t.Errorf("Run(%s).Err = %v, want one that wraps context.Canceled and the cancel cause", tt.mode, res.Err)
			}
			if res.Successful() {
				t.Errorf("Run(%s).Successful() = true for a cancelled process", tt.mode)
			}
		})
	}
}

// A finished dispatch must not leave daemons behind: whatever the leader
// started in its group dies with it, however the leader ended.
func TestRunKillsTheGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		arg    string
		cancel bool
		wantOK bool
	}{
		{name: "leader exits on its own", arg: "exit", wantOK: true},
		{name: "leader cancelled", arg: "wait", cancel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, stdout, _ := childConfig(t, "grandchild", tt.arg)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := runAsync(ctx, cfg)
			if tt.cancel {
				stdout.waitFor(t, "ready\n")
				cancel()
			}
			res := receive(t, done)
			if res.err != nil {
				t.Fatalf("Run(grandchild %s) error = %v", tt.arg, res.err)
			}
			if res.Successful() != tt.wantOK {
				t.Errorf("Run(grandchild %s) = %+v, want Successful() = %v", tt.arg, res.Result, tt.wantOK)
			}
			pid := grandchildPID(t, stdout.String())
			testutil.Eventually(t, waitLimit, fmt.Sprintf("grandchild %d to be gone after Run returned", pid), func() bool { return gone(pid) })
		})
	}
}

// A process that left the group but still holds the output pipe must not
// keep Run waiting past WaitDelay.
func TestRunLeakedPipeDoesNotHang(t *testing.T) {
	t.Parallel()
	cfg, stdout, _ := childConfig(t, "escape")
	cfg.WaitDelay = 200 * time.Millisecond
	res := receive(t, runAsync(t.Context(), cfg))
	if res.err != nil {
		t.Fatalf("Run(escape) error = %v", res.err)
	}
	pid := grandchildPID(t, stdout.String())
	t.Cleanup(func() {
		// It escaped the group on purpose; this test owns it.
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill escaped grandchild %d: %v", pid, err)
		}
	})
	if !res.Successful() {
		t.Errorf("Run(escape) = %+v, want the leader's own successful exit", res.Result)
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(notExecutable, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		path string
		want error
	}{
		{name: "missing file", path: filepath.Join(dir, "missing"), want: fs.ErrNotExist},
		{name: "not on PATH", path: "agora-no-such-command", want: exec.ErrNotFound},
		{name: "not executable", path: notExecutable, want: fs.ErrPermission},
		{name: "empty path", path: ""},
		{name: "context already done", ctx: cancelled, path: exe(t), want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			res, err := proc.Run(ctx, proc.Config{Path: tt.path, Env: []string{}, Logger: testLogger(t)})
			if err == nil {
				t.Fatalf("Run(%q) error = nil, want one", tt.path)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Run(%q) error = %v, want one that wraps %v", tt.path, err, tt.want)
			}
			if res.Successful() || !errors.Is(res.Err, err) {
				t.Errorf("Run(%q) result = %+v, want unsuccessful and carrying the error", tt.path, res)
			}
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	got := proc.Config{}.WithDefaults()
	if got.Grace != proc.DefaultGrace || got.WaitDelay != proc.DefaultWaitDelay || got.Logger == nil {
		t.Errorf("Config{}.WithDefaults() = %+v, want grace %v, wait delay %v and a logger", got, proc.DefaultGrace, proc.DefaultWaitDelay)
	}
}

// --- helpers ---

func exe(t *testing.T) string {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// childConfig runs this test binary as the fake child with args.
func childConfig(t *testing.T, args ...string) (proc.Config, *output, *output) {
	t.Helper()
	stdout, stderr := newOutput(), newOutput()
	return proc.Config{
		Path:   exe(t),
		Args:   args,
		Env:    append(os.Environ(), childEnv+"=1", fastRaceExit),
		Stdout: stdout,
		Stderr: stderr,
		Grace:  5 * time.Second,
		Logger: testLogger(t),
	}, stdout, stderr
}

// fastRaceExit stops a -race child from sleeping a second before it exits 0
// (the race runtime's atexit_sleep_ms), which only slows the tests down.
const fastRaceExit = "GORACE=atexit_sleep_ms=0"

type runResult struct {
	exit.Result
	err error
}

func runAsync(ctx context.Context, cfg proc.Config) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		res, err := proc.Run(ctx, cfg)
		done <- runResult{res, err}
	}()
	return done
}

func receive(t *testing.T, done <-chan runResult) runResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return within %v", waitLimit)
		return runResult{}
	}
}

var grandchildLine = regexp.MustCompile(`grandchild (\d+)`)

func grandchildPID(t *testing.T, stdout string) int {
	t.Helper()
	m := grandchildLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("fake child stdout %q has no grandchild pid", stdout)
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid has exited. An orphan is reparented to PID 1,
// which may be slow to reap it (or never do so in a bare container), so a
// zombie counts as gone.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// The state follows the parenthesised command name, which may itself
	// contain spaces and parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
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

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter routes log lines to t.Log so they show up with the failing test.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
