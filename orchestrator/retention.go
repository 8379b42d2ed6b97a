package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agoradev/agora/wire"
)

// Retention bounds: a task that ended (finished, failed, cancelled) is
// removed — its record, its outputs and workspace snapshots in storage, its
// dispatch index entries and its place in the task index — once it has not
// changed for the retention. A task still queued, running or waiting for an
// answer is never expired, however old.
const (
	// DefaultRetention is Config.Retention's default: a week.
	DefaultRetention = 7 * 24 * time.Hour
	// MaxRetention is the longest retention: the events of a dispatch are
	// kept 30 days (bus.EventMaxAge), so a task kept longer would outlive
	// its own event log; a year is allowed for teams that keep few tasks.
	MaxRetention = 365 * 24 * time.Hour
	// MinRetention is the shortest: less would remove a task before its
	// submitter could read the result.
	MinRetention = time.Minute
	// DefaultRetentionSweep is how often a running orchestrator expires
	// tasks (Config.RetentionSweep).
	DefaultRetentionSweep = time.Minute
	// retentionBatch caps the tasks one sweep removes, so a first sweep
	// over a year of history does not hold the orchestrator for minutes;
	// the next sweep takes the next batch at once.
	retentionBatch = 10_000
	// MarkerTTL is how long a deleted task's marker stays in the KV
	// history before the server drops it: long enough for every watch
	// (another orchestrator's task cache) to have seen the deletion.
	MarkerTTL = 30 * time.Minute
)

// CheckRetention says what is wrong with a retention, in the words of the
// flag that sets it; 0 is allowed and means DefaultRetention.
func CheckRetention(d time.Duration) error {
	switch {
	case d == 0:
		return nil
	case d < 0:
		return fmt.Errorf("retention %s is negative; give a duration such as 168h (a week, the default)", d)
	case d < MinRetention:
		return fmt.Errorf("retention %s is under the minimum of %s; give e.g. 24h", d, MinRetention)
	case d > MaxRetention:
		return fmt.Errorf("retention %s is over the maximum of %s (a year); give e.g. 720h", d, MaxRetention)
	}
	return nil
}

// retention is the configured retention, with its default.
func (o *Orchestrator) retention() time.Duration {
	if o.cfg.Retention == 0 {
		return DefaultRetention
	}
	return o.cfg.Retention
}

// RetentionResult is what one sweep did.
type RetentionResult struct {
	// Expired is the tasks removed.
	Expired int
	// More is true when the sweep stopped at its batch size with more
	// tasks due.
	More bool
}

// ExpireTasks removes every terminal task whose last change is older than
// the retention at the orchestrator's clock (Config.Now), up to a batch;
// the retention sweep calls it, and benchmarks call it with a clock they
// advance. It also forgets the task cache's old removals, so the index does
// not grow with the tasks ever removed (the buckets' delete markers expire
// on the server, MarkerTTL after each removal).
func (o *Orchestrator) ExpireTasks(ctx context.Context) (RetentionResult, error) {
	var res RetentionResult
	c := o.store.cache
	if c == nil || !c.current() {
		return res, nil // the next sweep, once the index is current
	}
	cutoff := o.now().Add(-o.retention())
	ids := c.ended(cutoff, retentionBatch+1)
	if len(ids) > retentionBatch {
		ids, res.More = ids[:retentionBatch], true
	}
	var errs []error
	for _, id := range ids {
		ok, err := o.expireEnded(ctx, id, cutoff)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		if ok {
			res.Expired++
		}
	}
	c.forgetGone()
	if res.Expired > 0 {
		o.log.Info("tasks expired", "count", res.Expired, "retention", o.retention(), "more", res.More)
	}
	return res, errors.Join(errs...)
}

// expireEnded removes task id if, read again now, it is still terminal and
// unchanged since cutoff: a task continued or retried since the index saw
// it stays. False when it was kept or is already gone.
func (o *Orchestrator) expireEnded(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	t, err := o.store.get(ctx, id)
	if errors.Is(err, wire.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("expire task %s: %w", id, err)
	}
	if !t.State.Terminal() || !t.UpdatedAt.Before(cutoff) {
		return false, nil
	}
	if err := o.removeTask(ctx, t); err != nil {
		return false, fmt.Errorf("expire task %s: %w", id, err)
	}
	o.log.Debug("task expired", "task_id", id, "state", t.State, "updated_at", t.UpdatedAt)
	return true, nil
}

// retentionLoop runs ExpireTasks every Config.RetentionSweep, at once
// again while a sweep leaves more due.
func (o *Orchestrator) retentionLoop(ctx context.Context) {
	defer o.wg.Done()
	every := o.cfg.RetentionSweep
	if every <= 0 {
		every = DefaultRetentionSweep
	}
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		res, err := o.ExpireTasks(ctx)
		if err != nil && ctx.Err() == nil {
			o.log.Warn("retention sweep", "error", err)
		}
		if res.More {
			timer.Reset(0)
		} else {
			timer.Reset(every)
		}
	}
}
