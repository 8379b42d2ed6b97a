package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/wire"
)

// ParkedBucket keeps the events the pipeline gave up on, one key per
// stream sequence, until an operator retries or discards them.
const ParkedBucket = "agora_parked_events"

// pipeline is the orchestrator's side of the event consumer: counters and
// the parked events, mirrored from their bucket.
type pipeline struct {
	consumer    *bus.EventConsumer
	unknownTask atomic.Uint64
	parkedKV    *bus.KV

	mu     sync.RWMutex
	parked map[uint64]wire.ParkedEvent
}

// startPipeline opens the parked bucket, follows it, and starts consuming
// AGORA_EVENTS.
func (o *Orchestrator) startPipeline(ctx context.Context) error {
	kv, err := o.cfg.Bus.KeyValue(ctx, ParkedBucket, "agora events the orchestrator could not apply, by stream sequence")
	if err != nil {
		return err
	}
	p := &pipeline{parkedKV: kv, parked: map[uint64]wire.ParkedEvent{}}
	o.pipe = p
	err = kv.Follow(ctx, func(key string, value []byte, _ uint64) {
		seq, err := strconv.ParseUint(key, 10, 64)
		if err != nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if value == nil {
			delete(p.parked, seq)
			return
		}
		var pe wire.ParkedEvent
		if err := json.Unmarshal(value, &pe); err != nil {
			o.log.Warn("parked event does not decode", "key", key, "error", err)
			return
		}
		p.parked[seq] = pe
	}, func() {}, func() { o.log.Warn("the watch of the parked events ended; parked events listed may be stale") })
	if err != nil {
		return err
	}
	p.consumer = &bus.EventConsumer{
		Durable:       consumerName,
		Apply:         o.apply,
		Park:          o.park,
		Workers:       o.cfg.EventWorkers,
		MaxPending:    o.cfg.EventMaxPending,
		MaxDeliveries: o.cfg.EventMaxDeliveries,
	}
	if err := o.cfg.Bus.ConsumeEvents(ctx, p.consumer); err != nil {
		return err
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		<-p.consumer.Done()
	}()
	return nil
}

// park stores an event the consumer gave up on.
func (o *Orchestrator) park(ctx context.Context, parked bus.ParkedEvent) error {
	pe := wire.ParkedEvent(parked)
	data, err := json.Marshal(pe)
	if err != nil {
		return fmt.Errorf("park event %d: %w", pe.Sequence, err)
	}
	if _, err := o.pipe.parkedKV.Put(ctx, strconv.FormatUint(pe.Sequence, 10), data); err != nil {
		return fmt.Errorf("park event %d: %w", pe.Sequence, err)
	}
	o.pipe.mu.Lock()
	o.pipe.parked[pe.Sequence] = pe
	o.pipe.mu.Unlock()
	return nil
}

// ParkedEvents lists the parked events, oldest first, and the counters.
func (o *Orchestrator) ParkedEvents(context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error) {
	o.pipe.mu.RLock()
	out := make([]wire.ParkedEvent, 0, len(o.pipe.parked))
	for _, pe := range o.pipe.parked {
		out = append(out, pe)
	}
	o.pipe.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Sequence < out[j].Sequence })
	return out, o.PipelineStats(), nil
}

func (o *Orchestrator) parkedCount() int {
	if o.pipe == nil {
		return 0
	}
	o.pipe.mu.RLock()
	defer o.pipe.mu.RUnlock()
	return len(o.pipe.parked)
}

// RetryParked applies a parked event again; once it applies, it is no
// longer parked. An event whose task is gone by now is discarded.
func (o *Orchestrator) RetryParked(ctx context.Context, seq uint64) error {
	o.pipe.mu.RLock()
	pe, ok := o.pipe.parked[seq]
	o.pipe.mu.RUnlock()
	if !ok {
		return fmt.Errorf("parked event %d: %w", seq, wire.ErrNotFound)
	}
	// A runner's event is checked against the claim again: one refused
	// for coming from the wrong runner stays refused.
	if _, runner, _ := bus.ParseEventSubject(pe.Subject); runner != "" {
		if err := o.cfg.Bus.CheckRunnerEvent(ctx, pe.Event, runner); err != nil {
			return fmt.Errorf("retry parked event %d (%s of %s): %w", seq, pe.Kind, pe.DispatchID, err)
		}
	}
	if err := o.apply(ctx, pe.Event); err != nil {
		return fmt.Errorf("retry parked event %d (%s of %s): %w", seq, pe.Kind, pe.DispatchID, err)
	}
	return o.DiscardParked(ctx, seq)
}

// DiscardParked forgets a parked event.
func (o *Orchestrator) DiscardParked(ctx context.Context, seq uint64) error {
	o.pipe.mu.RLock()
	_, ok := o.pipe.parked[seq]
	o.pipe.mu.RUnlock()
	if !ok {
		return fmt.Errorf("parked event %d: %w", seq, wire.ErrNotFound)
	}
	if err := o.pipe.parkedKV.Delete(ctx, strconv.FormatUint(seq, 10)); err != nil {
		return fmt.Errorf("discard parked event %d: %w", seq, err)
	}
	o.pipe.mu.Lock()
	delete(o.pipe.parked, seq)
	o.pipe.mu.Unlock()
	return nil
}

// PipelineStats returns the event pipeline's counters.
func (o *Orchestrator) PipelineStats() wire.PipelineStats {
	if o.pipe == nil || o.pipe.consumer == nil {
		return wire.PipelineStats{Dropped: map[string]uint64{}}
	}
	c := o.pipe.consumer.Counts()
	return wire.PipelineStats{Applied: c.Applied, Retried: c.Retried, Parked: c.Parked, ParkedNow: o.parkedCount(),
		Dropped: map[string]uint64{"unknown_task": o.pipe.unknownTask.Load(), "invalid": c.Invalid, "unknown_kind": c.UnknownKind}}
}

// dropUnknown notes an event for a task that does not exist.
func (o *Orchestrator) dropUnknown(kind, dispatchID, taskID string) {
	o.pipe.unknownTask.Add(1)
	o.log.Debug("event for a task that does not exist (removed, never existed or forged); dropped",
		"kind", kind, "dispatch_id", dispatchID, "task_id", taskID)
}

// parkedAttention is the line views show while events are parked.
func parkedAttention(n int) string {
	if n == 0 {
		return ""
	}
	noun := "events"
	if n == 1 {
		noun = "event"
	}
	return fmt.Sprintf("%d %s could not be applied and wait for an operator: agora events parked", n, noun)
}
