package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestMeasuringEngineRefused: serve and runner run dispatches as plain
// processes (--compute process) only when --benchmark-engine asks, and say
// so in one line with exit code 2 otherwise.
func TestMeasuringEngineRefused(t *testing.T) {
	t.Parallel()
	nats := []string{"--nats", "nats://127.0.0.1:4222"}
	for _, tc := range []struct {
		args   []string
		errOut string
	}{
		{[]string{"serve", "--compute", "process"}, "agora serve: --compute process runs every dispatch as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md): add --benchmark-engine to ask for it\n"},
		{[]string{"serve", "--benchmark-engine"}, "--benchmark-engine goes with --compute process only"},
		{[]string{"serve", "--compute", "process", "--benchmark-engine", "--image", "agora-worker:1"}, "not an image: drop --image"},
		{[]string{"serve", "--compute", "ecs"}, `--compute "ecs": want docker (agora runner --compute ecs runs on ECS)`},
		{[]string{"serve", "--no-runner", "--compute", "process", "--benchmark-engine"}, "--benchmark-engine, --compute configure the runner"},
		{append([]string{"runner", "--compute", "process"}, nats...), "agora runner: --compute process runs every dispatch as a plain, unisolated process"},
		{append([]string{"runner", "--benchmark-engine"}, nats...), "--benchmark-engine goes with --compute process only"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, []string{"HOME=" + t.TempDir()}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.errOut) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("agora %q = %d, stderr %q; want 2 and one line saying %q", tc.args, code, stderr.String(), tc.errOut)
		}
	}
	f, err := parseServeFlags([]string{"--compute", "process", "--benchmark-engine"}, []string{"HOME=" + t.TempDir()}, io.Discard)
	if err != nil || !f.cfg.MeasuringEngine {
		t.Errorf("serve --compute process --benchmark-engine: measuring engine %t, %v; want it on", f.cfg.MeasuringEngine, err)
	}
	if f, err := parseServeFlags(nil, []string{"HOME=" + t.TempDir()}, io.Discard); err != nil || f.cfg.MeasuringEngine {
		t.Errorf("serve by default: measuring engine %t, %v; want it off", f.cfg.MeasuringEngine, err)
	}
	r, err := parseRunnerFlags(append([]string{"--compute", "process", "--benchmark-engine"}, nats...), []string{"HOME=" + t.TempDir()}, io.Discard)
	if err != nil || r.compute != computeProcess {
		t.Errorf("runner --compute process --benchmark-engine = %q, %v", r.compute, err)
	}
}
