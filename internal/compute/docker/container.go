package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	dockernetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
)

// Create implements compute.Engine.
func (e *Engine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", fmt.Errorf("create container %s: %w", describe(spec), err)
	}
	if len(spec.Secrets) > 0 {
		// Putting the values in Env instead would hand them to everything
		// that can inspect the container; the caller must choose how they
		// travel.
		return "", fmt.Errorf("create container %s: %w: %d secrets given, but the Docker engine has no secret store to resolve them from (the runner gives Docker containers their secrets as files)",
			describe(spec), compute.ErrInvalidSpec, len(spec.Secrets))
	}
	cfg, hostCfg, netCfg := e.containerConfig(spec)
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	resp, err := e.cli.ContainerCreate(ctx, cfg, hostCfg, netCfg, nil, spec.Name)
	switch {
	case cerrdefs.IsConflict(err):
		return "", fmt.Errorf("create container %s: %w: %w", describe(spec), compute.ErrAlreadyExists, err)
	case cerrdefs.IsNotFound(err):
		return "", fmt.Errorf("create container %s: %w: %w", describe(spec), compute.ErrImageNotFound, err)
	case err != nil:
		return "", fmt.Errorf("create container %s: %w", describe(spec), err)
	}
	for _, w := range resp.Warnings {
		e.cfg.Logger.Warn("docker create warning", "container_id", resp.ID, "container_name", spec.Name, "warning", w)
	}
	return resp.ID, nil
}

// describe names a container to be created in errors: "name (image)".
func describe(spec compute.ContainerSpec) string {
	if spec.Name == "" {
		return "(" + spec.Image + ")"
	}
	return spec.Name + " (" + spec.Image + ")"
}

// containerConfig turns a validated spec into the Docker create request,
// hardening included.
func (e *Engine) containerConfig(spec compute.ContainerSpec) (*container.Config, *container.HostConfig, *dockernetwork.NetworkingConfig) {
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[compute.LabelManaged] = "true"
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Env:        spec.Env,
		Labels:     labels,
		User:       spec.User,
		WorkingDir: spec.WorkingDir,
		StopSignal: spec.StopSignal,
	}
	if spec.StopTimeout > 0 {
		s := seconds(spec.StopTimeout)
		cfg.StopTimeout = &s
	}
	network := spec.NetworkMode
	if network == "" {
		network = compute.NetworkNone
	}
	var netCfg *dockernetwork.NetworkingConfig
	if spec.Network != "" {
		network = spec.Network
		netCfg = &dockernetwork.NetworkingConfig{EndpointsConfig: map[string]*dockernetwork.EndpointSettings{
			spec.Network: {Aliases: spec.NetworkAliases},
		}}
	}
	tmpfs := spec.TmpfsBytes
	if tmpfs == 0 {
		tmpfs = compute.DefaultTmpfsBytes
	}
	initProcess := spec.Init
	hostCfg := &container.HostConfig{
		NetworkMode:    container.NetworkMode(network),
		ExtraHosts:     spec.ExtraHosts,
		DNS:            spec.DNS,
		SecurityOpt:    []string{"no-new-privileges:true"},
		CapDrop:        []string{"ALL"},
		ReadonlyRootfs: !spec.WritableRootfs,
		Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777,size=" + strconv.FormatInt(tmpfs, 10)},
		Init:           &initProcess,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		LogConfig: container.LogConfig{
			Type:   "json-file",
			Config: map[string]string{"max-size": strconv.FormatInt(e.cfg.LogMaxBytes, 10), "max-file": "1"},
		},
		Resources: container.Resources{
			NanoCPUs: spec.Resources.NanoCPUs,
			Memory:   spec.Resources.MemoryBytes,
		},
	}
	if m := spec.Resources.MemoryBytes; m > 0 {
		hostCfg.MemorySwap = m // memory + swap = memory: no swap
	}
	if p := spec.Resources.PidsLimit; p > 0 {
		hostCfg.PidsLimit = &p
	}
	for _, m := range spec.Mounts {
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.Source,
			Target:   m.Target,
			ReadOnly: m.ReadOnly,
		})
	}
	for _, dir := range spec.ScratchDirs {
		// An anonymous volume: Docker copies the image's directory into it
		// (owner and mode included), and Remove removes it.
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{Type: mount.TypeVolume, Target: dir})
	}
	return cfg, hostCfg, netCfg
}

// Start implements compute.Engine.
func (e *Engine) Start(ctx context.Context, id string) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	if err := e.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", id, notFound(err))
	}
	return nil
}

