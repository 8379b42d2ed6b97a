package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// schedule remembers when taskID's current route step times out; the zero
// time forgets it.
func (o *Orchestrator) schedule(taskID string, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at.IsZero() {
		delete(o.deadlines, taskID)
		return
	}
	o.deadlines[taskID] = at
}

// poke asks the router to look at a task now. The router reads the task
// afresh: the bus reads a replicated bucket through its stream's leader,
// so it sees the write that poked it (bus.KV.Get).
func (o *Orchestrator) poke(taskID string) {
	select {
	case o.kick <- taskID:
	default: // the ticker finds it
	}
}

// routeKicks is one of the router workers: it advances the questions
// poked (just asked, or answered elsewhere).
func (o *Orchestrator) routeKicks(ctx context.Context) {
	defer o.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-o.kick:
			o.advanceAlone(ctx, id)
		}
	}
}

// advanceAlone advances a task unless another router worker is at it;
// then that worker advances it once more when done, so a poke is never
// lost and a task is never routed twice at once (an answerer asked twice).
func (o *Orchestrator) advanceAlone(ctx context.Context, taskID string) {
	o.mu.Lock()
	if o.routing[taskID] {
		o.rerun[taskID] = true
		o.mu.Unlock()
		return
	}
	o.routing[taskID] = true
	o.mu.Unlock()
	for {
		o.advance(ctx, taskID)
		o.mu.Lock()
		if !o.rerun[taskID] {
			delete(o.routing, taskID)
			o.mu.Unlock()
			return
		}
		delete(o.rerun, taskID)
		o.mu.Unlock()
	}
}

// route advances questions whose step's deadline passed, and queues due
// retries; the router workers (routeKicks) take the questions poked.
// Deadlines live in the task records, so a restarted orchestrator resumes
// them (recover).
func (o *Orchestrator) route(ctx context.Context) {
	defer o.wg.Done()
	tick := time.NewTicker(routerTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			now := o.now()
			var due []string
			o.mu.Lock()
			for id, at := range o.deadlines {
				if !now.Before(at) {
					due = append(due, id)
				}
			}
			o.mu.Unlock()
			for _, id := range due {
				o.advanceAlone(ctx, id)
			}
			for _, id := range o.dueRetries(now) {
				o.dispatchRetry(ctx, id)
			}
		}
	}
}

// advance moves a task's open question along its route until an answer is
// accepted, a step waits (pending), or the route ends.
func (o *Orchestrator) advance(ctx context.Context, taskID string) {
	for i := 0; i < 32; i++ { // each pass settles one step
		again, err := o.step(ctx, taskID)
		if err != nil {
			o.log.Warn("route question", "task_id", taskID, "error", err)
			return
		}
		if !again {
			return
		}
	}
}

