package bus

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// Defaults for EventConsumer.
const (
	DefaultEventWorkers       = 16
	DefaultEventMaxPending    = 1024
	DefaultEventMaxDeliveries = 8
	DefaultEventApplyTimeout  = 20 * time.Second
	// eventAckWait covers an event that waits in its lane behind others
	// and then takes its whole apply timeout.
	eventAckWait = 2 * time.Minute
	// laneDepth is how many events one lane holds before the consumer's
	// callback waits for it: a short wait, since every apply is bounded.
	laneDepth = 64
)

// EventConsumer reads AGORA_EVENTS through a durable consumer and applies
// every event with Apply. No event can hold up the events of another
// dispatch for longer than one bounded apply: events are spread over
// Workers lanes by dispatch id (so one dispatch's events apply in stream
// order), up to MaxPending are in flight, a failed apply is retried with
// backoff a bounded number of times and then handed to Park instead of
// being retried forever. docs/orchestrator.md, "The event pipeline".
type EventConsumer struct {
	// Durable names the consumer; replicas sharing it share the work.
	Durable string
	// Apply folds one event into the state. nil acknowledges the event;
	// an error retries it (after 1 s, 2 s, 4 s … at most 30 s) until it
	// has been delivered MaxDeliveries times, when it is parked.
	Apply func(ctx context.Context, ev schemas.Event) error
	// Park keeps an event that could not be applied where an operator can
	// see it. nil: the event is logged and dropped. When Park fails, the
	// event is retried later.
	Park func(ctx context.Context, p ParkedEvent) error
	// Workers is the number of lanes; default DefaultEventWorkers.
	Workers int
	// MaxPending bounds the events delivered but not yet acknowledged;
	// default DefaultEventMaxPending.
	MaxPending int
	// MaxDeliveries is how often an event is tried before it is parked;
	// default DefaultEventMaxDeliveries.
	MaxDeliveries int
	// ApplyTimeout bounds one Apply; default DefaultEventApplyTimeout.
	ApplyTimeout time.Duration

	stats EventStats
	done  chan struct{}
}

// EventStats counts what an EventConsumer did since it started.
type EventStats struct {
	Applied     atomic.Uint64 // applied (or found applied already) and acknowledged
	Retried     atomic.Uint64 // failed applies handed back for redelivery
	Parked      atomic.Uint64 // events given up on and parked
	Invalid     atomic.Uint64 // messages that break the event schema, dropped
	UnknownKind atomic.Uint64 // events of a kind outside the vocabulary, skipped
}

// EventCounts is a snapshot of EventStats.
type EventCounts struct {
	Applied, Retried, Parked, Invalid, UnknownKind uint64
}

// ParkedEvent is an event parked after its last delivery. The bus keeps
// its own type rather than the HTTP API's (wire.ParkedEvent) so the worker,
// which links this package, does not link the API's types; the fields match
// wire.ParkedEvent one for one, so a consumer converts with
// wire.ParkedEvent(p).
type ParkedEvent struct {
	// Sequence is the event's stream sequence in AGORA_EVENTS.
	Sequence   uint64
	Subject    string
	DispatchID string
	TaskID     string
	Kind       schemas.EventKind
	Error      string
	Deliveries uint64
	StoredAt   time.Time
	ParkedAt   time.Time
	// Event is the event as stored.
	Event schemas.Event
}

// Counts returns the consumer's counters.
func (c *EventConsumer) Counts() EventCounts {
	return EventCounts{Applied: c.stats.Applied.Load(), Retried: c.stats.Retried.Load(), Parked: c.stats.Parked.Load(),
		Invalid: c.stats.Invalid.Load(), UnknownKind: c.stats.UnknownKind.Load()}
}

// Done is closed once the consumer has stopped (its ctx ended) and every
// apply in progress has returned.
func (c *EventConsumer) Done() <-chan struct{} { return c.done }

func (c *EventConsumer) withDefaults() {
	if c.Workers <= 0 {
		c.Workers = DefaultEventWorkers
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultEventMaxPending
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = DefaultEventMaxDeliveries
	}
	if c.ApplyTimeout <= 0 {
		c.ApplyTimeout = DefaultEventApplyTimeout
	}
}

