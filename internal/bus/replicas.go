package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultReplicas is Options.Replicas's default: one copy, what a single
// NATS server (agora serve's embedded one) can hold.
const DefaultReplicas = 1

// MaxReplicas is the most replicas JetStream keeps of a stream.
const MaxReplicas = 5

// replicasFor is how many replicas the stream called name should be given:
// Options.Replicas when it does not exist yet, the ones it has when it does.
// Replicas are chosen when a stream or bucket is created; an existing one
// keeps its own (a warning says so when they differ from the setting), so a
// process started with another --nats-replicas never fails on, nor scales,
// what the cluster already holds. An operator changes them with
// `nats stream edit <stream> --replicas N` (a bucket's stream is KV_<bucket>);
// agora's own updates then keep the new count.
func (b *Bus) replicasFor(ctx context.Context, name string) (int, error) {
	st, err := b.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return b.opts.Replicas, nil
	case err != nil:
		return 0, fmt.Errorf("look up stream %s: %w", name, err)
	}
	have := st.CachedInfo().Config.Replicas
	if have != b.opts.Replicas {
		b.log.Warn("stream keeps its replicas", "stream", name, "replicas", have, "nats_replicas", b.opts.Replicas,
			"hint", fmt.Sprintf("change them with: nats stream edit %s --replicas %d", name, b.opts.Replicas))
	}
	return have, nil
}

// ensureStream creates the stream of cfg, or updates it to cfg, with the
// replicas replicasFor picks.
func (b *Bus) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	return b.retryEnsure(ctx, "stream "+cfg.Name, func() error {
		r, err := b.replicasFor(ctx, cfg.Name)
		if err != nil {
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
		cfg.Replicas = r
		if _, err := b.js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
		return nil
	})
}

// ensureKeyValue creates the bucket of cfg, or updates it to cfg, with the
// replicas replicasFor picks for its stream.
func (b *Bus) ensureKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (*KV, error) {
	var kv jetstream.KeyValue
	var replicas int
	err := b.retryEnsure(ctx, "bucket "+cfg.Bucket, func() error {
		r, err := b.replicasFor(ctx, "KV_"+cfg.Bucket)
		if err != nil {
			return fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
		cfg.Replicas = r
		if kv, err = b.js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			return fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
		if err := b.narrowDuplicateWindow(ctx, "KV_"+cfg.Bucket); err != nil {
			return fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
		replicas = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b.newKV(kv, cfg.Bucket, replicas), nil
}

// BucketDuplicateWindow is the de-duplication window of a bucket's stream:
// the server's least. nats.go gives every bucket 2 minutes, but no put
// carries a Nats-Msg-Id (a bucket's writes are kept apart by revision),
// while a server recovering the stream loads every message of the last
// window to rebuild the duplicates it never has: at a restart just after
// a burst of writes, a million tasks read from disk (3.5 GB) and the
// per-block subject state they leave on the heap for minutes
// (docs/capacity.md, "A million stored tasks").
const BucketDuplicateWindow = 100 * time.Millisecond

// narrowDuplicateWindow sets the de-duplication window of the bucket
// stream name to BucketDuplicateWindow. CreateOrUpdateKeyValue has just
// set it to nats.go's 2 minutes; the stream a restart recovers has the
// narrow one.
func (b *Bus) narrowDuplicateWindow(ctx context.Context, name string) error {
	st, err := b.js.Stream(ctx, name)
	if err != nil {
		return err
	}
	cfg := st.CachedInfo().Config
	if cfg.Duplicates == BucketDuplicateWindow {
		return nil
	}
	cfg.Duplicates = BucketDuplicateWindow
	_, err = b.js.UpdateStream(ctx, cfg)
	return err
}

// EnsureWindow bounds how long creating or updating a stream, bucket or
// consumer is retried while JetStream cannot answer yet: a cluster electing
// the stream's leader (at first start, or after the node that led it died)
// answers no request for that stream for a few seconds, and processes
// starting together race to create the same stream.
const EnsureWindow = time.Minute

// transient reports whether err, from a JetStream API call made with ctx,
// may go away by itself: no answer in time, no leader, no quorum yet, not
// connected, or another process creating the same stream just now.
func (b *Bus) transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(b.ready(), ErrNotConnected) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamNameInUse, jsErrCodeClusterNoPeers, jsErrCodeInsufficientResources:
			return true
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse)
}

// JetStream error codes nats.go has no constant for.
const (
	jsErrCodeClusterNoPeers        jetstream.ErrorCode = 10005 // no suitable peers for placement (yet)
	jsErrCodeInsufficientResources jetstream.ErrorCode = 10023
)

// retryEnsure runs fn until it succeeds, fails for good, ctx ends or
// EnsureWindow has passed, logging each transient failure.
func (b *Bus) retryEnsure(ctx context.Context, what string, fn func() error) error {
	deadline := time.Now().Add(EnsureWindow)
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !b.transient(ctx, err) || time.Now().After(deadline) {
			return err
		}
		b.log.Warn("JetStream not ready; retrying", "what", what, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}