// step does one thing for the current route step and reports whether the
// next step should be looked at at once.
func (o *Orchestrator) step(ctx context.Context, taskID string) (bool, error) {
	t, err := o.store.get(ctx, taskID)
	if errors.Is(err, wire.ErrNotFound) {
		o.schedule(taskID, time.Time{})
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r := currentRound(t)
	if t.State != wire.StateNeedsInput || r == nil || r.Answer != nil {
		o.schedule(taskID, time.Time{})
		return false, nil
	}
	steps, err := wire.ParseRoute(routeOf(t.Request))
	if err != nil {
		return false, err
	}
	now := o.now()
	// Limits first: the total wait across rounds.
	if max := maxWait(t); time.Duration(t.WaitedMS)*time.Millisecond+now.Sub(r.AskedAt) > max {
		return false, o.expire(ctx, t, "max_wait", fmt.Sprintf("waited longer than %s in total for answers (limits.max_wait_seconds)", max))
	}
	if r.Step >= len(steps) {
		if d := r.Question.Default; d != nil {
			_, err := o.accept(ctx, t.ID, r.N, *d, "nobody (the route ended)", "default", true)
			return false, ignoreAnswered(err)
		}
		detail := fmt.Sprintf("nobody answered %q along the route %s, and it has no default", r.Question.Question, routeOf(t.Request))
		if failed := stepFailures(r); failed != "" {
			detail += " (" + failed + ")"
		}
		return false, o.expire(ctx, t, "expired", detail)
	}
	// A remembered rule answers before the route is asked: once, when
	// the question is new (no step has done anything with it yet).
	if r.Step == 0 && len(r.Decisions) == 0 && o.answerByRule(ctx, t, r) {
		return false, nil
	}
	s := steps[r.Step]
	if !now.Before(r.StepDeadline) {
		return true, o.nextStep(ctx, t, r.Step, "timed out", fmt.Sprintf("no answer within %s", s.Timeout))
	}
	asked := false
	for _, d := range r.Decisions {
		if d.StepIndex == r.Step {
			asked = true
		}
	}
	o.schedule(taskID, wakeAt(t, r))
	if asked {
		return false, nil // pending: wait for an answer or the deadline
	}
	a, err := o.cfg.Answerers.Resolve(s.Answerer)
	if err != nil {
		return true, o.nextStep(ctx, t, r.Step, "error", err.Error())
	}
	actx, cancel := context.WithDeadline(ctx, r.StepDeadline)
	reply, err := a.Ask(actx, questionOf(t, r))
	cancel()
	switch {
	case err == nil:
		_, aerr := o.accept(ctx, t.ID, r.N, reply.Answer, reply.By, s.Answerer, false)
		if errors.Is(aerr, wire.ErrInvalidAnswer) {
			return true, o.nextStep(ctx, t, r.Step, "error", aerr.Error())
		}
		return false, ignoreAnswered(aerr)
	case errors.Is(err, answer.ErrPending):
		_, err := o.store.update(ctx, t.ID, func(t *wire.Task) error {
			cr := currentRound(t)
			if t.State != wire.StateNeedsInput || cr.N != r.N || cr.Step != r.Step {
				return errNoChange
			}
			cr.Decisions = append(cr.Decisions, wire.Decision{StepIndex: r.Step, Step: s.Answerer, Result: "pending", At: o.now(),
				Detail: fmt.Sprintf("waiting up to %s", s.Timeout)})
			return nil
		})
		return false, err
	case errors.Is(err, answer.ErrDecline):
		return true, o.nextStep(ctx, t, r.Step, "declined", "")
	default:
		return true, o.nextStep(ctx, t, r.Step, "error", err.Error())
	}
}

// nextStep records what step idx did and moves the question to the next one.
func (o *Orchestrator) nextStep(ctx context.Context, t *wire.Task, idx int, result, detail string) error {
	steps, _ := wire.ParseRoute(routeOf(t.Request))
	_, err := o.store.update(ctx, t.ID, func(t *wire.Task) error {
		r := currentRound(t)
		if t.State != wire.StateNeedsInput || r.Step != idx {
			return errNoChange
		}
		now := o.now()
		r.Decisions = append(r.Decisions, wire.Decision{StepIndex: idx, Step: steps[idx].Answerer, Result: result, Detail: detail, At: now})
		r.Step++
		r.StepDeadline = now.Add(o.stepTimeout(t, r.Step))
		t.UpdatedAt = now
		return nil
	})
	return err
}

// stepTimeout is the timeout of route step idx (zero past the end).
func (o *Orchestrator) stepTimeout(t *wire.Task, idx int) time.Duration {
	steps, err := wire.ParseRoute(routeOf(t.Request))
	if err != nil || idx >= len(steps) {
		return 0
	}
	return steps[idx].Timeout
}

// wakeAt is when the router must look at an open question again: its
// step's deadline, or the moment the task's total wait runs out.
func wakeAt(t *wire.Task, r *wire.Round) time.Time {
	limit := r.AskedAt.Add(maxWait(t) - time.Duration(t.WaitedMS)*time.Millisecond)
	if limit.Before(r.StepDeadline) {
		return limit
	}
	return r.StepDeadline
}

func maxWait(t *wire.Task) time.Duration {
	if t.Request.Limits.MaxWaitSeconds > 0 {
		return units.SecondsOr(int64(t.Request.Limits.MaxWaitSeconds), schemas.MaxWaitSeconds*time.Second)
	}
	return DefaultMaxWait
}

// expire ends a task whose question will not be answered.
func (o *Orchestrator) expire(ctx context.Context, t *wire.Task, reason, detail string) error {
	_, err := o.store.update(ctx, t.ID, func(t *wire.Task) error {
		if t.State != wire.StateNeedsInput {
			return errNoChange
		}
		now := o.now()
		r := currentRound(t)
		t.WaitedMS += now.Sub(r.AskedAt).Milliseconds()
		t.State, t.UpdatedAt = wire.StateExpired, now
		if reason == "max_wait" {
			t.State = wire.StateFailed
		}
		t.Outcome = &wire.Outcome{Reason: reason, Detail: detail}
		return nil
	})
	o.schedule(t.ID, time.Time{})
	return err
}

func ignoreAnswered(err error) error {
	if errors.Is(err, wire.ErrAlreadyAnswered) || errors.Is(err, wire.ErrNoQuestion) {
		return nil
	}
	return err
}
