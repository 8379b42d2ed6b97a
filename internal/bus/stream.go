package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// AGORA_EVENTS limits; the package comment explains the choice.
const (
	EventMaxAge          = 30 * 24 * time.Hour
	EventDuplicateWindow = 24 * time.Hour
)

func eventStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        EventStream,
		Description: "agora lifecycle events, subject agora.events.<dispatch_id>, msg-id <dispatch_id>.<kind>",
		Subjects:    []string{EventSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      EventMaxAge,
		Duplicates:  EventDuplicateWindow,
	}
}

// EnsureEventStream creates AGORA_EVENTS (with Options.Replicas), or
// updates its subjects, max age and duplicate window when they differ;
// replicas, placement and other settings an operator chose are kept. It is idempotent, and processes
// racing to create the stream all succeed.
func (b *Bus) EnsureEventStream(ctx context.Context) error {
	return b.retryEnsure(ctx, "stream "+EventStream, func() error { return b.ensureEventStream(ctx) })
}

func (b *Bus) ensureEventStream(ctx context.Context) error {
	if err := b.ready(); errors.Is(err, ErrClosed) {
		return fmt.Errorf("ensure stream %s: %w", EventStream, err)
	}
	want := eventStreamConfig()
	want.Replicas = b.opts.Replicas
	st, err := b.js.Stream(ctx, EventStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// JetStream accepts a create with the identical config of an
		// existing stream, so a concurrent creator of ours is no error.
		_, err = b.js.CreateStream(ctx, want)
		if err == nil {
			b.log.Info("created stream", "stream", EventStream)
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", EventStream, err)
		}
		// Created meanwhile with another config: bring it in line below.
		st, err = b.js.Stream(ctx, EventStream)
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", EventStream, err)
	}
	have := st.CachedInfo().Config
	if have.Replicas != want.Replicas {
		b.log.Warn("stream keeps its replicas", "stream", EventStream, "replicas", have.Replicas, "nats_replicas", want.Replicas,
			"hint", fmt.Sprintf("change them with: nats stream edit %s --replicas %d", EventStream, want.Replicas))
	}
	if slices.Equal(have.Subjects, want.Subjects) && have.MaxAge == want.MaxAge && have.Duplicates == want.Duplicates {
		return nil
	}
	upd := have
	upd.Subjects, upd.MaxAge, upd.Duplicates = want.Subjects, want.MaxAge, want.Duplicates
	if _, err := b.js.UpdateStream(ctx, upd); err != nil {
		return fmt.Errorf("update stream %s: %w", EventStream, err)
	}
	b.log.Info("updated stream", "stream", EventStream,
		"subjects", want.Subjects, "max_age", want.MaxAge, "duplicate_window", want.Duplicates)
	return nil
}
