package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// The dispatch work queue: AGORA_QUEUE, one subject per dispatch so a queued
// request can be found (and removed) by id, work-queue retention so each
// request goes to one runner, msg-id = dispatch id so a request enqueued
// twice is stored once.
const (
	QueueSubjectPrefix = "agora.queue."
	QueueSubjects      = "agora.queue.>"
	// QueueConsumer is the durable pull consumer every runner shares.
	QueueConsumer = "runners"
	// QueueAckWait is how long a runner may hold a request without a sign of
	// life (InProgress) before it is handed to another runner.
	QueueAckWait = 60 * time.Second
	// ControlStream keeps the last command per dispatch, so a runner that
	// picks a request up later still sees that it was cancelled.
	ControlStream   = "AGORA_CONTROL"
	ControlSubjects = "agora.control.>"
	// ClaimBucket records which runner owns which dispatch (or that a
	// cancel got there first); creates are atomic, so one side wins.
	ClaimBucket = "agora_claims"
)

// QueueSubject is the queue subject of dispatchID's request.
func QueueSubject(dispatchID string) string { return QueueSubjectPrefix + dispatchID }

// EnsureQueue creates AGORA_QUEUE, AGORA_CONTROL, the runners' consumer and
// the claims bucket when they are absent. Idempotent.
func (b *Bus) EnsureQueue(ctx context.Context) error {
	streams := []jetstream.StreamConfig{{
		Name:        QueueStream,
		Description: "agora dispatch requests, subject agora.queue.<dispatch_id>",
		Subjects:    []string{QueueSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.WorkQueuePolicy,
		Duplicates:  24 * time.Hour,
	}, {
		Name:              ControlStream,
		Description:       "agora commands to runners, subject agora.control.<dispatch_id>",
		Subjects:          []string{ControlSubjects},
		Storage:           jetstream.FileStorage,
		MaxMsgsPerSubject: 1,
		MaxAge:            7 * 24 * time.Hour,
	}}
	for _, cfg := range streams {
		if err := b.ensureStream(ctx, cfg); err != nil {
			return err
		}
	}
	if err := b.retryEnsure(ctx, "consumer "+QueueConsumer, func() error {
		_, err := b.js.CreateOrUpdateConsumer(ctx, QueueStream, jetstream.ConsumerConfig{
			Durable:       QueueConsumer,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       QueueAckWait,
			MaxAckPending: -1,
			FilterSubject: QueueSubjects,
		})
		return err
	}); err != nil {
		return fmt.Errorf("ensure consumer %s on %s: %w", QueueConsumer, QueueStream, err)
	}
	if _, err := b.ensureKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      ClaimBucket,
		Description: "which runner owns which dispatch",
		Storage:     jetstream.FileStorage,
		TTL:         30 * 24 * time.Hour,
	}); err != nil {
		return err
	}
	return nil
}

// Enqueue puts req on the work queue. Enqueuing the same dispatch id again
// within a day is a no-op (it reports duplicate).
func (b *Bus) Enqueue(ctx context.Context, req schemas.DispatchRequest) (duplicate bool, err error) {
	id := req.Spec.DispatchID
	if err := ValidateDispatchID(id); err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return false, fmt.Errorf("enqueue %s: %w", id, err)
	}
	if err := schemas.Validate(schemas.SchemaRequest, data); err != nil {
		return false, fmt.Errorf("enqueue %s: %w", id, err)
	}
	// A request's msg-id is its dispatch id, so sending it again is
	// harmless: while the queue's leader is being elected (a cluster node
	// died) the publish is retried within EnsureWindow and ctx.
	var ack *jetstream.PubAck
	err = b.retryEnsure(ctx, "enqueue "+id, func() error {
		var err error
		ack, err = b.js.PublishMsg(ctx, &nats.Msg{
			Subject: QueueSubject(id), Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{id}},
		})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("enqueue %s: %w", id, err)
	}
	return ack.Duplicate, nil
}

