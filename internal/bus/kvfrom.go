package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketState is what a reader of a saved copy of a bucket checks it
// against: the bucket's stream, when it was created (a bucket deleted and
// made again is another one), and its last revision.
type BucketState struct {
	Name    string
	Created time.Time
	LastRev uint64
}

// State returns the bucket's BucketState.
func (k *KV) State(ctx context.Context) (BucketState, error) {
	st, err := k.kv.Status(ctx)
	if err != nil {
		return BucketState{}, fmt.Errorf("status of bucket %s: %w", k.bucket, err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return BucketState{}, fmt.Errorf("status of bucket %s: no stream info", k.bucket)
	}
	info := bs.StreamInfo()
	return BucketState{Name: k.bucket, Created: info.Created.UTC(), LastRev: info.State.LastSeq}, nil
}

// FollowFrom is Follow of the changes stored at revision from and after
// (from ≥ 1): fn gets each value and removal (value nil) still in the
// bucket from there on — with a history of one, the latest of every key
// changed since — then caughtUp once, then every later change.
func (k *KV) FollowFrom(ctx context.Context, from uint64, fn func(key string, value []byte, rev uint64), caughtUp, lost func()) error {
	if from == 0 {
		return fmt.Errorf("follow bucket %s from revision 0", k.bucket)
	}
	w, err := k.kv.WatchAll(ctx, jetstream.ResumeFromRevision(from))
	if err != nil {
		return fmt.Errorf("follow bucket %s from revision %d: %w", k.bucket, from, err)
	}
	go pump(ctx, w, fn, caughtUp, lost)
	return nil
}
