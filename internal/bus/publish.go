package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// ErrInvalidEvent means the event breaks the event schema or has a dispatch
// id that cannot be a subject token; retrying cannot help.
var ErrInvalidEvent = errors.New("invalid event")

// ErrEventTooLarge means the encoded event (with its headers) is over the
// server's max payload, 1 MiB by default; retrying cannot help. A large
// partial_state belongs in object storage, referenced by partial_state_ref.
var ErrEventTooLarge = errors.New("event exceeds the server's max payload")

// PublishEventRetry backoff: the pause starts at retryBaseDelay, doubles up
// to retryMaxDelay, and is jittered down by up to half. The last attempt is
// given at least minAttemptTime of the window.
const (
	retryBaseDelay = 50 * time.Millisecond
	retryMaxDelay  = time.Second
	minAttemptTime = 100 * time.Millisecond
)

// PublishAck is JetStream's acknowledgement of an event.
type PublishAck struct {
	Stream string
	// Sequence is the event's stream sequence; for a duplicate, the sequence
	// of the copy stored first.
	Sequence uint64
	// Duplicate reports that an event with the same MsgID was already stored
	// within the duplicate window: this publish stored nothing new.
	Duplicate bool
	// Attempts is how many publish attempts it took (1 for PublishEvent).
	Attempts int
}

// PublishEvent stores ev in AGORA_EVENTS on EventSubject(ev.DispatchID)
// (RunnerEventSubject on a runner's Bus, see AsRunner) with Nats-Msg-Id ev.MsgID() and waits for the acknowledgement, bounded by
// ctx and Options.PublishTimeout. An event already stored (same MsgID,
// within the duplicate window) is a success with ack.Duplicate set. The
// event is validated against the event schema first (ErrInvalidEvent). If
// the stream does not exist, PublishEvent creates it and publishes again.
// While the bus is not connected it fails at once with ErrNotConnected.
func (b *Bus) PublishEvent(ctx context.Context, ev schemas.Event) (PublishAck, error) {
	data, err := encodeEvent(ev)
	if err != nil {
		return PublishAck{}, err
	}
	ack, err := b.publish(ctx, ev, data)
	ack.Attempts = 1
	return ack, err
}

// PublishEventRetry is PublishEvent retried with backoff (50ms doubling to
// 1s, jittered) until it is acknowledged, window has passed, ctx is done or
// the error is one a retry cannot fix (ErrInvalidEvent, ErrEventTooLarge,
// ErrClosed). It returns within window: each attempt's deadline is the end
// of the window. The error names the number of attempts and wraps the last
// attempt's error. Options.OnRetry sees every failed attempt that is retried.
func (b *Bus) PublishEventRetry(ctx context.Context, ev schemas.Event, window time.Duration) (PublishAck, error) {
	data, err := encodeEvent(ev)
	if err != nil {
		return PublishAck{}, err
	}
	if window <= 0 {
		return PublishAck{}, fmt.Errorf("publish %s to %s: retry window %s is not positive", ev.Kind, EventSubject(ev.DispatchID), window)
	}
	return b.retryWithin(ctx, ev, window, func(actx context.Context) (PublishAck, error) {
		return b.publish(actx, ev, data)
	})
}

// retryWithin makes attempts to store ev — each with a context that ends
// with the window — with windowBackOff's pauses, until one succeeds, window
// has passed, ctx is done or the error is one a retry cannot fix. It
// returns the ack with Attempts set, or an error that names the number of
// attempts and wraps the last attempt's error. Options.OnRetry sees every
// failed attempt that is retried.
func (b *Bus) retryWithin(ctx context.Context, ev schemas.Event, window time.Duration, attempt func(context.Context) (PublishAck, error)) (PublishAck, error) {
	start := time.Now()
	deadline := start.Add(window)
	attempts := 0
	var last error
	ack, err := backoff.Retry(ctx, func() (PublishAck, error) {
		attempts++
		actx, cancel := context.WithDeadline(ctx, deadline)
		ack, err := attempt(actx)
		cancel()
		last = err
		if err == nil {
			return ack, nil
		}
		if permanent(err) || ctx.Err() != nil || time.Until(deadline) <= minAttemptTime {
			return ack, backoff.Permanent(err)
		}
		b.log.Debug("publish event failed; retrying", "dispatch_id", ev.DispatchID, "kind", ev.Kind,
			"attempt", attempts, "err", err)
		if b.opts.OnRetry != nil {
			b.opts.OnRetry(attempts, err)
		}
		return ack, err
	}, backoff.WithBackOff(&windowBackOff{deadline: deadline}), backoff.WithMaxElapsedTime(0))
	switch {
	case err == nil:
		ack.Attempts = attempts
		if attempts > 1 {
			b.log.Info("published event after retries", "dispatch_id", ev.DispatchID, "kind", ev.Kind,
				"attempts", attempts, "elapsed", time.Since(start))
		}
		return ack, nil
	case !errors.Is(err, last):
		// ctx ended during a pause: Retry returns its cause alone.
		err = fmt.Errorf("%w (last error: %w)", err, last)
	}
	return PublishAck{}, fmt.Errorf("gave up after %d attempts in %s: %w",
		attempts, time.Since(start).Round(time.Millisecond), err)
}

