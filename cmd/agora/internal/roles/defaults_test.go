package roles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/compute/ecs"
)

// TestDefaultDataDir: every role's data dir is $AGORA_DATA_DIR, else
// ~/.agora, else none.
func TestDefaultDataDir(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGORA_DATA_DIR": "/srv/agora", "HOME": "/home/a"}, "/srv/agora"},
		{map[string]string{"HOME": "/home/a"}, "/home/a/.agora"},
		{map[string]string{}, ""},
	} {
		if got := DefaultDataDir(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("DefaultDataDir(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

// TestRunnerID: the id is made once and kept; a runner dir that already
// holds dispatches (from an agora runner that named itself after the host)
// keeps the bare host name, so its containers are adopted.
func TestRunnerID(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	id, err := runnerID(dir, filepath.Join(dir, "runner"))
	if err != nil || !strings.HasPrefix(id, host+"-") || len(id) != len(host)+9 {
		t.Fatalf("runnerID on a new dir = %q, %v; want %s-<8 hex digits>", id, err, host)
	}
	if again, err := runnerID(dir, filepath.Join(dir, "runner")); err != nil || again != id {
		t.Errorf("runnerID again = %q, %v; want the kept %q", again, err, id)
	}

	old := t.TempDir()
	if err := os.MkdirAll(filepath.Join(old, "dispatches", "d-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if id, err := runnerID(old, old); err != nil || id != host {
		t.Errorf("runnerID on a dir with dispatches = %q, %v; want the host name %q", id, err, host)
	}
}

// TestRoleConfigs: what agora runner and agora orchestrator configure is
// valid with the shared defaults, and a runner needs storage.
func TestRoleConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runnerOnly := Config{DataDir: dir, RunnerDataDir: dir, NATSURL: "nats://127.0.0.1:4222", Runner: true}.WithDefaults()
	if err := runnerOnly.Validate(); err != nil {
		t.Errorf("runner role: Validate = %v", err)
	}
	if runnerOnly.RunnerDataDir != dir || runnerOnly.Grace <= 0 || runnerOnly.LogCap <= 0 || runnerOnly.Slots <= 0 {
		t.Errorf("runner role defaults = %+v", runnerOnly)
	}
	orch := Config{NATSURL: "nats://127.0.0.1:4222", Orchestrator: true, Metrics: true, NoStorage: true}.WithDefaults()
	if err := orch.Validate(); err != nil || orch.local() {
		t.Errorf("orchestrator role: Validate = %v, local %v; want valid and nothing on this host", err, orch.local())
	}
	if err := (Config{DataDir: dir, Runner: true, NoStorage: true}).WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "needs object storage") {
		t.Errorf("runner without storage: Validate = %v", err)
	}
}

// TestFargateRunnerChecksSizesAtSubmit: a stack whose runner is on ECS
// Fargate has its orchestrator refuse, at submit, what no Fargate task size
// holds (orchestrator.Maximums.FargateTaskSizes); one on the EC2 launch
// type or Docker does not.
func TestFargateRunnerChecksSizesAtSubmit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ecs  *ECSConfig
		want bool
	}{
		{"docker", nil, false},
		{"ecs on ec2", &ECSConfig{Engine: ecs.Config{LaunchType: ecs.LaunchEC2}}, false},
		{"ecs on fargate", &ECSConfig{Engine: ecs.Config{LaunchType: ecs.LaunchFargate}}, true},
	} {
		c := Config{DataDir: t.TempDir(), Orchestrator: true, Runner: true, ECS: tt.ecs}.WithDefaults()
		if c.Max.FargateTaskSizes != tt.want {
			t.Errorf("%s: Max.FargateTaskSizes = %v, want %v", tt.name, c.Max.FargateTaskSizes, tt.want)
		}
	}
}
