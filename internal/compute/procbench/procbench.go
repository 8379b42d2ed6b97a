// Package procbench is a compute.Engine for measuring agora, never for
// running work: each "container" is the real agora-worker binary started as
// a plain process of this host, so everything agora does around a dispatch
// (queue, claim, spec, events, settle, apply, answer, re-dispatch) is real
// and only the container engine's cost (create, start, remove, about 70 % of
// a dispatch on Docker) is gone. docs/capacity.md reports what it measures.
//
// It isolates nothing: the sub-agent runs as the caller's user, with the
// host's network and file system, and no resource limit holds. That is why
// no default ever picks it and `agora serve` / `agora runner` refuse it
// unless --benchmark-engine asks (cmd/agora).
//
// What a container would see is mapped onto the host: a path under a bind
// mount's Target (in the environment, the working directory and the
// arguments) becomes the same path under its Source; /tmp (and with it HOME,
// which the runner sets to /tmp) becomes a fresh directory of the process,
// removed with it. PATH is the host's behind the worker's own directory, so
// the sub-agent's /bin/sh is the host's and agora-worker is the worker. The image's entrypoint, the worker, is Config.Worker; a spec naming
// another entrypoint (the egress proxy) is refused, and so is an image other
// than Config.Image. State lives in memory: a new Engine lists nothing, so a
// restarted runner adopts nothing (a benchmark does not restart its runner).
//
// Replayer (replay.go, --compute replay) goes one step further: it runs the
// worker once per dispatch shape, records what it printed and wrote, and
// replays that for the shape's later dispatches with their own ids and
// event keys, so not even the worker's process is paid for.
package procbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
)

// Name is how the CLI's --compute flag names this engine.
const Name = "process"

// workerEntrypoint is where worker images keep the worker (images.WorkerPath,
// repeated here: compute engines import nothing of agora above compute).
const workerEntrypoint = "/usr/local/bin/agora-worker"

// outputCap bounds the output kept per process: the runner keeps at most
// its --log-cap (4 MiB by default) anyway, and a benchmark's workers print
// a few lines.
const outputCap = 8 << 20

// Config is one measuring engine.
type Config struct {
	// Worker is the agora-worker binary every dispatch runs; required.
	Worker string
	// Image is the image name the runner asks for (its --image); Create
	// refuses any other with compute.ErrImageNotFound. Empty accepts any.
	Image string
	// Dir holds each process's /tmp; default os.TempDir().
	Dir string
}

// Engine runs dispatches as processes. Safe for concurrent use.
type Engine struct {
	cfg   Config
	mu    sync.Mutex
	seq   int
	procs map[string]*proc // by id
	names map[string]string
}

var _ compute.Engine = (*Engine)(nil)

