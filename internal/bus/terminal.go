package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// RunnerEventFilter is the subject filter of every runner's events of
// dispatchID: agora.events.<dispatch_id>.> (RunnerEventSubject). It does
// not match the dispatch's own subject, EventSubject.
func RunnerEventFilter(dispatchID string) string { return EventSubject(dispatchID) + ".>" }

// PublishTerminal stores ev, a terminal event, unless dispatch ev.DispatchID
// has a terminal event that counts already (see counted; holders are the
// runners whose events count besides this Bus's own), which it returns
// instead, publishing nothing. It reads the dispatch's events from the
// stream's leader and publishes on the condition that no runner's event
// was stored on RunnerEventFilter since that read
// (Nats-Expected-Last-Subject-Sequence with
// Nats-Expected-Last-Subject-Sequence-Subject): the server refuses the
// publish otherwise, and PublishTerminal reads again and decides again. So
// two runners deciding at once never both store a terminal event. It is
// retried as PublishEventRetry is, within window. Our own copy stored by an
// earlier call (same Nats-Msg-Id) is a success with ack.Duplicate set.
//
// The condition covers the runners' subjects only: an event on the
// dispatch's own subject (a worker's, the orchestrator's) stored after the
// read is not seen; docs/contract.md says when that can happen.
func (b *Bus) PublishTerminal(ctx context.Context, ev schemas.Event, window time.Duration, holders ...string) (PublishAck, *schemas.Event, error) {
	subject := b.eventSubject(ev.DispatchID)
	if !ev.Kind.Terminal() {
		return PublishAck{}, nil, fmt.Errorf("publish %s to %s: %w: not a terminal kind", ev.Kind, subject, ErrInvalidEvent)
	}
	data, err := encodeEvent(ev)
	if err != nil {
		return PublishAck{}, nil, err
	}
	if window <= 0 {
		return PublishAck{}, nil, fmt.Errorf("publish %s to %s: retry window %s is not positive", ev.Kind, subject, window)
	}
	var settled *schemas.Event
	ack, err := b.retryWithin(ctx, ev, window, func(actx context.Context) (PublishAck, error) {
		ack, found, err := b.publishIfUnsettled(actx, ev, data, holders)
		if err == nil {
			settled = found
		}
		return ack, err
	})
	if err != nil {
		return PublishAck{}, nil, err
	}
	return ack, settled, nil
}

// publishIfUnsettled is one read and one conditional publish of
// PublishTerminal. It returns the terminal event that counts already, if
// any, else publishes; a refused condition is an error (to retry).
func (b *Bus) publishIfUnsettled(ctx context.Context, ev schemas.Event, data []byte, holders []string) (PublishAck, *schemas.Event, error) {
	d, err := b.decideTerminal(ctx, ev, holders)
	if err != nil || d.done {
		return d.ack, d.settled, err
	}
	ack, err := b.publishAfter(ctx, ev, data, d.lastSeq)
	return ack, nil, err
}

// terminalDecision is what one read of a dispatch's events says about
// publishing a terminal event.
type terminalDecision struct {
	// done: nothing to publish — settled is the terminal event that counts,
	// or ack is our own copy stored earlier.
	done    bool
	settled *schemas.Event
	ack     PublishAck
	// lastSeq is the stream sequence of the last runner's event the read
	// saw (0: none), the condition of the publish.
	lastSeq uint64
}

// decideTerminal reads dispatch ev.DispatchID's events and decides
// whether ev is to be published.
func (b *Bus) decideTerminal(ctx context.Context, ev schemas.Event, holders []string) (terminalDecision, error) {
	var d terminalDecision
	stored, err := b.StoredEvents(ctx, ev.DispatchID)
	if err != nil {
		return d, err
	}
	own := EventSubject(ev.DispatchID)
	for _, se := range stored {
		if se.Subject != own {
			d.lastSeq = max(d.lastSeq, se.Sequence)
		}
	}
	counted, err := b.counted(ctx, ev.DispatchID, stored, holders)
	if err != nil {
		return d, err
	}
	for _, c := range counted {
		if !c.Event.Kind.Terminal() {
			continue
		}
		d.done = true
		if c.Subject == b.eventSubject(ev.DispatchID) && c.MsgID == b.msgID(ev) {
			d.ack = PublishAck{Stream: EventStream, Sequence: c.Sequence, Duplicate: true}
			return d, nil
		}
		b.log.Info("not publishing a terminal event: the dispatch has one", "dispatch_id", ev.DispatchID,
			"kind", ev.Kind, "stored_kind", c.Event.Kind, "stored_subject", c.Subject, "seq", c.Sequence)
		d.settled = &c.Event
		return d, nil
	}
	return d, nil
}

// publishAfter publishes ev on the condition that the last runner's event
// of its dispatch is still lastSeq; ErrEventsChanged when the server
// refuses it.
func (b *Bus) publishAfter(ctx context.Context, ev schemas.Event, data []byte, lastSeq uint64) (PublishAck, error) {
	ack, err := b.publish(ctx, ev, data, jetstream.WithExpectLastSequenceForSubject(lastSeq, RunnerEventFilter(ev.DispatchID)))
	if wrongLastSequence(err) {
		return PublishAck{}, fmt.Errorf("%w: %w", ErrEventsChanged, err)
	}
	return ack, err
}

// ErrEventsChanged means a runner's event of the dispatch was stored
// between PublishTerminal's read and its publish, so the server refused
// the publish; reading again decides again.
var ErrEventsChanged = errors.New("the dispatch's events changed since they were read")
