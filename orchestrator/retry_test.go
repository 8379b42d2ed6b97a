package orchestrator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// crashFirst kills its worker on the round's first attempt (dispatch id
// <task>-r1; a retry's is <task>-r1-2), so the runner settles that
// dispatch as worker-lost; the retry finishes.
const crashFirst = `case "$AGORA_DISPATCH_ID" in
*-r1) echo about to crash; kill -9 $PPID; sleep 30 ;;
esac
echo "finished on $AGORA_DISPATCH_ID"`

// failFirst exits 3 (provider-failed) on the round's first attempt.
const failFirst = `case "$AGORA_DISPATCH_ID" in
*-r1) echo failing; exit 3 ;;
esac
echo "finished on $AGORA_DISPATCH_ID"`

func retryOn(attempts, initial int, reasons ...schemas.FailureReason) *wire.RetryPolicy {
	return &wire.RetryPolicy{Attempts: attempts, Backoff: &wire.Backoff{InitialSeconds: initial}, On: reasons}
}

// historyOf is the task's history entries of action.
func historyOf(t *wire.Task, action string) []wire.HistoryEntry {
	var out []wire.HistoryEntry
	for _, h := range t.History {
		if h.Action == action {
			out = append(out, h)
		}
	}
	return out
}

// TestRetryPolicy: a registered sub-agent whose first attempt loses its
// worker finishes on its own by the retry policy of its definition, after
// the backoff, the retry in its history; a failure the policy does not
// name fails at once; a round that fails every attempt fails when they
// are used up, and its outcome says so.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	var reg *registry.Registry
	s := newStack(t, func(c *Config) {
		r, err := registry.Open(context.Background(), c.Bus, c.Store)
		if err != nil {
			t.Fatal(err)
		}
		c.Registry, reg = r, r
	})
	ctx := context.Background()

	t.Run("worker-lost, then finished", func(t *testing.T) {
		t.Parallel()
		if _, err := reg.RegisterSubagent(ctx, wire.Subagent{Name: "flaky", Runtime: "exec",
			Command: wire.Command{"/bin/sh", "-c", crashFirst}, Retry: retryOn(3, 1, schemas.ReasonWorkerLost)}); err != nil {
			t.Fatal(err)
		}
		task := s.submit(wire.SubmitRequest{SubagentRef: "flaky"})
		if p := task.Request.Retry; p == nil || p.Attempts != 3 {
			t.Fatalf("the task's retry policy = %+v; want the definition's", p)
		}
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		if task.State != wire.StateFinished || len(task.Rounds) != 2 {
			t.Fatalf("task %s with %d rounds (%+v); want finished on the second attempt", task.State, len(task.Rounds), task.Outcome)
		}
		first, second := task.Rounds[0], task.Rounds[1]
		if first.Failure == nil || first.Failure.Reason != schemas.ReasonWorkerLost || first.Attempt != 1 {
			t.Errorf("attempt 1 = %s %+v; want failed worker-lost", first.State, first.Failure)
		}
		if second.N != 1 || second.Attempt != 2 || second.State != wire.StateFinished || second.RetryAt.IsZero() || second.StartedAt.Before(second.RetryAt) {
			t.Errorf("attempt 2 = round %d attempt %d %s, retry at %s, started %s; want round 1 attempt 2 finished, started after its backoff",
				second.N, second.Attempt, second.State, second.RetryAt, second.StartedAt)
		}
		if d := second.RetryAt.Sub(first.EndedAt); d < 900e6 {
			t.Errorf("the retry was due %s after the failure; want the backoff of 1s", d)
		}
		retries := historyOf(task, wire.ActionRetry)
		if len(retries) != 1 || retries[0].By != "retry policy" || !strings.HasPrefix(retries[0].Detail, "round 1 attempt 2 of 3 after worker-lost: ") {
			t.Errorf("retry history = %+v; want one entry 'round 1 attempt 2 of 3 after worker-lost: …'", retries)
		}
		if out := s.output(second.DispatchID); !strings.Contains(out, "finished on "+second.DispatchID) {
			t.Errorf("attempt 2 output = %q", out)
		}
	})

	t.Run("a reason the policy does not name", func(t *testing.T) {
		t.Parallel()
		task := s.submit(wire.SubmitRequest{Subagent: script("fails", failFirst),
			Retry: retryOn(3, 0, schemas.ReasonWorkerLost, schemas.ReasonTimeout)})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		if task.State != wire.StateFailed || len(task.Rounds) != 1 || task.Outcome.Reason != string(schemas.ReasonProviderFailed) ||
			!strings.HasPrefix(task.Outcome.Detail, "round 1 failed: ") || len(historyOf(task, wire.ActionRetry)) != 0 {
			t.Errorf("task %s, %d rounds, outcome %+v; want failed provider-failed at once, no retry", task.State, len(task.Rounds), task.Outcome)
		}
	})

	t.Run("cancelled while the retry waits", func(t *testing.T) {
		t.Parallel()
		task := s.submit(wire.SubmitRequest{Subagent: script("flaky", failFirst), Retry: retryOn(3, 2, schemas.ReasonProviderFailed)})
		for len(task.Rounds) < 2 && !task.State.Terminal() {
			task = s.waitState(task.ID, wire.StateQueued, wire.StateFailed, wire.StateFinished)
		}
		retry := currentRound(task)
		if _, err := s.orch.Cancel(ctx, task.ID); err != nil {
			t.Fatalf("cancel while the retry waits: %v", err)
		}
		// Past the retry's due time and a few router ticks: nothing ran.
		testutil.Eventually(t, time.Minute, "the retry's due time to pass", func() bool { return time.Now().After(retry.RetryAt.Add(time.Second)) })
		task = s.waitState(task.ID, wire.StateCancelled)
		if evs, _ := s.bus.Events(ctx, retry.DispatchID); slices.ContainsFunc(evs, func(ev schemas.Event) bool { return ev.Kind == schemas.KindStarted }) {
			t.Errorf("the cancelled retry %s started: %v", retry.DispatchID, evs)
		}
		if r := currentRound(task); r.Enqueued || task.Outcome.Reason != "cancelled" {
			t.Errorf("after cancel: round enqueued %t, outcome %+v; want not enqueued, cancelled", r.Enqueued, task.Outcome)
		}
	})

	t.Run("attempts used up", func(t *testing.T) {
		t.Parallel()
		task := s.submit(wire.SubmitRequest{Subagent: script("always-fails", "echo no; exit 3"), Retry: retryOn(2, 0, schemas.ReasonProviderFailed)})
		task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
		want := "round 1 failed on attempt 2 of 2 (the retry policy's attempts are used up): "
		if task.State != wire.StateFailed || len(task.Rounds) != 2 || task.Outcome.Reason != string(schemas.ReasonProviderFailed) ||
			!strings.HasPrefix(task.Outcome.Detail, want) {
			t.Errorf("task %s, %d rounds, outcome %+v; want failed after 2 attempts, %q", task.State, len(task.Rounds), task.Outcome, want)
		}
		if n := len(historyOf(task, wire.ActionRetry)); n != 1 {
			t.Errorf("%d retries in the history; want 1", n)
		}
	})
}

