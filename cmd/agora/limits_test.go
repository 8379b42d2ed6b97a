package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestLimitFlags: every --max-… flag is checked before anything starts,
// one line on stderr and exit code 2; each role's flags belong to it.
func TestLimitFlags(t *testing.T) {
	t.Parallel()
	nats := []string{"--nats", "nats://127.0.0.1:4222"}
	tests := []struct {
		args   []string
		code   int
		errOut string
	}{
		{[]string{"serve", "--max-memory-mb", "0"}, 2, "--max-memory-mb 0: want 6 (Docker's minimum) to 16777216"},
		{[]string{"serve", "--max-memory-mb", "17592186044416"}, 2, "--max-memory-mb 17592186044416: want 6"},
		{[]string{"serve", "--max-cpus", "0"}, 2, "--max-cpus 0: want more than 0"},
		{[]string{"serve", "--max-cpus", "NaN"}, 2, "--max-cpus NaN: want more than 0"},
		{[]string{"serve", "--max-pids", "8"}, 2, "--max-pids 8: want 16 to 4194304"},
		{[]string{"serve", "--max-timeout", "200h"}, 2, "--max-timeout 200h0m0s: want 1s to 168h"},
		{[]string{"serve", "--max-rounds", "0"}, 2, "--max-rounds 0: want 1 to 1000"},
		{[]string{"serve", "--max-wait", "9000h"}, 2, "--max-wait 9000h0m0s: want 1s to 8760h"},
		{[]string{"serve", "--max-input-kb", "0"}, 2, "--max-input-kb 0: want 1 to"},
		{[]string{"serve", "--max-partial-state-kb", "-1"}, 2, "--max-partial-state-kb -1: want 1 to"},
		{[]string{"serve", "--max-task-kb", "8"}, 2, "--max-task-kb 8: want 16 to"},
		{[]string{"serve", "--max-egress-hosts", "0"}, 2, "--max-egress-hosts 0: want 1 to 64"},
		{[]string{"serve", "--max-egress-hosts", "65"}, 2, "--max-egress-hosts 65: want 1 to 64"},
		{[]string{"serve", "--max-workspace-mb", "0"}, 2, "--max-workspace-mb 0: want 1 to 16777216"},
		{[]string{"serve", "--max-workspace-mb", "17592186044416"}, 2, "--max-workspace-mb 17592186044416: want 1 to 16777216 (16 TiB)"},
		{[]string{"serve", "--max-artifacts", "0"}, 2, "--max-artifacts 0: want 1 to 1000"},
		{[]string{"serve", "--max-artifacts", "1001"}, 2, "--max-artifacts 1001: want 1 to 1000"},
		{[]string{"serve", "--max-artifacts-mb", "0"}, 2, "--max-artifacts-mb 0: want 1 to 16777216"},
		{append([]string{"orchestrator", "--max-artifacts", "5"}, nats...), 2, "flag provided but not defined: -max-artifacts"},
		{[]string{"serve", "--no-runner", "--max-workspace-mb", "5"}, 2, "--max-workspace-mb configure the runner, which --no-runner leaves out"},
		{append([]string{"serve", "--runner-only", "--max-rounds", "5"}, nats...), 2, "--max-rounds configure the orchestrator, which --runner-only leaves out"},
		{append([]string{"orchestrator", "--max-memory-mb", "1"}, nats...), 2, "--max-memory-mb 1: want 6"},
		{append([]string{"orchestrator", "--max-workspace-mb", "5"}, nats...), 2, "flag provided but not defined: -max-workspace-mb"},
		{append([]string{"runner", "--max-rounds", "5"}, nats...), 2, "flag provided but not defined: -max-rounds"},
		{append([]string{"runner", "--max-timeout", "0s"}, nats...), 2, "--max-timeout 0s: want 1s to 168h"},
		{append([]string{"runner", "--memory-mb", "4096", "--max-memory-mb", "1024"}, nats...), 2, "--memory-mb 4096 is over --max-memory-mb 1024"},
		{append([]string{"runner", "--pids", "5000"}, nats...), 2, "--pids 5000 is over --max-pids 4096"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, []string{"HOME=" + t.TempDir()}, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.errOut) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("agora %q = %d, stderr %q; want %d and one line with %q", tt.args, code, stderr.String(), tt.code, tt.errOut)
		}
	}
	for cmd, want := range map[string][]string{
		"serve":        {"-max-memory-mb", "-max-cpus", "-max-pids", "-max-timeout", "-max-rounds", "-max-wait", "-max-input-kb", "-max-partial-state-kb", "-max-task-kb", "-max-egress-hosts", "-max-workspace-mb", "-max-artifacts", "-max-artifacts-mb"},
		"orchestrator": {"-max-memory-mb", "-max-cpus", "-max-pids", "-max-timeout", "-max-rounds", "-max-wait", "-max-input-kb", "-max-partial-state-kb", "-max-task-kb", "-max-egress-hosts"},
		"runner":       {"-max-memory-mb", "-max-cpus", "-max-pids", "-max-timeout", "-max-workspace-mb", "-max-artifacts", "-max-artifacts-mb"},
	} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), []string{cmd, "-h"}, []string{"HOME=" + t.TempDir()}, &stdout, &stderr)
		for _, flag := range want {
			if !strings.Contains(stdout.String(), flag+" ") {
				t.Errorf("agora %s -h does not list %s:\n%s", cmd, flag, stdout.String())
			}
		}
	}
}
