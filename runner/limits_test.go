package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// TestContainerResourcesNeverOverflow: a request's limits become the
// container's through checked conversions, capped at the runner's
// maximums (the contract's where the runner sets none). A memory_mb of
// 2^44 used to wrap to 0 bytes: no memory limit at all.
func TestContainerResourcesNeverOverflow(t *testing.T) {
	t.Parallel()
	defaults := compute.Resources{NanoCPUs: 2e9, MemoryBytes: 2 << 30, PidsLimit: 1024}
	runnerMax := Config{Resources: defaults, MaxMemoryMB: 16 << 10, MaxCPUs: 4, MaxPids: 4096}
	noMax := Config{Resources: defaults}
	tests := []struct {
		name string
		cfg  Config
		res  *schemas.Resources
		want compute.Resources
	}{
		{"defaults", runnerMax, nil, defaults},
		{"under", runnerMax, &schemas.Resources{CPUs: 1.5, MemoryMB: 512, Pids: 64},
			compute.Resources{NanoCPUs: 1_500_000_000, MemoryBytes: 512 << 20, PidsLimit: 64}},
		{"at", runnerMax, &schemas.Resources{CPUs: 4, MemoryMB: 16 << 10, Pids: 4096},
			compute.Resources{NanoCPUs: 4e9, MemoryBytes: 16 << 30, PidsLimit: 4096}},
		{"memory 2^44 MiB", runnerMax, &schemas.Resources{MemoryMB: 17592186044416},
			compute.Resources{NanoCPUs: 2e9, MemoryBytes: 16 << 30, PidsLimit: 1024}},
		{"absurd everything", runnerMax, &schemas.Resources{CPUs: 1e300, MemoryMB: math.MaxInt64, Pids: math.MaxInt64},
			compute.Resources{NanoCPUs: 4e9, MemoryBytes: 16 << 30, PidsLimit: 4096}},
		{"cpus +Inf", runnerMax, &schemas.Resources{CPUs: math.Inf(1)},
			compute.Resources{NanoCPUs: 4e9, MemoryBytes: 2 << 30, PidsLimit: 1024}},
		{"no runner maximum: the contract's", noMax, &schemas.Resources{CPUs: 1e300, MemoryMB: math.MaxInt64, Pids: math.MaxInt64},
			compute.Resources{NanoCPUs: schemas.MaxCPUs * 1e9, MemoryBytes: schemas.MaxMemoryMB << 20, PidsLimit: schemas.MaxPids}},
		{"defaults over the maximum", Config{Resources: defaults, MaxCPUs: 1, MaxMemoryMB: 1024, MaxPids: 100}, nil,
			compute.Resources{NanoCPUs: 1e9, MemoryBytes: 1 << 30, PidsLimit: 100}},
	}
	for _, tt := range tests {
		req := &schemas.DispatchRequest{Resources: tt.res}
		if got := containerResources(req, tt.cfg); got != tt.want {
			t.Errorf("%s: containerResources(%+v) = %+v, want %+v", tt.name, tt.res, got, tt.want)
		}
		spec := compileContainer(req, tt.cfg, hostPaths{})
		if spec.Resources.MemoryBytes <= 0 || spec.Resources.NanoCPUs <= 0 || spec.Resources.PidsLimit <= 0 {
			t.Errorf("%s: compiled resources %+v: a limit wrapped to none", tt.name, spec.Resources)
		}
	}
}

// TestCheckLimits: a request over this runner's maximums is refused with
// the field, the value, the maximum and the flag; CPUs are capped instead.
func TestCheckLimits(t *testing.T) {
	t.Parallel()
	cfg := Config{MaxMemoryMB: 1024, MaxCPUs: 2, MaxPids: 256, MaxTimeout: time.Hour}
	tests := []struct {
		name    string
		res     *schemas.Resources
		timeout int
		want    string
	}{
		{"none", nil, 0, ""},
		{"at", &schemas.Resources{MemoryMB: 1024, Pids: 256, CPUs: 2}, 3600, ""},
		{"cpus over: capped, not refused", &schemas.Resources{CPUs: 64}, 0, ""},
		{"memory over", &schemas.Resources{MemoryMB: 1025}, 0, "resources.memory_mb 1025 is over this runner's maximum 1024 (agora runner --max-memory-mb)"},
		{"memory 2^44", &schemas.Resources{MemoryMB: 17592186044416}, 0, "resources.memory_mb 17592186044416 is over this runner's maximum 1024"},
		{"pids over", &schemas.Resources{Pids: 257}, 0, "resources.pids 257 is over this runner's maximum 256 (agora runner --max-pids)"},
		{"timeout over", nil, 3601, "timeout_seconds 3601 is over this runner's maximum 3600 (agora runner --max-timeout 1h0m0s)"},
		{"timeout absurd", nil, math.MaxInt, "timeout_seconds 9223372036854775807 is over this runner's maximum 3600"},
	}
	for _, tt := range tests {
		req := &schemas.DispatchRequest{Resources: tt.res, Spec: schemas.DispatchSpec{TimeoutSeconds: tt.timeout}}
		err := checkLimits(req, cfg)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: checkLimits = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: checkLimits = %v, want %q", tt.name, err, tt.want)
		}
	}
	host := &schemas.DispatchRequest{Network: schemas.NetworkHost}
	if err := checkLimits(host, cfg); err == nil || !strings.Contains(err.Error(), "--allow-host-network") {
		t.Errorf("network host on a runner that does not allow it: checkLimits = %v; want refused, naming the flag", err)
	}
	allowing := cfg
	allowing.AllowHostNetwork = true
	if err := checkLimits(host, allowing); err != nil {
		t.Errorf("network host with AllowHostNetwork: checkLimits = %v", err)
	}
	if err := checkLimits(&schemas.DispatchRequest{Network: schemas.NetworkBridge}, cfg); err != nil {
		t.Errorf("network bridge: checkLimits = %v", err)
	}
	if got := (&schemas.DispatchSpec{TimeoutSeconds: math.MaxInt}).Timeout(time.Hour); got != schemas.MaxTimeoutSeconds*time.Second {
		t.Errorf("Timeout(MaxInt seconds) = %s; want the contract's 7 days, not a wrapped duration", got)
	}
}