// Wait implements compute.Engine. It has no timeout of its own; once the
// container has stopped it inspects it (bounded) for OOMKilled.
func (e *Engine) Wait(ctx context.Context, id string) (exit.Result, error) {
	resC, errC := e.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	var res exit.Result
	select {
	case err := <-errC:
		return res, fmt.Errorf("wait for container %s: %w", id, notFound(err))
	case r := <-resC:
		res.ExitCode = int(r.StatusCode)
		if r.Error != nil && r.Error.Message != "" {
			res.Err = errors.New(r.Error.Message)
		}
	}
	res.Signal = signalName(res.ExitCode)
	// The container has stopped: the outcome must be completed even when the
	// caller's context ends right now.
	ictx, cancel := e.callContext(context.WithoutCancel(ctx))
	defer cancel()
	info, err := e.cli.ContainerInspect(ictx, id)
	if err != nil {
		return res, fmt.Errorf("inspect container %s after wait: %w", id, notFound(err))
	}
	// The daemon learns of an OOM kill from an event of its own, which may
	// come after the exit: a SIGKILLed container is inspected again a few
	// times before it is taken for not OOM-killed.
	for try := 0; res.ExitCode == 137 && info.State != nil && !info.State.OOMKilled && try < oomRechecks; try++ {
		select {
		case <-time.After(oomRecheckEvery):
		case <-ictx.Done():
			return res, fmt.Errorf("inspect container %s after wait: %w", id, ictx.Err())
		}
		if info, err = e.cli.ContainerInspect(ictx, id); err != nil {
			return res, fmt.Errorf("inspect container %s after wait: %w", id, notFound(err))
		}
	}
	if info.State != nil {
		res.OOMKilled = info.State.OOMKilled
		if info.State.Error != "" && res.Err == nil {
			res.Err = errors.New(info.State.Error)
		}
	}
	return res, nil
}

// Logs implements compute.Engine. Without follow it is bounded by the call
// timeout; with follow only by ctx.
func (e *Engine) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = e.callContext(ctx)
		defer cancel()
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	rc, err := e.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return fmt.Errorf("logs of container %s: %w", id, notFound(err))
	}
	defer rc.Close()
	// Containers never get a TTY, so the stream is always multiplexed.
	if _, err := stdcopy.StdCopy(stdout, stderr, rc); err != nil {
		if ctxErr := context.Cause(ctx); ctxErr != nil {
			err = ctxErr
		}
		return fmt.Errorf("logs of container %s: %w", id, err)
	}
	return nil
}

// Stop implements compute.Engine. The call is bounded by grace plus the
// call timeout. No grace kills at once: the engine's stop would still send
// SIGTERM first.
func (e *Engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	if grace <= 0 {
		kctx, cancel := e.callContext(ctx)
		defer cancel()
		err := e.cli.ContainerKill(kctx, id, "KILL")
		if err != nil && cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "is not running") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kill container %s: %w", id, notFound(err))
		}
		return nil
	}
	s := seconds(grace)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s)*time.Second+e.cfg.CallTimeout)
	defer cancel()
	if err := e.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &s}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, notFound(err))
	}
	return nil
}

// Remove implements compute.Engine.
func (e *Engine) Remove(ctx context.Context, id string) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	err := e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
		return nil // another Remove got there first
	}
	return fmt.Errorf("remove container %s: %w", id, err)
}

// List implements compute.Engine.
func (e *Engine) List(ctx context.Context, labels map[string]string) ([]compute.Container, error) {
	args := filters.NewArgs(filters.Arg("label", compute.LabelManaged+"=true"))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args.Add("label", k+"="+labels[k])
	}
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]compute.Container, 0, len(list))
	for _, c := range list {
		var name string
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, compute.Container{
			ID:       c.ID,
			Name:     name,
			Labels:   c.Labels,
			State:    c.State,
			ExitCode: exitCodeFromStatus(c.Status),
			Created:  time.Unix(c.Created, 0),
		})
	}
	slices.SortStableFunc(out, func(a, b compute.Container) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// How often, and how many times, Wait inspects a SIGKILLed container again
// for an OOM kill the daemon may not have recorded yet.
const (
	oomRechecks     = 5
	oomRecheckEvery = 100 * time.Millisecond
)

// exitedStatus matches the daemon's status line of an exited container,
// "Exited (137) 5 seconds ago".
var exitedStatus = regexp.MustCompile(`^Exited \((-?\d+)\)`)

func exitCodeFromStatus(status string) int {
	m := exitedStatus.FindStringSubmatch(status)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// seconds rounds d up to whole seconds, as the API counts them.
func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// signalNames are the Linux signal numbers: containers run Linux whatever
// the client's OS.
var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
	18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
	23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
	28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}

// signalName names the signal an exit code above 128 stands for.
func signalName(code int) string {
	if code <= 128 {
		return ""
	}
	return signalNames[code-128]
}
