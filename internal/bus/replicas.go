package bus

import (
	"context"
	"errors"
	"fmt"

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
	r, err := b.replicasFor(ctx, cfg.Name)
	if err != nil {
		return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	cfg.Replicas = r
	if _, err := b.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	return nil
}

// ensureKeyValue creates the bucket of cfg, or updates it to cfg, with the
// replicas replicasFor picks for its stream.
func (b *Bus) ensureKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	r, err := b.replicasFor(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
	}
	cfg.Replicas = r
	kv, err := b.js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
