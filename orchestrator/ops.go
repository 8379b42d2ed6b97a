package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Answer accepts an answer to the task's open question: the first valid
// answer wins, later ones get ErrAlreadyAnswered naming who answered when.
// With req.Remember the answer also becomes a rule (rules.go): whoever
// may answer the task may make one, for that task's owner only.
func (o *Orchestrator) Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error) {
	by, channel := orDefault(req.By, "api"), orDefault(req.Channel, "api")
	t, err := o.visible(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	if req.Remember != nil {
		if err := checkRemember(t, req.Remember); err != nil {
			return nil, err
		}
	}
	return o.acceptAnswer(ctx, req.TaskID, req.Round, acceptance{value: req.Answer, by: by, via: req.Via, channel: channel, remember: req.Remember, read: t})
}

// accept stores the answer (compare-and-swap: one wins) and queues the next
// round.
func (o *Orchestrator) accept(ctx context.Context, taskID string, round int, value, by, channel string, assumed bool) (*wire.Task, error) {
	return o.acceptAnswer(ctx, taskID, round, acceptance{value: value, by: by, channel: channel, assumed: assumed})
}

// acceptance is one answer to accept.
type acceptance struct {
	value, by, via, channel string
	assumed                 bool
	// rule is the remembered rule that gave the answer.
	rule *wire.RuleRef
	// remember makes the answer a rule once it is accepted.
	remember *wire.Remember
	// read is the task as the caller read it, when it did: the
	// compare-and-swap starts from it instead of reading it again.
	read *wire.Task
}

// acceptAnswer stores the answer (compare-and-swap: one wins), makes the
// rule it asks for, and queues the next round.
func (o *Orchestrator) acceptAnswer(ctx context.Context, taskID string, round int, ac acceptance) (*wire.Task, error) {
	by, via, channel, assumed := ac.by, ac.via, ac.channel, ac.assumed
	var made *wire.Rule
	t, err := o.store.updateFrom(ctx, taskID, ac.read, func(t *wire.Task) error {
		made = nil
		r := currentRound(t)
		if r != nil && round > 0 && r.N != round {
			for i := range t.Rounds {
				if p := &t.Rounds[i]; p.N == round && p.Answer != nil {
					return answeredErr(t.ID, p)
				}
			}
			return fmt.Errorf("task %s: round %d has no open question (the current round is %d): %w", t.ID, round, r.N, wire.ErrNoQuestion)
		}
		if r != nil && r.Answer != nil && r.Question != nil {
			return answeredErr(t.ID, r)
		}
		if t.State != wire.StateNeedsInput || r == nil || r.Question == nil {
			// The previous round may have been answered already.
			for i := len(t.Rounds) - 1; i >= 0; i-- {
				if p := &t.Rounds[i]; p.Answer != nil && p.Question != nil && (round == 0 || p.N == round) {
					return answeredErr(t.ID, p)
				}
			}
			return fmt.Errorf("task %s is %s: %w", t.ID, t.State, wire.ErrNoQuestion)
		}
		canonical, err := answer.ValidateAnswer(questionOf(t, r), ac.value)
		if err != nil {
			return fmt.Errorf("task %s round %d: %w: %v", t.ID, r.N, wire.ErrInvalidAnswer, err)
		}
		now := o.now()
		wait := now.Sub(r.AskedAt)
		r.Answer = &wire.Answer{Value: canonical, By: by, Via: via, Channel: channel, At: now, WaitMS: wait.Milliseconds(), Assumed: assumed, Rule: ac.rule}
		detail := fmt.Sprintf("round %d via %s: %q", r.N, channel, clip(canonical, 200))
		if ac.remember != nil {
			rule, err := newRule(t, r, r.Answer, ac.remember, now)
			if err != nil {
				return fmt.Errorf("%w: remember: %v", wire.ErrInvalidRequest, err)
			}
			made, r.Answer.Remembered = &rule, rule.ID
			detail += fmt.Sprintf("; remembered as rule %s (%s, until %s)", rule.ID, rule.Scope, rule.ExpiresAt.Format(time.DateOnly))
		}
		o.record(t, wire.HistoryEntry{Action: wire.ActionAnswer, By: by, Via: via, Detail: detail})
		r.Decisions = append(r.Decisions, wire.Decision{StepIndex: r.Step, Step: channel, Result: "answered", Detail: "by " + by, At: now})
		r.StepDeadline = time.Time{}
		t.WaitedMS += wait.Milliseconds()
		o.nextRound(t, r.N+1, "")
		return o.checkRecord(t, "the answer")
	})
	if err != nil {
		return nil, err
	}
	o.schedule(taskID, time.Time{})
	var ruleErr error
	if made != nil {
		if ruleErr = o.storeRule(ctx, *made); ruleErr != nil {
			ruleErr = fmt.Errorf("task %s: the answer was accepted, but its rule %s was not stored: %w", taskID, made.ID, ruleErr)
			o.log.Error("store rule", "task_id", taskID, "rule", made.ID, "error", ruleErr)
		} else {
			o.log.Info("rule made", "task_id", taskID, "rule", made.ID, "by", made.By, "scope", made.Scope.String(), "expires_at", made.ExpiresAt)
		}
	}
	if prev := previousRound(t); prev != nil && prev.Question != nil && !prev.Answer.Assumed {
		if err := answer.Remember(ctx, o.memory, questionOf(t, prev), answer.Reply{Answer: prev.Answer.Value, By: prev.Answer.By}); err != nil {
			o.log.Warn("remember answer", "task_id", t.ID, "error", err)
		}
	}
	if prev := previousRound(t); assumed && prev != nil {
		// Nobody answered: say which default was taken and why, so the log
		// of an unattended run explains its outcome.
		o.log.Info("default taken", "task_id", t.ID, "round", prev.N, "answer", prev.Answer.Value,
			"why", fmt.Sprintf("nobody answered along the route %s", routeOf(t.Request)), "waited", time.Duration(prev.Answer.WaitMS)*time.Millisecond)
	} else {
		o.log.Info("answer accepted", "task_id", t.ID, "by", by, "via", via, "channel", channel, "assumed", assumed)
	}
	t, err = o.enqueue(ctx, t)
	if err != nil {
		return nil, err
	}
	return o.view(t), ruleErr
}

func answeredErr(taskID string, r *wire.Round) error {
	return fmt.Errorf("task %s round %d: %w by %s via %s at %s (answer %q)", taskID, r.N, wire.ErrAlreadyAnswered,
		r.Answer.By, r.Answer.Channel, r.Answer.At.Format(time.RFC3339), r.Answer.Value)
}

// previousRound is the round before the current one.
func previousRound(t *wire.Task) *wire.Round {
	if len(t.Rounds) < 2 {
		return nil
	}
	return &t.Rounds[len(t.Rounds)-2]
}

// nextRound appends round n (attempt 1) and queues the task.
func (o *Orchestrator) nextRound(t *wire.Task, n int, followUp string) {
	now := o.now()
	t.Rounds = append(t.Rounds, wire.Round{N: n, Attempt: 1, DispatchID: dispatchIDOf(t, n, 1), State: wire.StateQueued, QueuedAt: now, FollowUp: followUp})
	t.State, t.Outcome, t.UpdatedAt = wire.StateQueued, nil, now
}

// Cancel ends a task in any state that is not terminal: a queued round is
// removed before it starts, a running one is stopped, a waiting question is
// dropped.
func (o *Orchestrator) Cancel(ctx context.Context, taskID string) (*wire.Task, error) {
	t, err := o.owned(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if t.State.Terminal() {
		return nil, fmt.Errorf("task %s is %s already: %w", taskID, t.State, wire.ErrWrongState)
	}
	r := currentRound(t)
	if t.State == wire.StateQueued || t.State == wire.StateRunning {
		if _, err := o.cfg.Bus.Cancel(ctx, r.DispatchID); err != nil {
			return nil, fmt.Errorf("cancel task %s: %w", taskID, err)
		}
	}
	cancel := wire.HistoryEntry{Action: wire.ActionCancel, By: caller(ctx).actor()}
	t, err = o.store.update(ctx, taskID, func(t *wire.Task) error {
		if t.State == wire.StateCancelled && (t.Outcome == nil || t.Outcome.Reason == "cancelled") {
			// The dispatch's cancelled event, which this call caused, came
			// first: the cancel is still this caller's.
			if n := len(t.History); n > 0 && t.History[n-1].Action == wire.ActionCancel {
				return errNoChange
			}
			o.record(t, cancel)
			return nil
		}
		if t.State.Terminal() {
			return errNoChange
		}
		now := o.now()
		r := currentRound(t)
		if t.State == wire.StateNeedsInput {
			t.WaitedMS += now.Sub(r.AskedAt).Milliseconds()
		}
		// Named before the round is marked, or a queued or running task
		// reads "cancelled while cancelled".
		was := t.State
		if !r.State.Terminal() && r.State != wire.StateNeedsInput {
			r.State = wire.StateCancelled
		}
		t.State, t.UpdatedAt = wire.StateCancelled, now
		t.Outcome = &wire.Outcome{Reason: "cancelled", Detail: "cancelled while " + stateLabel(was)}
		cancel.Detail = "while " + stateLabel(was)
		o.record(t, cancel)
		o.settleReplay(t, now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	o.schedule(taskID, time.Time{})
	o.scheduleRetry(taskID, time.Time{})
	return o.view(t), nil
}

// Respawn runs the last round of a failed, cancelled or expired task again,
// as a new dispatch with the same inputs.
func (o *Orchestrator) Respawn(ctx context.Context, taskID string) (*wire.Task, error) {
	cur, err := o.owned(ctx, taskID)
	if err != nil {
		return nil, err
	}
	// Grants are the operator's now, not as they were at submit: a token
	// whose local: secrets were taken away cannot run them again.
	if err := o.checkLocalSecrets(ctx, cur.Request.Env); err != nil {
		return nil, err
	}
	t, err := o.store.update(ctx, taskID, func(t *wire.Task) error {
		if err := notReplay(t, "respawned"); err != nil {
			return err
		}
		switch t.State {
		case wire.StateFailed, wire.StateCancelled, wire.StateExpired:
		default:
			return fmt.Errorf("task %s is %s; respawn takes a failed, cancelled or expired task: %w", t.ID, t.State, wire.ErrWrongState)
		}
		last := currentRound(t)
		if last.State == wire.StateNeedsInput {
			// Ended while waiting: answer it instead, or run the round again.
			last.State = wire.StateCancelled
		}
		now := o.now()
		t.Rounds = append(t.Rounds, wire.Round{N: last.N, Attempt: last.Attempt + 1, DispatchID: dispatchIDOf(t, last.N, last.Attempt+1),
			State: wire.StateQueued, QueuedAt: now, FollowUp: last.FollowUp})
		t.State, t.Outcome, t.UpdatedAt = wire.StateQueued, nil, now
		o.record(t, wire.HistoryEntry{Action: wire.ActionRespawn, By: caller(ctx).actor(),
			Detail: fmt.Sprintf("round %d attempt %d", last.N, last.Attempt+1)})
		return o.checkRecord(t, "another attempt")
	})
	if err != nil {
		return nil, err
	}
	if t, err = o.enqueue(ctx, t); err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// Continue gives a finished task a follow-up message: a new round with the
// message as the answer.
func (o *Orchestrator) Continue(ctx context.Context, taskID, message, by string) (*wire.Task, error) {
	if strings.TrimSpace(message) == "" {
		return nil, fmt.Errorf("%w: the follow-up message is empty", wire.ErrInvalidRequest)
	}
	cur, err := o.owned(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if err := o.checkLocalSecrets(ctx, cur.Request.Env); err != nil {
		return nil, err
	}
	t, err := o.store.update(ctx, taskID, func(t *wire.Task) error {
		if err := notReplay(t, "continued"); err != nil {
			return err
		}
		if t.State != wire.StateFinished {
			return fmt.Errorf("task %s is %s; continue takes a finished task: %w", t.ID, t.State, wire.ErrWrongState)
		}
		if r := currentRound(t); r.N >= maxRounds(t) {
			return fmt.Errorf("task %s has used its %d rounds (limits.max_rounds): %w", t.ID, maxRounds(t), wire.ErrWrongState)
		}
		last := currentRound(t)
		now := o.now()
		last.Answer = &wire.Answer{Value: message, By: orDefault(by, "api"), Channel: "continue", At: now}
		entry := wire.HistoryEntry{Action: wire.ActionContinue, By: orDefault(by, "api"), Detail: fmt.Sprintf("round %d: %q", last.N+1, clip(message, 200))}
		if id := caller(ctx); id.Name != "" && id.Name != entry.By {
			entry.Via, last.Answer.Via = id.Name, id.Name
		}
		o.record(t, entry)
		o.nextRound(t, last.N+1, message)
		return o.checkRecord(t, "the follow-up message")
	})
	if err != nil {
		return nil, err
	}
	if t, err = o.enqueue(ctx, t); err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// Remove cancels a task that has not ended, then deletes it and its stored
// data (outputs, workspace snapshot records).
// The task's history goes with it: who removed it is logged.
func (o *Orchestrator) Remove(ctx context.Context, taskID string) error {
	t, err := o.owned(ctx, taskID)
	if err != nil {
		return err
	}
	if !t.State.Terminal() {
		if _, err := o.Cancel(ctx, taskID); err != nil && !errors.Is(err, wire.ErrWrongState) {
			return err
		}
	}
	if err := o.removeTask(ctx, t); err != nil {
		return err
	}
	o.log.Info("task removed", "task_id", taskID, "by", caller(ctx).actor(), "owner", t.Owner)
	return nil
}

// removeTask deletes task t's outputs and workspace snapshots, its
// dispatch index entries and its record, and takes it out of the task
// index; Remove and retention share it.
func (o *Orchestrator) removeTask(ctx context.Context, t *wire.Task) error {
	taskID := t.ID
	for _, r := range t.Rounds {
		if err := o.deleteOutputs(ctx, r.DispatchID); err != nil {
			return fmt.Errorf("remove task %s: %w", taskID, err)
		}
		// A round still queued or running stores its output when it
		// settles, after this: its index entry stays, marked, so its
		// terminal event (dropped, the task being gone) removes that too.
		if r.State == wire.StateQueued || r.State == wire.StateRunning {
			if _, err := o.store.index.Put(ctx, r.DispatchID, []byte(removedMarker)); err != nil {
				return fmt.Errorf("remove task %s: %w", taskID, err)
			}
			continue
		}
		if err := o.store.index.Delete(ctx, r.DispatchID); err != nil {
			return fmt.Errorf("remove task %s: %w", taskID, err)
		}
	}
	// Recorded first: a task submitted again under this id must not reuse
	// dispatch ids whose queue msg-ids, claims and events still exist.
	if err := o.store.noteRemoved(ctx, t); err != nil {
		return fmt.Errorf("remove task %s: %w", taskID, err)
	}
	if err := o.store.tasks.Delete(ctx, taskID); err != nil {
		return fmt.Errorf("remove task %s: %w", taskID, err)
	}
	if o.store.cache != nil {
		o.store.cache.remove(taskID, 0)
	}
	o.schedule(taskID, time.Time{})
	return nil
}

// removedMarker is the dispatch index value of a round whose task was
// removed while the round was queued or running.
const removedMarker = "-removed-"

// deleteOutputs deletes what a dispatch left in storage.
func (o *Orchestrator) deleteOutputs(ctx context.Context, dispatchID string) error {
	if o.cfg.Store == nil {
		return nil
	}
	for _, key := range []string{schemas.DispatchKey(dispatchID, schemas.DispatchOutput), schemas.DispatchKey(dispatchID, schemas.ExchangeWorkspace), schemas.DispatchKey(dispatchID, schemas.ExchangeAnswer)} {
		if err := o.cfg.Store.Delete(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// cleanUpRemoved deletes the outputs a removed task's last dispatch stored
// after the removal; its terminal event says it has settled. Only a
// dispatch the index marks removed is touched: an event cannot make the
// orchestrator delete another dispatch's outputs.
func (o *Orchestrator) cleanUpRemoved(ctx context.Context, dispatchID string) error {
	val, _, err := o.store.index.Get(ctx, dispatchID)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return nil
	}
	if err != nil || string(val) != removedMarker {
		return err
	}
	if err := o.deleteOutputs(ctx, dispatchID); err != nil {
		return fmt.Errorf("delete the outputs of removed dispatch %s: %w", dispatchID, err)
	}
	return o.store.index.Delete(ctx, dispatchID)
}