// QueuedCount is how many requests wait in the queue, not yet taken by a
// runner: the queue consumer's pending count, which follows an
// acknowledged publish, ack or removal a moment later (read it by waiting
// for the count expected, as bustest.WaitQueued does).
func (b *Bus) QueuedCount(ctx context.Context) (uint64, error) {
	c, err := b.js.Consumer(ctx, QueueStream, QueueConsumer)
	if err != nil {
		return 0, fmt.Errorf("look up queue consumer: %w", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue consumer info: %w", err)
	}
	return info.NumPending, nil
}

// Delivery is one request handed to a runner.
type Delivery struct {
	Request *schemas.DispatchRequest
	// Err is set instead of Request when the message was not a valid request.
	Err       error
	Delivered uint64 // how many times it was handed out, 1 the first time
	msg       jetstream.Msg
}

// Ack removes the request from the queue: its outcome is recorded.
func (d *Delivery) Ack(ctx context.Context) error { return d.msg.DoubleAck(ctx) }

// InProgress tells JetStream the runner is still working on it.
func (d *Delivery) InProgress() error { return d.msg.InProgress() }

// Nak hands the request back for redelivery after delay.
func (d *Delivery) Nak(delay time.Duration) error { return d.msg.NakWithDelay(delay) }

// Term drops a request that can never succeed (it does not parse).
func (d *Delivery) Term() error { return d.msg.Term() }

// Fetch waits up to maxWait for one request. It returns nil, nil when none
// came.
func (b *Bus) Fetch(ctx context.Context, maxWait time.Duration) (*Delivery, error) {
	c, err := b.js.Consumer(ctx, QueueStream, QueueConsumer)
	if err != nil {
		return nil, fmt.Errorf("look up queue consumer: %w", err)
	}
	if maxWait < time.Second {
		maxWait = time.Second // the server's minimum for a pull request
	}
	// The caller's ctx ends the wait early (a stopping runner); maxWait
	// bounds it otherwise.
	fctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	batch, err := c.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return nil, nil
		}
		return nil, fmt.Errorf("fetch from %s: %w", QueueStream, err)
	}
	// A batch of one: the channel yields the message, or closes empty.
	if msg, ok := <-batch.Messages(); ok {
		d := &Delivery{msg: msg}
		if md, err := msg.Metadata(); err == nil {
			d.Delivered = md.NumDelivered
		}
		d.Request, d.Err = schemas.ParseDispatchRequest(msg.Data())
		return d, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("fetch from %s: %w", QueueStream, err)
	}
	return nil, nil
}

// Control commands.
const ControlCancel = "cancel"

// Cancel asks for dispatchID to be cancelled. When no runner has claimed it
// yet, the cancel claims it first: no runner will start it, and Cancel
// publishes its dispatch.cancelled and removes the request from the queue
// (queued=true). Otherwise the command reaches the runner that holds it,
// which stops the container; the worker reports dispatch.cancelled.
func (b *Bus) Cancel(ctx context.Context, dispatchID string) (queued bool, err error) {
	if err := ValidateDispatchID(dispatchID); err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	// The durable command first: a runner that claims between our two steps
	// still sees it before it starts the container.
	if _, err := b.js.Publish(ctx, ControlSubject(dispatchID), []byte(ControlCancel)); err != nil {
		return false, fmt.Errorf("cancel %s: publish command: %w", dispatchID, err)
	}
	_, err = b.CreateClaim(ctx, dispatchID, Claim{State: ClaimCancelled, Heartbeat: time.Now().UTC()})
	if errors.Is(err, ErrClaimed) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cancel %s: %w", dispatchID, err)
	}
	st, err := b.js.Stream(ctx, QueueStream)
	if err == nil {
		err = st.Purge(ctx, jetstream.WithPurgeSubject(QueueSubject(dispatchID)))
	}
	if err != nil {
		return true, fmt.Errorf("cancel %s: remove from queue: %w", dispatchID, err)
	}
	if _, err := b.PublishEvent(ctx, CancelledBeforeStart(dispatchID)); err != nil {
		return true, fmt.Errorf("cancel %s: %w", dispatchID, err)
	}
	return true, nil
}

