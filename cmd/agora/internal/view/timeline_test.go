package view

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestTimelineShowsWhoActed: the owner, an answer given through an
// answering service, and the cancel and respawn of the task's history.
func TestTimelineShowsWhoActed(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	task := &wire.Task{ID: "t-1", Owner: "alice", State: wire.StateQueued, CreatedAt: at, UpdatedAt: at,
		Rounds: []wire.Round{{N: 1, State: wire.StateNeedsInput, QueuedAt: at,
			Answer: &wire.Answer{Value: "B", By: "carol", Via: "slack", Channel: "slack", At: at}}},
		History: []wire.HistoryEntry{
			{Action: wire.ActionSubmit, By: "alice", At: at},
			{Action: wire.ActionAnswer, By: "carol", Via: "slack", At: at},
			{Action: wire.ActionCancel, By: "alice", At: at, Detail: "while queued"},
			{Action: wire.ActionRespawn, By: "root", At: at, Detail: "round 2 attempt 2"},
		}}
	var b strings.Builder
	UI{}.Timeline(&b, task, at)
	for _, want := range []string{"owner alice", "B — by carol (through slack) via slack", "cancel by alice (while queued)", "respawn by root (round 2 attempt 2)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTimelineShowsRetries: a retry of the retry policy is a line of the
// timeline, and an attempt waiting for its backoff says when it runs.
func TestTimelineShowsRetries(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	task := &wire.Task{ID: "t-1", State: wire.StateQueued, CreatedAt: at, UpdatedAt: at,
		Request: wire.SubmitRequest{Retry: &wire.RetryPolicy{Attempts: 3, On: []schemas.FailureReason{schemas.ReasonWorkerLost}}},
		Rounds: []wire.Round{
			{N: 1, Attempt: 1, State: wire.StateFailed, QueuedAt: at, StartedAt: at, EndedAt: at.Add(time.Second),
				Failure: &schemas.Failure{Reason: schemas.ReasonWorkerLost, Detail: "container exited with code 137"}},
			{N: 1, Attempt: 2, State: wire.StateQueued, QueuedAt: at.Add(time.Second), RetryAt: at.Add(11 * time.Second)}},
		History: []wire.HistoryEntry{
			{Action: wire.ActionSubmit, By: "alice", At: at},
			{Action: wire.ActionRetry, By: "retry policy", At: at.Add(time.Second),
				Detail: "round 1 attempt 2 of 3 after worker-lost: container exited with code 137; dispatched at 10:00:11 UTC (in 10s)"},
		}}
	var b strings.Builder
	UI{}.Timeline(&b, task, at.Add(time.Second))
	for _, want := range []string{"failed    worker-lost: container exited with code 137", "round 1 (attempt 2)  queued  retried at ",
		"retry by retry policy (round 1 attempt 2 of 3 after worker-lost: container exited with code 137; dispatched at 10:00:11 UTC (in 10s))"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}
