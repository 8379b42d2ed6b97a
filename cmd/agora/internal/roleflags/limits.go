package roleflags

import (
	"fmt"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
)

// maxFlags are the --max-… flags: this server's ceilings on what one task
// may ask for or hold (docs/orchestrator.md#limits). The orchestrator
// refuses a task over them; a runner refuses (or, for CPUs, caps) a
// request over its own, and bounds workspaces.
type maxFlags struct {
	orchestrator, runner bool

	memoryMB       int64
	cpus           float64
	pids           int64
	timeout        time.Duration
	rounds         int
	wait           time.Duration
	inputKB        int
	partialStateKB int
	taskKB         int
	retryAttempts  int
	egressHosts    int
	workspaceMB    int64
	egressUplink   string
	artifacts      int
	artifactsMB    int64
	hostNetwork    bool
	fargateSizes   bool
}

// register adds the flags of the roles this command runs (--max-memory-mb,
// --max-cpus, --max-pids, --max-timeout and --allow-host-network belong to
// both). --max-cpus defaults to the host's cores where a runner runs here,
// else to the orchestrator's 16.
func (m *maxFlags) register(fl *Flags, orchestratorRole, runnerRole bool) {
	fs := fl.fs
	m.orchestrator, m.runner = orchestratorRole, runnerRole
	def := orchestrator.DefaultMaximums()
	cpus := def.CPUs
	if runnerRole {
		cpus = runner.DefaultMaxCPUs()
	}
	fs.Int64Var(&m.memoryMB, "max-memory-mb", def.MemoryMB, "refuse a task asking for more than `MB` of memory (resources.memory_mb)")
	fs.Float64Var(&m.cpus, "max-cpus", cpus, "refuse a task asking for more than `CPUS` (resources.cpus; a runner caps instead); the default is this host's cores with a runner here, else 16")
	fs.Int64Var(&m.pids, "max-pids", def.Pids, "refuse a task asking for more than `N` processes (resources.pids)")
	fs.BoolVar(&m.hostNetwork, "allow-host-network", false, "let tasks ask for network \"host\", which gives their sub-agents this host's loopback (NATS, the API); off by default")
	fs.DurationVar(&m.timeout, "max-timeout", time.Duration(def.TimeoutSeconds)*time.Second, "refuse a task whose rounds may run longer than `DURATION` each (timeout_seconds)")
	if orchestratorRole {
		fs.IntVar(&m.rounds, "max-rounds", def.Rounds, "refuse a task allowing more than `N` rounds (limits.max_rounds)")
		fs.DurationVar(&m.wait, "max-wait", time.Duration(def.WaitSeconds)*time.Second, "refuse a task that may wait longer than `DURATION` for answers in all (limits.max_wait_seconds)")
		fs.IntVar(&m.inputKB, "max-input-kb", def.InputBytes>>10, "refuse a task whose input is over `KB` KiB")
		fs.IntVar(&m.partialStateKB, "max-partial-state-kb", int(def.PartialStateBytes>>10), "fail a task whose round leaves a partial_state over `KB` KiB")
		fs.IntVar(&m.retryAttempts, "max-retry-attempts", def.RetryAttempts, "refuse a task whose retry policy allows more than `N` dispatches of a round (retry.attempts)")
		fs.IntVar(&m.taskKB, "max-task-kb", def.TaskBytes>>10, "keep a task's stored record under `KB` KiB: refuse a request or answer, or fail a round, that would grow it past")
		fs.IntVar(&m.egressHosts, "max-egress-hosts", def.EgressHosts, "refuse a task whose egress allow-list names more than `N` hosts")
		fs.BoolVar(&m.fargateSizes, "fargate-task-sizes", false, "the runners are on ECS Fargate: refuse at submit a task whose resources no Fargate task size holds, naming the nearest (a Fargate runner in this process sets it)")
		fl.role(roleOrch, "max-rounds", "max-wait", "max-input-kb", "max-partial-state-kb", "max-retry-attempts", "max-task-kb", "max-egress-hosts", "fargate-task-sizes")
	}
	if runnerRole {
		fs.Int64Var(&m.workspaceMB, "max-workspace-mb", runner.DefaultMaxWorkspaceMB, "kill a dispatch whose workspace grows past `MB` (and refuse to snapshot one over it)")
		fs.StringVar(&m.egressUplink, "egress-uplink", runner.DefaultEgressUplink, "the Docker `NETWORK` the egress proxy of a task with an egress allow-list reaches its hosts through")
		fs.IntVar(&m.artifacts, "max-artifacts", schemas.DefaultMaxArtifacts, "fail a round that hands back more than `N` artifacts")
		fs.Int64Var(&m.artifactsMB, "max-artifacts-mb", schemas.DefaultMaxArtifactBytes>>20, "fail a round whose artifacts hold more than `MB` in all")
		fl.role(roleRunner, "max-workspace-mb", "egress-uplink", "max-artifacts", "max-artifacts-mb")
	}
}

