package view

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestUsageText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   *schemas.Usage
		want string
	}{
		{"none", nil, ""},
		{"nothing reported", &schemas.Usage{}, ""},
		{"exec-like", &schemas.Usage{Model: "m"}, "m"},
		{"fresh round", &schemas.Usage{Model: "claude-sonnet-4-5", Turns: 2, CostUSD: 0.0123, InputTokens: 1200, OutputTokens: 345, CacheCreationInputTokens: 900},
			"claude-sonnet-4-5 · 2 turns · $0.0123 · 2100 tokens in, 345 out"},
		{"resumed round reads the cache", &schemas.Usage{Turns: 2, CostUSD: 0.0045, InputTokens: 150, OutputTokens: 345, CacheCreationInputTokens: 120, CacheReadInputTokens: 2400},
			"2 turns · $0.0045 · 2670 tokens in (2400 from cache), 345 out"},
	}
	for _, tt := range tests {
		if got := UsageText(tt.in); got != tt.want {
			t.Errorf("%s: UsageText(%+v) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// agora status TASK shows each round's session and whether it resumed the one
// before.
func TestTimelineShowsSession(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	task := &wire.Task{ID: "t-1", Owner: "alice", State: wire.StateFinished, CreatedAt: at, UpdatedAt: at,
		Rounds: []wire.Round{
			{N: 1, State: wire.StateNeedsInput, QueuedAt: at, Usage: &schemas.Usage{Turns: 2, SessionID: "5f0c-1"},
				Answer: &wire.Answer{Value: "B", By: "carol", Channel: "cli", At: at}},
			{N: 2, State: wire.StateFinished, QueuedAt: at, Usage: &schemas.Usage{Turns: 1, SessionID: "5f0c-1", Resumed: true}},
		}}
	var b strings.Builder
	UI{}.Timeline(&b, task, at)
	for _, want := range []string{"5f0c-1 — new conversation", "5f0c-1 — resumed the previous round's conversation"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}
