package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Retries: a round that failed for a reason its task's retry policy names
// (wire.RetryPolicy), before its attempts are used up, gets another
// dispatch with the same inputs — the respawn machinery, by the
// orchestrator — after the policy's backoff. The new attempt is in the
// task's record with its RetryAt before anything waits for it, so a
// restarted orchestrator finds it (recover) and enqueues it when it is
// due; until then the task is queued and the round not enqueued.

// retryBy is who the history names for a retry.
const retryBy = "retry policy"

// retry queues attempt r.Attempt+1 of the failed round r, due after the
// policy's backoff, and records it in the history and the failed round's
// timeline. It reports whether it did: false when the record would grow
// over its maximum (the task then fails as without a policy).
func (o *Orchestrator) retry(t *wire.Task, r *wire.Round, f *schemas.Failure, now time.Time) bool {
	p := t.Request.Retry
	next := r.Attempt + 1
	delay := p.Delay(next)
	at := now.Add(delay)
	detail := fmt.Sprintf("round %d attempt %d of %d after %s: %s", r.N, next, p.Attempts, f.Reason, clip(f.Detail, 200))
	when := "now"
	if delay > 0 {
		when = fmt.Sprintf("at %s (in %s)", at.Format("15:04:05 UTC"), delay)
	}
	saved := *t
	saved.Rounds = append([]wire.Round(nil), t.Rounds...)
	saved.History = append([]wire.HistoryEntry(nil), t.History...)
	t.Rounds = append(t.Rounds, wire.Round{N: r.N, Attempt: next, DispatchID: dispatchIDOf(t, r.N, next),
		State: wire.StateQueued, QueuedAt: now, FollowUp: r.FollowUp, RetryAt: at})
	t.State, t.Outcome, t.UpdatedAt = wire.StateQueued, nil, now
	o.record(t, wire.HistoryEntry{Action: wire.ActionRetry, By: retryBy, Detail: detail + "; dispatched " + when})
	if err := o.checkRecord(t, "another attempt"); err != nil {
		o.log.Warn("no retry: the task's record would be too large", "task_id", t.ID, "error", err)
		*t = saved
		return false
	}
	return true
}

// exhausted words the outcome of a round whose last attempt failed for a
// reason the policy retries: "round 1 failed on attempt 3 of 3 (the retry
// policy's attempts are used up): …".
func exhausted(t *wire.Task, r *wire.Round, f *schemas.Failure) (string, bool) {
	p := t.Request.Retry
	if p == nil || p.Attempts < 2 || !p.Retries(f.Reason, 0) {
		return "", false
	}
	return fmt.Sprintf("round %d failed on attempt %d of %d (the retry policy's attempts are used up): %s", r.N, r.Attempt, p.Attempts, f.Detail), true
}

// scheduleRetry remembers when taskID's queued retry is due; the zero
// time forgets it.
func (o *Orchestrator) scheduleRetry(taskID string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at.IsZero() {
		delete(o.retries, taskID)
		return
	}
	o.retries[taskID] = at
}

// dueRetries takes the retries due at now off the schedule.
func (o *Orchestrator) dueRetries(now time.Time) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var due []string
	for id, at := range o.retries {
		if !now.Before(at) {
			due = append(due, id)
			delete(o.retries, id)
		}
	}
	return due
}

// dispatchRetry enqueues taskID's retry when it is still queued, not
// enqueued and due; an enqueue that fails is left to the outbox sweep.
func (o *Orchestrator) dispatchRetry(ctx context.Context, taskID string) {
	t, err := o.store.get(ctx, taskID)
	if errors.Is(err, wire.ErrNotFound) {
		return
	}
	if err != nil {
		o.log.Warn("retry: read the task; the outbox sweep tries again", "task_id", taskID, "error", err)
		return
	}
	r := currentRound(t)
	if t.State != wire.StateQueued || r == nil || r.Enqueued || r.RetryAt.IsZero() {
		return // cancelled, removed or enqueued meanwhile
	}
	if now := o.now(); now.Before(r.RetryAt) {
		o.scheduleRetry(taskID, r.RetryAt)
		return
	}
	o.log.Info("retrying a failed round", "task_id", taskID, "dispatch_id", r.DispatchID, "attempt", r.Attempt)
	if _, err := o.enqueue(ctx, t); err != nil && ctx.Err() == nil {
		o.log.Warn("retry: enqueue; the outbox sweep tries again", "task_id", taskID, "error", err)
	}
}

// waitingRetry reports whether r is an attempt the retry policy queued
// whose backoff has not passed at now.
func waitingRetry(r *wire.Round, now time.Time) bool {
	return r != nil && !r.Enqueued && r.RetryAt.After(now)
}