// CancelledBeforeStart is the terminal event of a dispatch cancelled while
// it waited in the queue: no container ever ran.
func CancelledBeforeStart(dispatchID string) schemas.Event {
	zero, ms := 0, int64(0)
	return schemas.Event{Kind: schemas.KindCancelled, DispatchID: dispatchID, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms}
}

// CancelRequested reports whether a cancel command exists for dispatchID.
func (b *Bus) CancelRequested(ctx context.Context, dispatchID string) (bool, error) {
	st, err := b.js.Stream(ctx, ControlStream)
	if err != nil {
		return false, fmt.Errorf("look up %s: %w", ControlStream, err)
	}
	msg, err := st.GetLastMsgForSubject(ctx, ControlSubject(dispatchID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read control for %s: %w", dispatchID, err)
	}
	return string(msg.Data) == ControlCancel, nil
}

// WatchControl calls fn for each new command until ctx is done. It returns
// once the subscription is in place.
func (b *Bus) WatchControl(ctx context.Context, fn func(dispatchID, command string)) error {
	c, err := b.js.OrderedConsumer(ctx, ControlStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{ControlSubjects},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", ControlStream, err)
	}
	cc, err := c.Consume(func(msg jetstream.Msg) {
		fn(msg.Subject()[len(ControlSubjectPrefix):], string(msg.Data()))
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", ControlStream, err)
	}
	go func() {
		<-ctx.Done()
		cc.Stop()
	}()
	return nil
}

// PublishLog sends one chunk of a dispatch's output to agora.logs.<id> for
// live followers. Fire and forget: the durable copy is in storage.
func (b *Bus) PublishLog(dispatchID string, chunk []byte) error {
	return b.nc.Publish(LogSubject(dispatchID), chunk)
}

// SubscribeLogs calls fn with each live log chunk of dispatchID until the
// returned stop is called.
func (b *Bus) SubscribeLogs(dispatchID string, fn func([]byte)) (stop func(), err error) {
	sub, err := b.nc.Subscribe(LogSubject(dispatchID), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("subscribe to logs of %s: %w", dispatchID, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// SubscribeEvents calls fn with each event published from now on for
// dispatchID ("" for every dispatch), as it is stored. A live view for
// watchers and benchmarks; durable consumers read the stream instead.
func (b *Bus) SubscribeEvents(dispatchID string, fn func(schemas.Event)) (stop func(), err error) {
	subjects := []string{EventSubjects}
	if dispatchID != "" {
		// Its own subject and its runners'.
		subjects = []string{EventSubject(dispatchID), EventSubject(dispatchID) + ".>"}
	}
	var subs []*nats.Subscription
	stop = func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for _, subject := range subjects {
		sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
			var ev schemas.Event
			if err := schemas.Decode("event", m.Data, &ev); err != nil {
				b.log.Warn("event that does not decode; skipped", "subject", m.Subject, "error", err)
				return
			}
			fn(ev)
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("subscribe to %s: %w", subject, err)
		}
		subs = append(subs, sub)
	}
	if err := b.nc.Flush(); err != nil {
		stop()
		return nil, fmt.Errorf("subscribe to %s: %w", subjects[0], err)
	}
	return stop, nil
}

// SubscribeAllLogs calls fn with every live log chunk of every dispatch
// until the returned stop is called.
func (b *Bus) SubscribeAllLogs(fn func(dispatchID string, chunk []byte)) (stop func(), err error) {
	sub, err := b.nc.Subscribe(LogSubjectPrefix+"*", func(m *nats.Msg) {
		fn(m.Subject[len(LogSubjectPrefix):], m.Data)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to logs: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