// retryDelay is the pause before the next delivery of an event that
// failed on its n-th delivery.
func retryDelay(n uint64) time.Duration {
	if n > 5 {
		return 30 * time.Second
	}
	return min(time.Second<<(n-1), 30*time.Second)
}

// eventDelivery is one message with what was read of it.
type eventDelivery struct {
	msg        jetstream.Msg
	ev         schemas.Event
	seq        uint64
	deliveries uint64
	stored     time.Time
	// runner is the runner whose subject carried the event, "" for the
	// dispatch's own subject.
	runner string
}

// ConsumeEvents starts c on AGORA_EVENTS (creating the stream and the
// durable consumer, or bringing the consumer's settings in line). It
// returns once consuming; ctx ends it, and c.Done tells when it has.
func (b *Bus) ConsumeEvents(ctx context.Context, c *EventConsumer) error {
	if c.Apply == nil || c.Durable == "" {
		return errors.New("consume events: Durable and Apply are required")
	}
	c.withDefaults()
	c.done = make(chan struct{})
	if err := b.EnsureEventStream(ctx); err != nil {
		return err
	}
	var cons jetstream.Consumer
	err := b.retryEnsure(ctx, "consumer "+c.Durable, func() error {
		var err error
		cons, err = b.js.CreateOrUpdateConsumer(ctx, EventStream, jetstream.ConsumerConfig{
			Durable:       c.Durable,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       eventAckWait,
			MaxAckPending: c.MaxPending,
			// No MaxDeliver: the consumer parks an event itself after
			// MaxDeliveries, so nothing is dropped without a trace.
			MaxDeliver:    -1,
			FilterSubject: EventSubjects,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("consumer %s on %s: %w", c.Durable, EventStream, err)
	}
	lanes := make([]chan eventDelivery, c.Workers)
	var wg sync.WaitGroup
	for i := range lanes {
		lanes[i] = make(chan eventDelivery, laneDepth)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range lanes[i] {
				b.applyOne(ctx, c, d)
			}
		}()
	}
	var stopping sync.Mutex // held while routing, so lanes close after the last send
	stopped := false
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		d, ok := b.readEvent(c, msg)
		if !ok {
			return
		}
		stopping.Lock()
		defer stopping.Unlock()
		if stopped {
			return // redelivered after AckWait to whoever consumes next
		}
		lanes[laneOf(d.ev.DispatchID, len(lanes))] <- d
	})
	if err != nil {
		for _, l := range lanes {
			close(l)
		}
		close(c.done)
		return fmt.Errorf("consume %s: %w", EventStream, err)
	}
	go func() {
		<-ctx.Done()
		cc.Stop()
		select {
		case <-cc.Closed():
		case <-time.After(5 * time.Second): // the connection went first
		}
		stopping.Lock()
		stopped = true
		for _, l := range lanes {
			close(l)
		}
		stopping.Unlock()
		wg.Wait()
		close(c.done)
	}()
	return nil
}

// readEvent decodes a delivered message; it acknowledges and counts one
// that is not an event agora knows, returning false.
func (b *Bus) readEvent(c *EventConsumer, msg jetstream.Msg) (eventDelivery, bool) {
	d := eventDelivery{msg: msg, deliveries: 1}
	if md, err := msg.Metadata(); err == nil {
		d.seq, d.deliveries, d.stored = md.Sequence.Stream, md.NumDelivered, md.Timestamp
	}
	ev, err := schemas.ParseEvent(msg.Data())
	if err != nil {
		c.stats.Invalid.Add(1)
		b.log.Warn("event that breaks the schema; dropped", "subject", msg.Subject(), "seq", d.seq, "error", err)
		_ = msg.Term()
		return d, false
	}
	id, runner, ok := ParseEventSubject(msg.Subject())
	if !ok || id != ev.DispatchID {
		c.stats.Invalid.Add(1)
		b.log.Warn("event whose dispatch id is not its subject's; dropped", "subject", msg.Subject(), "dispatch_id", ev.DispatchID, "seq", d.seq)
		_ = msg.Term()
		return d, false
	}
	if !ev.Kind.Known() {
		c.stats.UnknownKind.Add(1)
		b.log.Info("event of an unknown kind; skipped", "kind", ev.Kind, "seq", d.seq)
		_ = msg.Ack()
		return d, false
	}
	d.ev, d.runner = *ev, runner
	return d, true
}

