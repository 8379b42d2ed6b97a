package procbench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
)

// newEngine is an engine whose "worker" is the host's /bin/sh, so a test
// says what the process does with Cmd.
func newEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Config{Worker: "/bin/sh", Image: Image, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func shSpec(name, script string, mounts ...compute.Mount) compute.ContainerSpec {
	return compute.ContainerSpec{Name: name, Image: Image, User: "65532:65532", Cmd: []string{"-c", script},
		Env: []string{"HOME=/tmp", "AGORA_SPEC_FILE=/agora/spec.json", "AGORA_WORKSPACE=/workspace"}, WorkingDir: "/workspace",
		Mounts: mounts, Labels: map[string]string{compute.LabelDispatchID: name}}
}

func run(t *testing.T, e compute.Engine, spec compute.ContainerSpec) (exit.Result, string, string) {
	t.Helper()
	ctx := context.Background()
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = e.Remove(context.Background(), id) })
	if err := e.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	var stdout, stderr bytes.Buffer
	if err := e.Logs(ctx, id, true, &stdout, &stderr); err != nil {
		t.Fatalf("Logs: %v", err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return res, stdout.String(), stderr.String()
}

func TestMountsEnvAndOutput(t *testing.T) {
	e := newEngine(t)
	specDir, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(specDir, "spec.json"), []byte(`{"dispatch_id":"d1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cat "$AGORA_SPEC_FILE"; echo; pwd; echo made > "$AGORA_WORKSPACE/out.txt"; echo "$HOME" >&2; test -d "$HOME" || exit 7; exit 3`
	res, stdout, stderr := run(t, e, shSpec("d1", script,
		compute.Mount{Source: specDir, Target: "/agora", ReadOnly: true}, compute.Mount{Source: ws, Target: "/workspace"}))
	if res.ExitCode != 3 || res.Signal != "" {
		t.Errorf("exit = %+v, want code 3", res)
	}
	if want := `{"dispatch_id":"d1"}` + "\n" + ws + "\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if home := strings.TrimSpace(stderr); !strings.HasPrefix(home, e.cfg.Dir) {
		t.Errorf("HOME = %q, want a directory of the process under %s", home, e.cfg.Dir)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("workspace file = %q, %v", b, err)
	}
}

func TestStopAndList(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	spec := shSpec("sleeper", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, compute.Mount{Source: t.TempDir(), Target: "/workspace"})
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(ctx, spec); !errors.Is(err, compute.ErrAlreadyExists) {
		t.Errorf("second Create = %v, want ErrAlreadyExists", err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	list, err := e.List(ctx, map[string]string{compute.LabelDispatchID: "sleeper"})
	if err != nil || len(list) != 1 || list[0].State != "running" || list[0].Labels[compute.LabelManaged] != "true" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// SIGTERM only once the trap is set.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var out bytes.Buffer
		if err := e.Logs(ctx, id, false, &out, nil); err == nil && strings.Contains(out.String(), "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never said ready")
		}
	}
	if err := e.Stop(ctx, id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil || res.ExitCode != 0 {
		t.Errorf("after SIGTERM: %+v, %v; want exit 0 from the trap", res, err)
	}
	var out bytes.Buffer
	if err := e.Logs(ctx, id, false, &out, nil); err != nil || out.String() != "ready\nbye\n" {
		t.Errorf("Logs = %q, %v", out.String(), err)
	}
	if err := e.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if list, _ := e.List(ctx, nil); len(list) != 0 {
		t.Errorf("List after Remove = %+v", list)
	}
	if _, err := e.Wait(ctx, id); !errors.Is(err, compute.ErrNotFound) {
		t.Errorf("Wait after Remove = %v, want ErrNotFound", err)
	}
}

func TestKillWithoutGrace(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	id, err := e.Create(ctx, shSpec("stubborn", `trap '' TERM; while :; do sleep 0.05; done`, compute.Mount{Source: t.TempDir(), Target: "/workspace"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Wait(ctx, id); err != nil || res.Signal != "SIGKILL" || res.ExitCode != 137 {
		t.Errorf("Wait = %+v, %v; want SIGKILL, 137", res, err)
	}
	_ = e.Remove(ctx, id)
}

func TestRefuses(t *testing.T) {
	e := newEngine(t)
	ctx := context.Background()
	ws := compute.Mount{Source: t.TempDir(), Target: "/workspace"}
	for _, tc := range []struct {
		name string
		edit func(*compute.ContainerSpec)
		want error
	}{
		{"another image", func(s *compute.ContainerSpec) { s.Image = "claude:latest" }, compute.ErrImageNotFound},
		{"another entrypoint", func(s *compute.ContainerSpec) { s.Entrypoint = []string{"/bin/egress"} }, compute.ErrInvalidSpec},
		{"scratch dirs", func(s *compute.ContainerSpec) { s.ScratchDirs = []string{"/workspace"} }, compute.ErrInvalidSpec},
		{"root", func(s *compute.ContainerSpec) { s.User = "0" }, compute.ErrInvalidSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := shSpec("r-"+tc.name, "true", ws)
			tc.edit(&spec)
			if _, err := e.Create(ctx, spec); !errors.Is(err, tc.want) {
				t.Errorf("Create = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := New(Config{Worker: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("New with a missing worker binary succeeded")
	}
}

func TestHostPath(t *testing.T) {
	mounts := []compute.Mount{{Source: "/h/spec", Target: "/agora"}, {Source: "/h/key", Target: "/agora/key"}, {Source: "/h/ws", Target: "/workspace"}}
	for in, want := range map[string]string{
		"/agora/spec.json":   "/h/spec/spec.json",
		"/agora/key/k":       "/h/key/k",
		"/agoraX":            "/agoraX",
		"/workspace":         "/h/ws",
		"relative/workspace": "relative/workspace",
		"file:///x":          "file:///x",
	} {
		if got := hostPath(mounts, in); got != want {
			t.Errorf("hostPath(%q) = %q, want %q", in, got, want)
		}
	}
}
