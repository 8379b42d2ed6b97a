package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// TestTimelineShowsWhoActed: the owner, an answer given through an
// answering service, and the cancel and respawn of the task's history.
func TestTimelineShowsWhoActed(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	task := &orchestrator.Task{ID: "t-1", Owner: "alice", State: orchestrator.StateQueued, CreatedAt: at, UpdatedAt: at,
		Rounds: []orchestrator.Round{{N: 1, State: orchestrator.StateNeedsInput, QueuedAt: at,
			Answer: &orchestrator.Answer{Value: "B", By: "carol", Via: "slack", Channel: "slack", At: at}}},
		History: []wire.HistoryEntry{
			{Action: wire.ActionSubmit, By: "alice", At: at},
			{Action: wire.ActionAnswer, By: "carol", Via: "slack", At: at},
			{Action: wire.ActionCancel, By: "alice", At: at, Detail: "while queued"},
			{Action: wire.ActionRespawn, By: "root", At: at, Detail: "round 2 attempt 2"},
		}}
	var b strings.Builder
	ui{}.writeTimeline(&b, task, at)
	for _, want := range []string{"owner alice", "B — by carol (through slack) via slack", "cancel by alice (while queued)", "respawn by root (round 2 attempt 2)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}