// applyOne applies one event, bounded in time, and acknowledges, retries
// or parks it.
func (b *Bus) applyOne(ctx context.Context, c *EventConsumer, d eventDelivery) {
	log := b.log.With("kind", d.ev.Kind, "dispatch_id", d.ev.DispatchID, "seq", d.seq, "delivery", d.deliveries)
	var err error
	if d.runner != "" {
		// A runner's event counts only when that runner holds the claim.
		err = b.CheckRunnerEvent(ctx, d.ev, d.runner)
		if errors.Is(err, ErrNotClaimant) {
			log.Error("event from a runner that does not hold the dispatch's claim; refused", "runner", d.runner, "error", err)
		}
	}
	if err == nil {
		err = c.applyBounded(ctx, d.ev)
	}
	if err == nil {
		c.stats.Applied.Add(1)
		if err := d.msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
			log.Warn("acknowledge event; it will be redelivered and found applied", "error", err)
		}
		return
	}
	if ctx.Err() != nil {
		return // stopping: redelivered to whoever consumes next
	}
	if d.deliveries < uint64(c.MaxDeliveries) && !errors.Is(err, ErrNotClaimant) {
		c.stats.Retried.Add(1)
		delay := retryDelay(d.deliveries)
		log.Warn("event not applied; retrying", "error", err, "retry_in", delay, "max_deliveries", c.MaxDeliveries)
		_ = d.msg.NakWithDelay(delay)
		return
	}
	p := ParkedEvent{Sequence: d.seq, Subject: d.msg.Subject(), DispatchID: d.ev.DispatchID, TaskID: d.ev.TaskID, Kind: d.ev.Kind,
		Error: err.Error(), Deliveries: d.deliveries, StoredAt: d.stored, ParkedAt: time.Now().UTC(), Event: d.ev}
	if c.Park != nil {
		pctx, cancel := context.WithTimeout(ctx, c.ApplyTimeout)
		perr := c.Park(pctx, p)
		cancel()
		if perr != nil {
			c.stats.Retried.Add(1)
			log.Error("event not applied and could not be parked; retrying", "error", err, "park_error", perr)
			_ = d.msg.NakWithDelay(retryDelay(d.deliveries))
			return
		}
	}
	c.stats.Parked.Add(1)
	log.Error("event not applied after its last delivery; parked", "error", err)
	_ = d.msg.Term()
}

// applyBounded runs Apply with the timeout, turning a panic into an error
// so one bad event cannot take the consumer down.
func (c *EventConsumer) applyBounded(ctx context.Context, ev schemas.Event) (err error) {
	actx, cancel := context.WithTimeout(ctx, c.ApplyTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("apply panicked: %v", r)
		}
	}()
	return c.Apply(actx, ev)
}

func laneOf(dispatchID string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dispatchID))
	return int(h.Sum32() % uint32(n))
}

// ErrNotClaimant means an event came on a runner's subject
// (RunnerEventSubject) from a runner that does not hold the dispatch: it is
// refused and parked, never applied.
var ErrNotClaimant = errors.New("the runner does not hold the dispatch's claim")

// RunnerBucket records, per dispatch, the runner whose events the
// orchestrator accepted first: only the orchestrator writes it, so a runner
// that rewrites another's claim in agora_claims (which every runner
// writes) does not become that dispatch's runner.
const RunnerBucket = "agora_dispatch_runners"