// check reports the first flag out of range.
func (m *maxFlags) check() error {
	switch {
	case m.memoryMB < 6 || m.memoryMB > schemas.MaxMemoryMB:
		return fmt.Errorf("--max-memory-mb %d: want 6 (Docker's minimum) to %d", m.memoryMB, schemas.MaxMemoryMB)
	case !(m.cpus > 0) || m.cpus > schemas.MaxCPUs:
		return fmt.Errorf("--max-cpus %g: want more than 0, at most %d", m.cpus, schemas.MaxCPUs)
	case m.pids < 16 || m.pids > schemas.MaxPids:
		return fmt.Errorf("--max-pids %d: want 16 to %d", m.pids, schemas.MaxPids)
	case m.timeout < time.Second || m.timeout > schemas.MaxTimeoutSeconds*time.Second:
		return fmt.Errorf("--max-timeout %s: want 1s to 168h (7 days, the contract's)", m.timeout)
	}
	if m.orchestrator {
		switch {
		case m.rounds < 1 || m.rounds > schemas.MaxRounds:
			return fmt.Errorf("--max-rounds %d: want 1 to %d", m.rounds, schemas.MaxRounds)
		case m.wait < time.Second || m.wait > schemas.MaxWaitSeconds*time.Second:
			return fmt.Errorf("--max-wait %s: want 1s to 8760h (365 days)", m.wait)
		case m.inputKB < 1 || m.inputKB > 1<<20:
			return fmt.Errorf("--max-input-kb %d: want 1 to %d", m.inputKB, 1<<20)
		case m.partialStateKB < 1 || m.partialStateKB > 1<<20:
			return fmt.Errorf("--max-partial-state-kb %d: want 1 to %d", m.partialStateKB, 1<<20)
		case m.retryAttempts < 1 || m.retryAttempts > orchestrator.MaxRetryAttempts:
			return fmt.Errorf("--max-retry-attempts %d: want 1 to %d", m.retryAttempts, orchestrator.MaxRetryAttempts)
		case m.taskKB < 16 || m.taskKB > 1<<20:
			return fmt.Errorf("--max-task-kb %d: want 16 to %d (and under the NATS server's max payload)", m.taskKB, 1<<20)
		case m.egressHosts < 1 || m.egressHosts > schemas.MaxEgressHosts:
			return fmt.Errorf("--max-egress-hosts %d: want 1 to %d", m.egressHosts, schemas.MaxEgressHosts)
		}
	}
	if m.runner {
		switch {
		case m.workspaceMB < 1 || m.workspaceMB > runner.MaxWorkspaceMB:
			return fmt.Errorf("--max-workspace-mb %d: want 1 to %d (16 TiB)", m.workspaceMB, int64(runner.MaxWorkspaceMB))
		case m.artifacts < 1 || m.artifacts > runner.MaxArtifacts:
			return fmt.Errorf("--max-artifacts %d: want 1 to %d", m.artifacts, runner.MaxArtifacts)
		case m.artifactsMB < 1 || m.artifactsMB > runner.MaxWorkspaceMB:
			return fmt.Errorf("--max-artifacts-mb %d: want 1 to %d (16 TiB)", m.artifactsMB, int64(runner.MaxWorkspaceMB))
		}
	}
	return nil
}

// maximums are the orchestrator's (and, for memory, CPUs, pids and the
// timeout, the runner's).
func (m *maxFlags) maximums() orchestrator.Maximums {
	return orchestrator.Maximums{
		MemoryMB: m.memoryMB, CPUs: m.cpus, Pids: m.pids,
		TimeoutSeconds: int(m.timeout / time.Second), Rounds: m.rounds, WaitSeconds: int(m.wait / time.Second),
		InputBytes: m.inputKB << 10, PartialStateBytes: int64(m.partialStateKB) << 10, TaskBytes: m.taskKB << 10,
		RetryAttempts: m.retryAttempts, EgressHosts: m.egressHosts, AllowHostNetwork: m.hostNetwork,
		FargateTaskSizes: m.fargateSizes,
	}
}

// runnerConfig sets the runner's own bounds in cfg.
func (m *maxFlags) runnerConfig(cfg *roles.Config) {
	cfg.MaxWorkspaceBytes = m.workspaceMB << 20
	cfg.EgressUplink = m.egressUplink
	cfg.MaxArtifacts = m.artifacts
	cfg.MaxArtifactBytes = m.artifactsMB << 20
}
