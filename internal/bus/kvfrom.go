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

// PutAll stores the values next yields (ok false ends them) in bucket
// with asynchronous publishes, up to window unacknowledged at once: a
// bulk load (a benchmark's million tasks) that waiting for each
// acknowledgement in turn would make several times slower. It returns the
// first publish that failed.
func (b *Bus) PutAll(ctx context.Context, bucket string, window int, next func() (key string, value []byte, ok bool)) error {
	var batch []jetstream.PubAckFuture
	wait := func() error {
		for _, f := range batch {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("put %s/%s: %w", bucket, f.Msg().Subject, err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		batch = batch[:0]
		return nil
	}
	for {
		key, value, ok := next()
		if !ok {
			return wait()
		}
		f, err := b.js.PublishAsync("$KV."+bucket+"."+key, value)
		if err != nil {
			return fmt.Errorf("put %s/%s: %w", bucket, key, err)
		}
		if batch = append(batch, f); len(batch) >= window {
			if err := wait(); err != nil {
				return err
			}
		}
	}
}
