package roleflags

import (
	"strings"
	"testing"
)

// TestMeasuringEngineRefused: serve and runner run dispatches as plain
// processes (--compute process) or replays (--compute replay) only when
// --benchmark-engine asks too.
func TestMeasuringEngineRefused(t *testing.T) {
	t.Parallel()
	home := []string{"HOME=" + t.TempDir()}
	for _, tc := range []struct {
		verb Verb
		args []string
		want string
	}{
		{Serve, []string{"--compute", "process"}, "--compute process runs every dispatch as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md): add --benchmark-engine to ask for it"},
		{Serve, []string{"--benchmark-engine"}, "--benchmark-engine goes with --compute process or replay only"},
		{Serve, []string{"--compute", "replay"}, "--compute replay runs every dispatch as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md): add --benchmark-engine to ask for it"},
		{Serve, []string{"--compute", "replay", "--benchmark-engine", "--image", "agora-worker:1"}, "not an image: drop --image"},
		{Serve, []string{"--compute", "process", "--benchmark-engine", "--image", "agora-worker:1"}, "not an image: drop --image"},
		{Serve, []string{"--compute", "ecs"}, `--compute "ecs": want docker (agora runner --compute ecs runs on ECS)`},
		{Serve, []string{"--no-runner", "--compute", "process", "--benchmark-engine"}, "--benchmark-engine, --compute configure the runner, which --no-runner leaves out"},
		{Runner, append([]string{"--compute", "process"}, nats...), "--compute process runs every dispatch as a plain, unisolated process"},
		{Runner, append([]string{"--benchmark-engine"}, nats...), "--benchmark-engine goes with --compute process or replay only"},
		{Runner, append([]string{"--compute", "replay"}, nats...), "--compute replay runs every dispatch as a plain, unisolated process"},
		{Runner, append([]string{"--compute", "replay", "--benchmark-engine", "--worker-nats", "nats://127.0.0.1:4222"}, nats...), "drop --worker-nats"},
	} {
		if _, err := parse(tc.verb, tc.args, home); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: %v; want an error saying %q", tc.verb, tc.args, err, tc.want)
		}
	}
	for _, tc := range []struct {
		verb         Verb
		args         []string
		want, replay bool
	}{
		{Serve, nil, false, false},
		{Serve, []string{"--compute", "process", "--benchmark-engine"}, true, false},
		{Serve, []string{"--compute", "replay", "--benchmark-engine"}, true, true},
		{Runner, nats, false, false},
		{Runner, append([]string{"--compute", "process", "--benchmark-engine"}, nats...), true, false},
		{Runner, append([]string{"--compute", "replay", "--benchmark-engine"}, nats...), true, true},
	} {
		cfg, err := parse(tc.verb, tc.args, home)
		if err != nil || cfg.MeasuringEngine != tc.want || cfg.MeasuringReplay != tc.replay {
			t.Errorf("%v %q: measuring engine %t, replay %t, %v; want %t, %t", tc.verb, tc.args, cfg.MeasuringEngine, cfg.MeasuringReplay, err, tc.want, tc.replay)
		}
	}
}
