package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// apply folds one lifecycle event into its task. It returns nil once the
// change is stored (or there is nothing to change), so the event is
// acknowledged only then.
func (o *Orchestrator) apply(ctx context.Context, ev schemas.Event) error {
	if ev.Kind == schemas.KindAccepted {
		return nil // ours
	}
	taskID, err := o.taskOf(ctx, ev)
	if errors.Is(err, wire.ErrNotFound) {
		o.dropUnknown(string(ev.Kind), ev.DispatchID, ev.TaskID)
		return nil
	}
	if errors.Is(err, errRemoved) {
		return o.dropRemoved(ctx, ev)
	}
	if err != nil {
		return err
	}
	var asked, retried, replayed bool
	change := func(t *wire.Task) error {
		idx := -1
		for i := range t.Rounds {
			if t.Rounds[i].DispatchID == ev.DispatchID {
				idx = i
			}
		}
		if idx < 0 {
			return errNoChange
		}
		r := &t.Rounds[idx]
		current := idx == len(t.Rounds)-1
		was := t.State
		if r.State.Terminal() || r.State == wire.StateNeedsInput {
			return errNoChange // replayed: already applied
		}
		now := o.now()
		t.UpdatedAt = now
		switch ev.Kind {
		case schemas.KindStarted:
			if r.State == wire.StateRunning {
				return errNoChange
			}
			r.State, r.StartedAt = wire.StateRunning, ev.Time
			if current && t.State == wire.StateQueued {
				t.State = wire.StateRunning
			}
			return nil
		case schemas.KindFinished:
			r.State = wire.StateFinished
			o.recordResult(r, ev)
		case schemas.KindFailed:
			r.State, r.Failure = wire.StateFailed, ev.Failure
		case schemas.KindCancelled:
			r.State = wire.StateCancelled
		case schemas.KindNeedsInput:
			r.State, r.Question, r.AskedAt = wire.StateNeedsInput, ev.NeedsInput, now
		default:
			return errNoChange
		}
		r.EndedAt, r.ExitCode, r.Usage = ev.Time, ev.ExitCode, ev.Usage
		overLimit := o.questionOverLimits(t, r) // cuts an over-limit question down (limits.go)
		if !current || t.State.Terminal() {
			return nil // a stale attempt, or the task ended already (cancel)
		}
		// The task hands back what its last round did: nothing, unless
		// that round finished.
		t.Result, t.ResultRef, t.Artifacts = nil, nil, nil
		if ev.Kind == schemas.KindFinished {
			if out := o.setTaskResult(ctx, t, r); out != nil {
				t.State, t.Outcome = wire.StateFailed, out
				return nil
			}
		}
		switch ev.Kind {
		case schemas.KindFinished:
			t.State, t.Outcome = wire.StateFinished, &wire.Outcome{Reason: "finished", Detail: fmt.Sprintf("round %d finished", r.N)}
		case schemas.KindFailed:
			if t.Request.Retry.Retries(ev.Failure.Reason, r.Attempt) && o.retry(t, r, ev.Failure, now) {
				retried = true
				return nil
			}
			t.State = wire.StateFailed
			t.Outcome = &wire.Outcome{Reason: string(ev.Failure.Reason), Detail: fmt.Sprintf("round %d failed: %s", r.N, ev.Failure.Detail)}
			if detail, ok := exhausted(t, r, ev.Failure); ok {
				t.Outcome.Detail = detail
			}
		case schemas.KindCancelled:
			// Worded as Cancel words it: the event and the call race.
			t.State, t.Outcome = wire.StateCancelled, &wire.Outcome{Reason: "cancelled", Detail: "cancelled while " + stateLabel(was)}
		case schemas.KindNeedsInput:
			if overLimit != nil {
				t.State, t.Outcome = wire.StateFailed, overLimit
				return nil
			}
			if max := maxRounds(t); r.N >= max {
				t.State = wire.StateFailed
				t.Outcome = &wire.Outcome{Reason: "max_rounds", Detail: fmt.Sprintf("round %d asked %q but the task allows %d rounds (limits.max_rounds)", r.N, ev.NeedsInput.Question, max)}
				return nil
			}
			t.State = wire.StateNeedsInput
			r.Step = 0
			r.StepDeadline = now.Add(o.stepTimeout(t, 0))
			asked = true
		}
		return nil
	}
	t, err := o.store.update(ctx, taskID, func(t *wire.Task) error {
		asked, retried, replayed = false, false, false
		err := change(t)
		if err == nil && t.Replay != nil {
			// A replay is answered from its recording, never routed
			// (replay.go); its verdict is set when it ends.
			now := o.now()
			if r := currentRound(t); asked && r != nil && r.DispatchID == ev.DispatchID {
				asked = false
				replayed = o.replayQuestion(t, r, now)
			} else if r != nil && r.DispatchID == ev.DispatchID && ev.Kind == schemas.KindFinished && t.State == wire.StateFinished {
				replayed = o.replayFinished(t, r, now)
			}
			o.settleReplay(t, now)
		}
		return err
	})
	if errors.Is(err, wire.ErrNotFound) {
		// Removed while its dispatch ran, never existed, or forged: no
		// retry can make it exist.
		return o.dropRemoved(ctx, ev)
	}
	if err != nil {
		return fmt.Errorf("apply %s of %s to task %s: %w", ev.Kind, ev.DispatchID, taskID, err)
	}
	if asked {
		o.schedule(t.ID, wakeAt(t, currentRound(t)))
		o.poke(t.ID)
	}
	if replayed {
		if _, err := o.enqueue(ctx, t); err != nil {
			// Stored: the outbox sweep enqueues it.
			o.log.Warn("replay: enqueue; the outbox sweep tries again", "task_id", t.ID, "error", err)
		}
	}
	if retried {
		if r := currentRound(t); waitingRetry(r, o.now()) {
			o.scheduleRetry(t.ID, r.RetryAt)
		} else if _, err := o.enqueue(ctx, t); err != nil {
			// Stored: the outbox sweep enqueues it.
			o.log.Warn("retry: enqueue; the outbox sweep tries again", "task_id", t.ID, "error", err)
		}
	}
	return nil
}