// TestCheckLimitsFargateSizes: a runner on ECS Fargate refuses, when it
// claims a dispatch, resources no Fargate task size holds, naming the
// nearest size; it takes what a size holds (rounded up by the engine), and
// a runner on the EC2 launch type takes anything within its maximums.
func TestCheckLimitsFargateSizes(t *testing.T) {
	t.Parallel()
	engine := func(launchType string) compute.Engine {
		e, err := ecs.New(ecs.Config{
			Cluster: "agora", Region: "eu-west-1", LogGroup: "/agora", LaunchType: launchType,
			Subnets: []string{"subnet-1"}, IsolatedSecurityGroups: []string{"sg-none"}, ExecutionRoleARN: "arn:aws:iam::123456789012:role/exec",
		}, aws.Config{Region: "eu-west-1"}, ecs.Endpoints{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	fargate := Config{Engine: engine(ecs.LaunchFargate), MaxMemoryMB: 200 << 10, MaxCPUs: 64, MaxPids: 4096, MaxTimeout: time.Hour}
	ec2 := fargate
	ec2.Engine = engine(ecs.LaunchEC2)
	for _, tt := range []struct {
		name string
		res  *schemas.Resources
		want string
	}{
		{"a size", &schemas.Resources{CPUs: 0.5, MemoryMB: 3000}, ""},
		{"memory past Fargate's", &schemas.Resources{CPUs: 4, MemoryMB: 130 << 10},
			"no Fargate task size has 4 vCPU and 130 GiB; the nearest is 16 vCPU with 120 GiB (cpu 16384, memory 122880): ask for at most that (resources.cpus 16, resources.memory_mb 122880)"},
		{"CPUs past Fargate's", &schemas.Resources{CPUs: 32, MemoryMB: 8 << 10},
			"no Fargate task size has 32 vCPU and 8 GiB; the nearest is 16 vCPU with 32 GiB (cpu 16384, memory 32768)"},
	} {
		req := &schemas.DispatchRequest{Resources: tt.res}
		err := checkLimits(req, fargate)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s on Fargate: checkLimits = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s on Fargate: checkLimits = %v, want %q", tt.name, err, tt.want)
		}
		if err := checkLimits(req, ec2); err != nil {
			t.Errorf("%s on EC2: checkLimits = %v, want nil", tt.name, err)
		}
	}
}

// TestWorkspaceSize counts files, directories and sparse files whole, and
// stops counting past the limit.
func TestWorkspaceSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(1 << 40); err != nil { // 1 TiB that takes no disk
		t.Fatal(err)
	}
	sparse.Close()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	size, _, err := workspaceSize(dir, 0)
	if err != nil || size < 1<<40+10000 {
		t.Errorf("workspaceSize(all) = %d, %v; want at least 1 TiB + 10000 (the sparse file counts whole)", size, err)
	}
	size, _, err = workspaceSize(dir, 5000)
	if err != nil || size <= 5000 {
		t.Errorf("workspaceSize(limit 5000) = %d, %v; want past 5000", size, err)
	}
	if err := os.Remove(filepath.Join(dir, "sparse")); err != nil {
		t.Fatal(err)
	}
	if size, entries, err := workspaceSize(dir, 0); err != nil || size < 10000 || size > 1<<20 || entries != 5 {
		t.Errorf("workspaceSize = %d bytes, %d entries, %v; want about 10000 bytes in 5 entries (the symlink not followed)", size, entries, err)
	}
}

// TestSnapshotOverMaximum: a workspace over the runner's maximum is not
// archived, and an archive whose files add up to more than the maximum is
// not unpacked.
func TestSnapshotOverMaximum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := storage.Open(ctx, "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.Snapshot(ctx, store, dir, 2<<20); err == nil || !strings.Contains(err.Error(), "--max-workspace-mb 2") {
		t.Errorf("workspace.Snapshot(3 MiB, max 2 MiB) = %v; want an error naming --max-workspace-mb 2", err)
	}
	ref, err := workspace.Snapshot(ctx, store, dir, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := workspace.Restore(ctx, store, ref, t.TempDir(), 2<<20); err == nil || !strings.Contains(err.Error(), "--max-workspace-mb 2") {
		t.Errorf("workspace.Restore(3 MiB of files, max 2 MiB) = %v; want an error naming --max-workspace-mb 2", err)
	}
	if err := workspace.Restore(ctx, store, ref, t.TempDir(), 4<<20); err != nil {
		t.Errorf("workspace.Restore(3 MiB of files, max 4 MiB) = %v", err)
	}
}

// TestWorkspaceLimit: on the real engine, a sub-agent that keeps writing
// into its workspace is killed once the workspace passes the runner's
// maximum, and the outcome says so; one that stays under it finishes.
func TestWorkspaceLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.MaxWorkspaceBytes = 4 << 20
		c.WorkspaceCheck = 100 * time.Millisecond
	})
	h.start()
	// 64 MiB at most, a MiB every 20 ms, then it would sleep: without the
	// limit the dispatch ends only at its timeout.
	writer := request(`i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); sleep 0.02; done; sleep 300`)
	writer.Spec.TimeoutSeconds = 60
	under := request(`head -c 1048576 /dev/zero > f; echo wrote`)
	h.enqueue(writer)
	h.enqueue(under)

	ev := h.terminal(writer.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonProviderFailed ||
		!strings.Contains(ev.Failure.Detail, "the workspace grew past this runner's maximum of 4.0 MiB (agora runner --max-workspace-mb 4)") {
		t.Errorf("writer ended %s %+v; want provider-failed naming the workspace maximum", ev.Kind, ev.Failure)
	}
	if ev.ExitCode == nil || *ev.ExitCode != 137 {
		t.Errorf("writer exit code = %v; want 137 (SIGKILL)", ev.ExitCode)
	}
	h.settled(writer.Spec.DispatchID)
	if _, err := os.Stat(h.runner.workspace(writer.Spec.DispatchID)); !os.IsNotExist(err) {
		t.Errorf("the writer's workspace is still on the host: %v", err)
	}

	if ev := h.terminal(under.Spec.DispatchID, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Errorf("a dispatch under the maximum ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(under.Spec.DispatchID)
}

// TestRunnerRefusesOverItsMaximums: a request over this runner's
// maximums (queued by an orchestrator with other ones) fails before any
// container is created, naming the maximum.
func TestRunnerRefusesOverItsMaximums(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.MaxMemoryMB, c.MaxTimeout = 256, time.Minute
	})
	h.start()
	memory := request(`echo never`)
	memory.Resources = &schemas.Resources{MemoryMB: 512}
	timeout := request(`echo never`)
	timeout.Spec.TimeoutSeconds = 61
	h.enqueue(memory)
	h.enqueue(timeout)
	for req, want := range map[string]string{
		memory.Spec.DispatchID:  "resources.memory_mb 512 is over this runner's maximum 256 (agora runner --max-memory-mb)",
		timeout.Spec.DispatchID: "timeout_seconds 61 is over this runner's maximum 60 (agora runner --max-timeout 1m0s)",
	} {
		ev := h.terminal(req, time.Minute)
		if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonWorkerFailed || !strings.Contains(ev.Failure.Detail, want) {
			t.Errorf("%s ended %s %+v; want worker-failed saying %q", req, ev.Kind, ev.Failure, want)
		}
		h.settled(req)
	}
}