// CheckRunnerEvent reports whether runnerID may have sent ev, and records
// it as the dispatch's runner when it is the first: ErrNotClaimant when
// not; another error when the claim or the record could not be read.
//
//   - Once a runner's event was accepted for a dispatch, only that
//     runner's events count — but for a dispatch.failed worker-lost from
//     the runner that took over the claim as lost (its runner stopped
//     renewing it), which then becomes the dispatch's runner.
//   - Before, the runner must hold the dispatch's claim.
//   - A dispatch.cancelled counts from any runner when a cancel claimed
//     the dispatch before any runner (the runner that met the cancel makes
//     sure the event exists).
func (b *Bus) CheckRunnerEvent(ctx context.Context, ev schemas.Event, runnerID string) error {
	return b.checkRunnerEvent(ctx, ev, runnerID, true)
}

func (b *Bus) checkRunnerEvent(ctx context.Context, ev schemas.Event, runnerID string, record bool) error {
	kv, err := b.runnersKV(ctx, record)
	if err != nil {
		return err
	}
	var c *Claim
	claimRead := false
	for range 2 {
		pinned := ""
		if kv != nil {
			v, _, err := kv.Get(ctx, ev.DispatchID)
			switch {
			case err == nil:
				pinned = string(v)
			case !errors.Is(err, ErrKeyNotFound):
				return fmt.Errorf("read the runner of %s: %w", ev.DispatchID, err)
			}
		}
		if pinned == runnerID {
			return nil // the usual case: one read
		}
		if !claimRead {
			if c, err = b.GetClaim(ctx, ev.DispatchID); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
				return err
			}
			claimRead = true
		}
		switch {
		case c != nil && c.State == ClaimCancelled && ev.Kind == schemas.KindCancelled:
			return nil
		case c != nil && c.State == ClaimCancelled:
			return fmt.Errorf("%s of %s from runner %s: %w (cancelled before any runner took it)", ev.Kind, ev.DispatchID, runnerID, ErrNotClaimant)
		case pinned != "" && lostTakeover(c, ev, runnerID):
			if record {
				if _, err := kv.Put(ctx, ev.DispatchID, []byte(runnerID)); err != nil {
					return fmt.Errorf("record the runner of %s: %w", ev.DispatchID, err)
				}
			}
			return nil
		case pinned != "":
			return fmt.Errorf("%s of %s from runner %s: %w (runner %s runs it)", ev.Kind, ev.DispatchID, runnerID, ErrNotClaimant, pinned)
		case c == nil:
			return fmt.Errorf("%s of %s from runner %s: %w (no claim)", ev.Kind, ev.DispatchID, runnerID, ErrNotClaimant)
		case c.Runner != runnerID:
			return fmt.Errorf("%s of %s from runner %s: %w (runner %s holds it)", ev.Kind, ev.DispatchID, runnerID, ErrNotClaimant, c.Runner)
		case !record:
			return nil
		}
		_, err := kv.Create(ctx, ev.DispatchID, []byte(runnerID))
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrKeyExists) {
			return fmt.Errorf("record the runner of %s: %w", ev.DispatchID, err)
		}
		// Another replica recorded one meanwhile: check against it.
	}
	return fmt.Errorf("record the runner of %s: it keeps changing", ev.DispatchID)
}

// lostTakeover reports a worker-lost failure from the runner that took the
// claim over as lost.
func lostTakeover(c *Claim, ev schemas.Event, runnerID string) bool {
	return c != nil && c.State == ClaimLost && c.Runner == runnerID && ev.Kind == schemas.KindFailed &&
		ev.Failure != nil && ev.Failure.Reason == schemas.ReasonWorkerLost
}

// runnersKV is RunnerBucket, made when create (the orchestrator's
// consumer); nil when it does not exist and create is false.
func (b *Bus) runnersKV(ctx context.Context, create bool) (*KV, error) {
	b.runnersMu.Lock()
	defer b.runnersMu.Unlock()
	if b.runners != nil {
		return b.runners, nil
	}
	kv, err := b.lookupKV(ctx, RunnerBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		kv, err = b.ensureKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      RunnerBucket,
			Description: "which runner's events count for which dispatch",
			Storage:     jetstream.FileStorage,
			TTL:         30 * 24 * time.Hour,
		})
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", RunnerBucket, err)
	}
	b.runners = kv
	return kv, nil
}
