package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// StoredEvent is one message stored on a dispatch's event subject, as it is
// stored, whatever its kind.
type StoredEvent struct {
	// Sequence is the message's stream sequence.
	Sequence uint64
	// Subject is EventSubject, or RunnerEventSubject for a runner's.
	Subject string
	// Time is when the stream stored it.
	Time time.Time
	// MsgID is its Nats-Msg-Id header.
	MsgID string
	// Kind is its JSON "kind" field, read loosely: "" when Data is not a JSON
	// object with a string kind. It may be a kind outside the vocabulary.
	Kind schemas.EventKind
	// Data is the message body.
	Data []byte
}

// StoredEvents returns every message stored on EventSubject(dispatchID) and
// its runners' RunnerEventSubject, in stream order, without interpreting it
// beyond Kind. It reads from the stream's leader (leaderNext) until the
// server has no further message for the subject; a missing stream means no
// events.
func (b *Bus) StoredEvents(ctx context.Context, dispatchID string) ([]StoredEvent, error) {
	subject := EventSubject(dispatchID)
	if err := ValidateDispatchID(dispatchID); err != nil {
		return nil, fmt.Errorf("read events from %s: %w", subject, err)
	}
	if err := b.ready(); errors.Is(err, ErrClosed) {
		return nil, fmt.Errorf("read events from %s: %w", subject, err)
	}
	// The dispatch's own subject (orchestrator, worker) and its runners'
	// (RunnerEventSubject), merged in stream order.
	own, err := b.storedOn(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	relayed, err := b.storedOn(ctx, RunnerEventFilter(dispatchID))
	if err != nil {
		return nil, err
	}
	out := make([]StoredEvent, 0, len(own)+len(relayed))
	for len(own) > 0 || len(relayed) > 0 {
		if len(relayed) == 0 || (len(own) > 0 && own[0].Sequence < relayed[0].Sequence) {
			out, own = append(out, own[0]), own[1:]
		} else {
			out, relayed = append(out, relayed[0]), relayed[1:]
		}
	}
	return out, nil
}

// storedOn reads every message of AGORA_EVENTS on filter, in stream order,
// from the stream's leader.
func (b *Bus) storedOn(ctx context.Context, filter string) ([]StoredEvent, error) {
	var out []StoredEvent
	for seq := uint64(1); ; {
		msg, err := b.leaderNext(ctx, EventStream, filter, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("read events from %s at sequence %d: %w", filter, seq, err)
		}
		var head struct {
			Kind schemas.EventKind `json:"kind"`
		}
		_ = schemas.Decode("event", msg.Data, &head) // loose: Kind stays "" when the body is not an event
		out = append(out, StoredEvent{
			Sequence: msg.Sequence,
			Subject:  msg.Subject,
			Time:     msg.Time,
			MsgID:    msg.Header.Get(jetstream.MsgIDHeader),
			Kind:     head.Kind,
			Data:     msg.Data,
		})
		seq = msg.Sequence + 1
	}
}

// Events returns the lifecycle events stored for dispatchID, in the order
// they were stored. Messages whose kind is outside the vocabulary, that do
// not decode, or that name another dispatch are logged and skipped; so are
// another runner's events that do not count (counted).
func (b *Bus) Events(ctx context.Context, dispatchID string) ([]schemas.Event, error) {
	stored, err := b.StoredEvents(ctx, dispatchID)
	if err != nil {
		return nil, err
	}
	counted, err := b.counted(ctx, dispatchID, stored, nil)
	if err != nil {
		return nil, err
	}
	events := make([]schemas.Event, len(counted))
	for i, c := range counted {
		events[i] = c.Event
	}
	return events, nil
}

// countedEvent is a stored event that counts, decoded.
type countedEvent struct {
	StoredEvent
	Event schemas.Event
}

// counted decodes stored (dispatchID's messages, in stream order) and keeps
// the events that count for this Bus. The dispatch's own subject (worker,
// orchestrator) always counts. Another runner's event counts as the
// orchestrator counts it (CheckRunnerEvent) on a Bus that is no runner's.
// On a runner's Bus its own events count, and another runner's only when
// that runner is in holders (the runner whose claim this one took over
// names its predecessor) or the dispatch's claim says that runner took it
// over as lost and the event is its worker-lost failure (what the
// orchestrator accepts from a taker): so no runner can make another
// believe its dispatch settled, while two runners never both settle one.
func (b *Bus) counted(ctx context.Context, dispatchID string, stored []StoredEvent, holders []string) ([]countedEvent, error) {
	out := make([]countedEvent, 0, len(stored))
	var claim *Claim
	claimRead := false
	readClaim := func() (*Claim, error) {
		if !claimRead {
			c, err := b.GetClaim(ctx, dispatchID)
			if err != nil {
				return nil, err
			}
			claim, claimRead = c, true
		}
		return claim, nil
	}
	for _, se := range stored {
		log := b.log.With("dispatch_id", dispatchID, "seq", se.Sequence, "kind", se.Kind)
		if !se.Kind.Known() {
			log.Warn("skip event of unknown kind")
			continue
		}
		var ev schemas.Event
		if err := schemas.Decode("event", se.Data, &ev); err != nil {
			log.Warn("skip event that does not decode", "err", err)
			continue
		}
		if ev.DispatchID != dispatchID {
			log.Warn("skip event of another dispatch", "event_dispatch_id", ev.DispatchID)
			continue
		}
		if _, runner, _ := ParseEventSubject(se.Subject); runner != "" && runner != b.runner && !slices.Contains(holders, runner) {
			counts, err := b.otherRunnerCounts(ctx, ev, runner, readClaim)
			if err != nil {
				return nil, fmt.Errorf("read events of %s: %w", dispatchID, err)
			}
			if !counts {
				continue
			}
		}
		out = append(out, countedEvent{StoredEvent: se, Event: ev})
	}
	return out, nil
}

// otherRunnerCounts reports whether ev, stored by runner (neither this Bus's
// runner nor a holder), counts: on a Bus that is no runner's as the
// orchestrator counts it (CheckRunnerEvent); on a runner's only when it is
// the worker-lost failure of a runner that took the dispatch's claim over
// as lost (claim reads the claim, once).
func (b *Bus) otherRunnerCounts(ctx context.Context, ev schemas.Event, runner string, claim func() (*Claim, error)) (bool, error) {
	if b.runner == "" {
		err := b.checkRunnerEvent(ctx, ev, runner, false)
		if errors.Is(err, ErrNotClaimant) {
			b.log.Warn("skip event of a runner that does not hold the dispatch", "dispatch_id", ev.DispatchID,
				"kind", ev.Kind, "runner", runner, "error", err)
			return false, nil
		}
		return err == nil, err
	}
	if !ev.Kind.Terminal() {
		return false, nil
	}
	c, err := claim()
	if err != nil {
		return false, err
	}
	return lostTakeover(c, ev, runner), nil
}

// TerminalEvent returns dispatchID's terminal event (finished, needs_input,
// failed or cancelled), nil when there is none yet. Should more than one be
// stored, the first one counts.
func (b *Bus) TerminalEvent(ctx context.Context, dispatchID string) (*schemas.Event, error) {
	events, err := b.Events(ctx, dispatchID)
	if err != nil {
		return nil, err
	}
	for i := range events {
		if events[i].Kind.Terminal() {
			return &events[i], nil
		}
	}
	return nil, nil
}