// TestStagedStoreCountsToWorkspace: the staged store is the other
// directory a container may write; what a sub-agent writes there counts
// toward the workspace maximum, so it cannot fill the host's disk past it.
func TestStagedStoreCountsToWorkspace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.MaxWorkspaceBytes = 4 << 20
		c.WorkspaceCheck = 100 * time.Millisecond
	})
	h.start()
	writer := request("")
	blobs := filepath.Join(h.runner.stageDir(writer.Spec.DispatchID), "blobs", "sha256")
	// The blobs directories are made when first used: the sub-agent makes
	// them itself.
	writer.Spec.Subagent.Command = []string{"/bin/sh", "-c", `mkdir -p ` + blobs + ` || exit 6; i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > ` + blobs + `/f$i || exit 7; i=$((i+1)); sleep 0.02; done; sleep 300`}
	writer.Spec.TimeoutSeconds = 60
	h.enqueue(writer)
	ev := h.terminal(writer.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonProviderFailed ||
		!strings.Contains(ev.Failure.Detail, "the workspace grew past this runner's maximum of 4.0 MiB") {
		t.Errorf("writer ended %s %+v; want provider-failed naming the workspace maximum; output:\n%s", ev.Kind, ev.Failure, h.output(writer.Spec.DispatchID))
	}
	h.settled(writer.Spec.DispatchID)
}