// TestRetryAfterRestart: a retry waiting for its backoff when the
// orchestrator stops is done by the next one.
func TestRetryAfterRestart(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	task := s.submit(wire.SubmitRequest{Subagent: script("flaky", failFirst), Retry: retryOn(2, 5, schemas.ReasonProviderFailed)})
	for len(task.Rounds) < 2 && !task.State.Terminal() {
		task = s.waitState(task.ID, wire.StateQueued, wire.StateFailed, wire.StateFinished)
	}
	if want := "round 1 attempt 2 of 2 is retried at "; !strings.HasPrefix(task.Attention.Summary, want) ||
		!strings.HasSuffix(task.Attention.Summary, " (after provider-failed); no action needed") {
		t.Errorf("attention while the retry waits = %q; want %q…", task.Attention.Summary, want)
	}
	if err := s.orch.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := s.orch.store.get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := currentRound(stored); stored.State != wire.StateQueued || r.Attempt != 2 || r.Enqueued {
		t.Fatalf("before the restart: %s, attempt %d, enqueued %t; want attempt 2 queued, waiting for its 5s backoff", stored.State, r.Attempt, r.Enqueued)
	}
	s.orch = s.startOrchestrator()
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished || len(task.Rounds) != 2 || task.Rounds[1].StartedAt.Before(task.Rounds[1].RetryAt) {
		t.Fatalf("after the restart: %s with %d rounds %+v; want the retry finished after its backoff", task.State, len(task.Rounds), task.Outcome)
	}
}

// TestRetryPolicyRefused: a policy the server cannot honour is refused at
// submit, naming what is wrong.
func TestRetryPolicyRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, func(c *Config) { c.Max.RetryAttempts = 4 })
	for _, tt := range []struct {
		policy *wire.RetryPolicy
		want   string
	}{
		{retryOn(5, 1, schemas.ReasonWorkerLost), "retry.attempts 5 is over this server's maximum 4 (--max-retry-attempts)"},
		{retryOn(0, 1, schemas.ReasonWorkerLost), "retry.attempts 0: want at least 1"},
		{retryOn(2, 1), "retry.on is empty"},
		{retryOn(2, 1, schemas.ReasonIntegrityFailed), `retry.on: "integrity-failed" is not a reason a retry can help; want worker-lost, provider-failed, timeout`},
		{&wire.RetryPolicy{Attempts: 2, On: []schemas.FailureReason{schemas.ReasonTimeout}, Backoff: &wire.Backoff{Multiplier: 0.5}}, "retry.backoff.multiplier 0.5: want 1 to 10"},
	} {
		_, err := s.orch.Submit(context.Background(), wire.SubmitRequest{Subagent: script("x", "true"), Retry: tt.policy})
		if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Submit with retry %+v = %v; want ErrInvalidRequest with %q", tt.policy, err, tt.want)
		}
	}
}