// New checks that the worker binary is there and returns the engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Worker == "" {
		return nil, errors.New("measuring engine: the agora-worker binary is required")
	}
	fi, err := os.Stat(cfg.Worker)
	if err != nil {
		return nil, fmt.Errorf("measuring engine: %w (build it: make build)", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("measuring engine: %s is not an executable file", cfg.Worker)
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	return &Engine{cfg: cfg, procs: map[string]*proc{}, names: map[string]string{}}, nil
}

// proc is one dispatch's process, from Create to Remove.
type proc struct {
	id, name string
	labels   map[string]string
	created  time.Time
	cmd      *exec.Cmd
	tmp      string
	out      *output
	// done is closed once the process has exited and its output is
	// drained; res is then how it ended.
	done    chan struct{}
	res     exit.Result
	started bool
	stop    string
}

// Create implements compute.Engine.
func (e *Engine) Create(_ context.Context, spec compute.ContainerSpec) (string, error) {
	if err := checkSpec(spec, e.cfg.Image); err != nil {
		return "", fmt.Errorf("create process %s: %w", spec.Name, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if spec.Name != "" {
		if _, ok := e.names[spec.Name]; ok {
			return "", fmt.Errorf("create process %s: %w", spec.Name, compute.ErrAlreadyExists)
		}
	}
	tmp, err := os.MkdirTemp(e.cfg.Dir, "agora-proc-")
	if err != nil {
		return "", fmt.Errorf("create process %s: %w", spec.Name, err)
	}
	e.seq++
	id := fmt.Sprintf("proc-%d-%d", os.Getpid(), e.seq)
	name := spec.Name
	if name == "" {
		name = id
	}
	mounts := append(slices.Clone(spec.Mounts), compute.Mount{Source: tmp, Target: "/tmp"})
	args := slices.Clone(spec.Entrypoint)
	if len(args) == 0 {
		args = []string{workerEntrypoint}
	}
	args = append(args, spec.Cmd...)
	for i := range args[1:] {
		args[i+1] = hostPath(mounts, args[i+1])
	}
	cmd := exec.Command(e.cfg.Worker, args[1:]...)
	// The worker's directory first, as the image has it on PATH: a
	// sub-agent calls agora-worker ask.
	env := []string{"PATH=" + filepath.Dir(e.cfg.Worker) + string(os.PathListSeparator) + os.Getenv("PATH"), "TMPDIR=" + tmp}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, k+"="+hostPath(mounts, v))
	}
	cmd.Env = env
	if spec.WorkingDir != "" {
		cmd.Dir = hostPath(mounts, spec.WorkingDir)
	}
	out := newOutput()
	cmd.Stdout, cmd.Stderr = out.writer(1), out.writer(2)
	// Its own process group, so Stop and Remove reach what it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild holding the output open does not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[compute.LabelManaged] = "true"
	stop := spec.StopSignal
	p := &proc{id: id, name: name, labels: labels, created: time.Now(), cmd: cmd, tmp: tmp, out: out, done: make(chan struct{}), stop: stop}
	e.procs[id] = p
	e.names[name] = id
	return id, nil
}

// checkSpec refuses what the measuring engine cannot stand in for.
func checkSpec(spec compute.ContainerSpec, image string) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if image != "" && spec.Image != image {
		return fmt.Errorf("%w: the measuring engine stands in for %s only, not %s", compute.ErrImageNotFound, image, spec.Image)
	}
	if len(spec.Entrypoint) > 0 && spec.Entrypoint[0] != workerEntrypoint {
		return fmt.Errorf("%w: the measuring engine runs the worker only, not %s", compute.ErrInvalidSpec, spec.Entrypoint[0])
	}
	if len(spec.ScratchDirs) > 0 || spec.Network != "" || len(spec.Secrets) > 0 {
		return fmt.Errorf("%w: the measuring engine takes host mounts only (no scratch dirs, user networks or secrets)", compute.ErrInvalidSpec)
	}
	for _, m := range spec.Mounts {
		if _, err := os.Stat(m.Source); err != nil {
			return fmt.Errorf("mount %s: %w", m.Target, err)
		}
	}
	return nil
}

// hostPath maps a path the container would see onto the host through the
// longest mount whose target holds it; anything else is returned as is.
func hostPath(mounts []compute.Mount, p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	clean := path.Clean(p)
	best := -1
	for i, m := range mounts {
		if clean == m.Target || strings.HasPrefix(clean, strings.TrimSuffix(m.Target, "/")+"/") {
			if best < 0 || len(m.Target) > len(mounts[best].Target) {
				best = i
			}
		}
	}
	if best < 0 {
		return p
	}
	m := mounts[best]
	return filepath.Join(m.Source, strings.TrimPrefix(clean, m.Target))
}

func (e *Engine) get(id string) (*proc, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.procs[id]
	if !ok {
		if pid, ok := e.names[id]; ok {
			return e.procs[pid], nil
		}
		return nil, fmt.Errorf("process %s: %w", id, compute.ErrNotFound)
	}
	return p, nil
}