// taskOf finds the task a dispatch belongs to.
func (o *Orchestrator) taskOf(ctx context.Context, ev schemas.Event) (string, error) {
	if ev.TaskID != "" {
		if wire.CheckTaskID(ev.TaskID) != nil {
			return "", wire.ErrNotFound // no task can have this id
		}
		return ev.TaskID, nil
	}
	if !kvKeyPattern.MatchString(ev.DispatchID) {
		return "", wire.ErrNotFound // no dispatch of ours has this id
	}
	id, _, err := o.store.index.Get(ctx, ev.DispatchID)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return "", wire.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	if string(id) == removedMarker {
		return "", errRemoved
	}
	return strings.TrimSpace(string(id)), nil
}

// errRemoved: the event's dispatch belonged to a task that was removed.
var errRemoved = errors.New("the dispatch's task was removed")

// kvKeyPattern is what a JetStream KV key may hold.
var kvKeyPattern = regexp.MustCompile(`^[-/_=.A-Za-z0-9]+$`)

// dropRemoved drops an event whose task does not exist; the terminal event
// of a dispatch whose task was removed while it ran also clears what it
// stored after the removal.
func (o *Orchestrator) dropRemoved(ctx context.Context, ev schemas.Event) error {
	o.dropUnknown(string(ev.Kind), ev.DispatchID, ev.TaskID)
	if !ev.Kind.Terminal() || !kvKeyPattern.MatchString(ev.DispatchID) {
		return nil
	}
	return o.cleanUpRemoved(ctx, ev.DispatchID)
}

func maxRounds(t *wire.Task) int {
	if t.Request.Limits.MaxRounds > 0 {
		return t.Request.Limits.MaxRounds
	}
	return DefaultMaxRounds
}
