package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/schemas"
)

// Defaults of the runner's maximums (Config.Max*). A runner may run under
// another operator's configuration than the orchestrator that queued a
// request, so it checks every request against its own.
const (
	DefaultMaxMemoryMB    = 16 << 10 // 16 GiB
	DefaultMaxPids        = 4096
	DefaultMaxTimeout     = 24 * time.Hour
	DefaultMaxWorkspaceMB = 1 << 10 // 1 GiB
	// MaxWorkspaceMB bounds the workspace maximum itself: 16 TiB, so that
	// sizes derived from it never overflow.
	MaxWorkspaceMB = 16 << 20
	// MaxArtifacts bounds the artifact count maximum: the most a
	// dispatch.finished event lists (event.schema.json, artifacts maxItems).
	MaxArtifacts = 1000
	// DefaultWorkspaceCheck is how often a running dispatch's workspace is
	// measured.
	DefaultWorkspaceCheck = time.Second
)

// DefaultMaxCPUs is this host's cores: a CPU quota above them means nothing.
func DefaultMaxCPUs() float64 { return float64(runtime.NumCPU()) }

// checkLimits refuses a request over this runner's maximums, naming the
// field, the value, the maximum and the flag. CPUs are not refused: a
// request for more than the maximum gets the maximum (compileContainer),
// which on a host with fewer cores is all it could have had anyway.
func checkLimits(req *schemas.DispatchRequest, cfg Config) error {
	over := func(field string, value, max any, flag string) error {
		return fmt.Errorf("%s %v is over this runner's maximum %v (agora runner %s)", field, value, max, flag)
	}
	if r := req.Resources; r != nil {
		if r.MemoryMB > cfg.MaxMemoryMB {
			return over("resources.memory_mb", r.MemoryMB, cfg.MaxMemoryMB, "--max-memory-mb")
		}
		if r.Pids > cfg.MaxPids {
			return over("resources.pids", r.Pids, cfg.MaxPids, "--max-pids")
		}
	}
	if req.NetworkMode() == schemas.NetworkHost && !cfg.AllowHostNetwork {
		return fmt.Errorf("network %q is not allowed on this runner: it would give the sub-agent the host's loopback (NATS, the API); an operator allows it with agora runner --allow-host-network", schemas.NetworkHost)
	}
	if req.NetworkMode() == schemas.NetworkEgress {
		if _, ok := cfg.Engine.(compute.Networker); !ok || cfg.NoHostMounts {
			return fmt.Errorf("network %q needs a Docker runner, which makes the sub-agent's internal network and proxy; this runner's engine cannot: run the task with network none or bridge, or on a Docker runner", schemas.NetworkEgress)
		}
		if _, err := schemas.CheckNetwork(req.Network, req.Egress); err != nil {
			return err
		}
	}
	if max := int64(cfg.MaxTimeout / time.Second); int64(req.Spec.TimeoutSeconds) > max {
		return over("timeout_seconds", req.Spec.TimeoutSeconds, max, "--max-timeout "+cfg.MaxTimeout.String())
	}
	if rc, ok := cfg.Engine.(resourceChecker); ok {
		// ECS on Fargate: only its task sizes exist. Refused here, before
		// anything of the dispatch is written or registered.
		if err := rc.CheckResources(containerResources(req, cfg)); err != nil {
			return err
		}
	}
	return nil
}

// resourceChecker is an engine that can refuse a container's resources
// before any call (ECS on Fargate: only its task sizes exist).
type resourceChecker interface {
	CheckResources(compute.Resources) error
}

