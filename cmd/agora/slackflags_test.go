package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestOrchestratorSlackFlagErrors: agora orchestrator reports a Slack
// misconfiguration before it connects to anything.
func TestOrchestratorSlackFlagErrors(t *testing.T) {
	t.Parallel()
	nats := []string{"--nats", "nats://127.0.0.1:1"} // nothing listens: an error must come first
	tests := []struct {
		args   []string
		env    []string
		errOut string
	}{
		{[]string{"--slack-token", "xoxb-1"}, nil, "slack: a signing secret is required (--slack-signing-secret)"},
		{[]string{"--slack-api-url", "http://127.0.0.1:1/api/"}, nil, "--slack-… flags need a bot token"},
		{nil, []string{"AGORA_SLACK_TOKEN=xoxb-1", "AGORA_SLACK_SIGNING_SECRET=s", "AGORA_PUBLIC_URL=/relative"}, `slack: public URL "/relative"`},
		{[]string{"--slack-token", "xoxb-1", "--slack-socket-mode"}, nil, "Socket Mode needs an app-level token"},
	}
	for _, tt := range tests {
		args := append(append([]string{"orchestrator"}, nats...), tt.args...)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, append([]string{"HOME=" + t.TempDir()}, tt.env...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tt.errOut) {
			t.Errorf("agora %q (env %q) = %d, stderr %q; want 2 and %q", args, tt.env, code, stderr.String(), tt.errOut)
		}
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"orchestrator", "-h"}, nil, &stdout, &stderr)
	for _, flag := range []string{"--slack-token", "--slack-signing-secret", "--slack-socket-mode", "--slack-app-token", "--slack-api-url", "--public-url"} {
		if !strings.Contains(stdout.String(), flag+" ") {
			t.Errorf("agora orchestrator -h does not list %s", flag)
		}
	}
}