// Start implements compute.Engine.
func (e *Engine) Start(_ context.Context, id string) error {
	p, err := e.get(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.started {
		return nil
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start process %s: %w", p.name, err)
	}
	p.started = true
	go func() {
		err := p.cmd.Wait()
		p.res = exitResult(p.cmd.ProcessState, err)
		p.out.close()
		close(p.done)
	}()
	return nil
}

// exitResult is how the process ended, by the shell's convention for a
// signal (128 + its number), as a container's exit code reads.
func exitResult(st *os.ProcessState, err error) exit.Result {
	if st == nil {
		return exit.Result{ExitCode: -1, Err: err}
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exit.Result{ExitCode: 128 + int(ws.Signal()), Signal: signalName(ws.Signal())}
	}
	return exit.Result{ExitCode: st.ExitCode()}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return "SIG" + strconv.Itoa(int(s))
}

// Wait implements compute.Engine.
func (e *Engine) Wait(ctx context.Context, id string) (exit.Result, error) {
	p, err := e.get(id)
	if err != nil {
		return exit.Result{}, err
	}
	e.mu.Lock()
	started := p.started
	e.mu.Unlock()
	if !started {
		return exit.Result{}, fmt.Errorf("wait for process %s: not started", p.name)
	}
	select {
	case <-p.done:
		return p.res, nil
	case <-ctx.Done():
		return exit.Result{}, fmt.Errorf("wait for process %s: %w", p.name, context.Cause(ctx))
	}
}

// Logs implements compute.Engine.
func (e *Engine) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	p, err := e.get(id)
	if err != nil {
		return err
	}
	if err := p.out.copy(ctx, follow, stdout, stderr); err != nil {
		return fmt.Errorf("output of process %s: %w", p.name, err)
	}
	return nil
}

// Stop implements compute.Engine: the stop signal to the process group,
// then SIGKILL once grace has passed.
func (e *Engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	p, err := e.get(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	started := p.started
	e.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	pid := p.cmd.Process.Pid
	if grace > 0 {
		sig := syscall.SIGTERM
		switch p.stop {
		case "SIGINT":
			sig = syscall.SIGINT
		case "SIGKILL":
			sig = syscall.SIGKILL
		}
		_ = syscall.Kill(pid, sig) // the worker forwards it to its runtime's group
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("stop process %s: %w", p.name, context.Cause(ctx))
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop process %s: %w", p.name, context.Cause(ctx))
	}
}

// Remove implements compute.Engine: it kills what still runs, waits for it
// and forgets the process with its /tmp.
func (e *Engine) Remove(ctx context.Context, id string) error {
	p, err := e.get(id)
	if errors.Is(err, compute.ErrNotFound) {
		return nil
	}
	if err := e.Stop(ctx, id, 0); err != nil {
		return err
	}
	e.mu.Lock()
	delete(e.procs, p.id)
	delete(e.names, p.name)
	e.mu.Unlock()
	if err := os.RemoveAll(p.tmp); err != nil {
		return fmt.Errorf("remove process %s: %w", p.name, err)
	}
	return nil
}

// List implements compute.Engine.
func (e *Engine) List(_ context.Context, labels map[string]string) ([]compute.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var list []compute.Container
	for _, p := range e.procs {
		match := true
		for k, v := range labels {
			if p.labels[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		c := compute.Container{ID: p.id, Name: p.name, Labels: maps.Clone(p.labels), Created: p.created, State: "created"}
		if p.started {
			c.State = "running"
			select {
			case <-p.done:
				c.State, c.ExitCode = "exited", p.res.ExitCode
			default:
			}
		}
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b compute.Container) int { return a.Created.Compare(b.Created) })
	return list, nil
}

// Image is the image name a runner on the measuring engine asks for: no
// image exists, the engine runs Config.Worker for it.
const Image = "agora-worker:measuring-engine"