// containerResources are the limits of a request's container: the
// request's, else the runner's defaults, each at most the runner's maximum
// (the contract's where the runner sets none). Every conversion is
// checked: no number becomes "no limit" by wrapping around.
func containerResources(req *schemas.DispatchRequest, cfg Config) compute.Resources {
	maxMB := bound(cfg.MaxMemoryMB, schemas.MaxMemoryMB)
	maxPids := bound(cfg.MaxPids, schemas.MaxPids)
	maxCPUs := float64(schemas.MaxCPUs)
	if cfg.MaxCPUs > 0 && cfg.MaxCPUs < maxCPUs {
		maxCPUs = cfg.MaxCPUs
	}
	res := cfg.Resources
	if r := req.Resources; r != nil {
		if r.CPUs > 0 {
			res.NanoCPUs, _ = units.NanoCPUs(min(r.CPUs, maxCPUs))
		}
		if r.MemoryMB > 0 {
			res.MemoryBytes, _ = units.MiB(min(r.MemoryMB, maxMB))
		}
		if r.Pids > 0 {
			res.PidsLimit = min(r.Pids, maxPids)
		}
	}
	if maxNano, ok := units.NanoCPUs(maxCPUs); ok && res.NanoCPUs > maxNano {
		res.NanoCPUs = maxNano
	}
	if maxBytes, ok := units.MiB(maxMB); ok && res.MemoryBytes > maxBytes {
		res.MemoryBytes = maxBytes
	}
	res.PidsLimit = min(res.PidsLimit, maxPids)
	return res
}

// bound is v when set (above 0), else def.
func bound(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// errWorkspaceFull stops a walk that has counted past the maximum.
var errWorkspaceFull = errors.New("workspace over its maximum")

// workspaceSize adds up the workspace: the size of every regular file (a
// sparse one counts whole: a snapshot would archive it whole), of every
// directory and symlink as the file system keeps it. It stops counting
// once past limit (0: count all) and ignores entries that vanish while it
// walks.
func workspaceSize(dir string, limit int64) (size int64, entries int, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		entries++
		// A sparse file may claim up to 8 EiB: add without wrapping.
		if n := max(info.Size(), 0); n > math.MaxInt64-size {
			size = math.MaxInt64
		} else {
			size += n
		}
		if limit > 0 && size > limit {
			return errWorkspaceFull
		}
		return nil
	})
	if errors.Is(err, errWorkspaceFull) {
		err = nil
	}
	return size, entries, err
}

// watchWorkspace measures the dispatch's workspace — with its staged
// store, the other directory the container may write (stage.go) — while
// its container runs and kills the container (SIGKILL: the worker gets no
// chance to report a cancel) once the workspace is over this runner's
// maximum; the outcome then says so (decideOutcome: provider-failed). Each
// walk's cost sets the pace: the next one waits at least ten times as long
// as the last took, so a workspace of many files does not keep a core
// busy. It returns when ctx ends.
func (d *dispatch) watchWorkspace(ctx context.Context, cid string) {
	r := d.r
	limit := r.cfg.MaxWorkspaceBytes
	if limit <= 0 {
		return
	}
	dir := r.workspace(d.id)
	wait := r.cfg.WorkspaceCheck
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		size, _, err := workspaceSize(dir, limit)
		if err != nil {
			d.log.Warn("measure the workspace", "error", err)
		}
		if size <= limit {
			staged, _, err := workspaceSize(r.stageDir(d.id), limit-size)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.log.Warn("measure the staged store", "error", err)
			}
			size += staged
		}
		wait = max(r.cfg.WorkspaceCheck, 10*time.Since(start))
		if size <= limit {
			continue
		}
		detail := fmt.Sprintf("the workspace grew past this runner's maximum of %s (agora runner --max-workspace-mb %d): %s and counting when the runner stopped the container",
			units.Bytes(limit), limit>>20, units.Bytes(size))
		d.mu.Lock()
		d.workspaceOver = detail
		d.mu.Unlock()
		d.log.Warn("workspace over its maximum; killing the container", "bytes", size, "max_bytes", limit)
		if err := r.cfg.Engine.Stop(context.WithoutCancel(ctx), cid, 0); err != nil {
			d.log.Error("kill container", "error", err)
		}
		return
	}
}