// windowBackOff is PublishEventRetry's pause: retryBaseDelay doubling up to
// retryMaxDelay, jittered down by up to half, cut short so the last attempt
// keeps minAttemptTime of the window, and Stop once less is left.
type windowBackOff struct {
	delay    time.Duration
	deadline time.Time
}

func (w *windowBackOff) Reset() { w.delay = retryBaseDelay }

func (w *windowBackOff) NextBackOff() time.Duration {
	remaining := time.Until(w.deadline)
	if remaining <= minAttemptTime {
		return backoff.Stop
	}
	pause := min(w.delay/2+rand.N(w.delay/2+1), remaining-minAttemptTime)
	w.delay = min(2*w.delay, retryMaxDelay)
	return pause
}

func permanent(err error) bool {
	return errors.Is(err, ErrInvalidEvent) || errors.Is(err, ErrEventTooLarge) || errors.Is(err, ErrClosed)
}

// encodeEvent marshals ev and checks it against the event schema.
func encodeEvent(ev schemas.Event) ([]byte, error) {
	subject := EventSubject(ev.DispatchID)
	if err := ValidateDispatchID(ev.DispatchID); err != nil {
		return nil, fmt.Errorf("publish %s to %s: %w: %w", ev.Kind, subject, ErrInvalidEvent, err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("publish %s to %s: %w: encode: %w", ev.Kind, subject, ErrInvalidEvent, err)
	}
	if err := schemas.Validate(schemas.SchemaEvent, data); err != nil {
		return nil, fmt.Errorf("publish %s to %s: %w: %w", ev.Kind, subject, ErrInvalidEvent, err)
	}
	return data, nil
}

// publish sends one encoded event; when no stream answers, it ensures the
// stream and sends once more.
func (b *Bus) publish(ctx context.Context, ev schemas.Event, data []byte, opts ...jetstream.PublishOpt) (PublishAck, error) {
	subject := b.eventSubject(ev.DispatchID)
	wrap := func(err error) error { return fmt.Errorf("publish %s to %s: %w", ev.Kind, subject, err) }
	if err := b.ready(); err != nil {
		return PublishAck{}, wrap(err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.PublishTimeout)
	defer cancel()

	ack, err := b.jsPublish(ctx, ev, subject, data, opts)
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		b.log.Info("no stream answered; ensuring it", "stream", EventStream, "subject", subject)
		if err := b.EnsureEventStream(ctx); err != nil {
			return PublishAck{}, wrap(err)
		}
		ack, err = b.jsPublish(ctx, ev, subject, data, opts)
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		err = fmt.Errorf("%w: %d bytes of JSON plus headers, server max payload %d bytes; "+
			"put a large partial_state in object storage and send partial_state_ref: %w",
			ErrEventTooLarge, len(data), b.nc.MaxPayload(), err)
	}
	if err != nil {
		return PublishAck{}, wrap(err)
	}
	if ack.Duplicate {
		b.log.Debug("event already stored", "dispatch_id", ev.DispatchID, "kind", ev.Kind, "seq", ack.Sequence)
	}
	return PublishAck{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

func (b *Bus) jsPublish(ctx context.Context, ev schemas.Event, subject string, data []byte, extra []jetstream.PublishOpt) (*jetstream.PubAck, error) {
	opts := append([]jetstream.PublishOpt{
		jetstream.WithMsgID(b.msgID(ev)),
		jetstream.WithExpectStream(EventStream),
		// No stream answering is handled above (ensure, then once more);
		// do not let the client sleep on it first.
		jetstream.WithRetryAttempts(0),
	}, extra...)
	return b.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
}

// eventSubject is where this Bus publishes dispatchID's events: its
// runner's subject on a runner's Bus, else the dispatch's own.
func (b *Bus) eventSubject(dispatchID string) string {
	if b.runner != "" {
		return RunnerEventSubject(dispatchID, b.runner)
	}
	return EventSubject(dispatchID)
}

// msgID is the de-duplication id of ev as this Bus publishes it: the
// event's own (MsgID, "<dispatch_id>.<kind>"), with ".<runner_id>" on a
// runner's Bus, so an event another runner stores first for the same
// dispatch and kind (refused by the orchestrator) cannot make this
// runner's copy a duplicate and drop it. The same runner, restarted,
// still stores each of its events once.
func (b *Bus) msgID(ev schemas.Event) string {
	if b.runner != "" {
		return ev.MsgID() + "." + b.runner
	}
	return ev.MsgID()
}

// AsRunner is a view of b, on the same connection, that publishes events
// as runnerID: on RunnerEventSubject, which a runner's NATS user may
// publish and the orchestrator checks against the dispatch's claim.
// Everything else is b's; closing either closes the connection.
func (b *Bus) AsRunner(runnerID string) (*Bus, error) {
	if err := ValidateRunnerID(runnerID); err != nil {
		return nil, err
	}
	return &Bus{nc: b.nc, js: b.js, opts: b.opts, log: b.log, runner: runnerID}, nil
}
