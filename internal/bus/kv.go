package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/schemas"
)

// KV errors callers branch on.
var (
	ErrKeyNotFound = errors.New("key not found")
	ErrKeyExists   = errors.New("key exists")
	// ErrRevision: the key changed since it was read (compare-and-swap lost).
	ErrRevision = errors.New("key changed since it was read")
)

// KV is one JetStream key-value bucket; every write can be a
// compare-and-swap on the key's revision, and every Get sees the writes
// acknowledged before it (read-your-writes), on one server or a cluster
// (see Get).
type KV struct {
	kv     jetstream.KeyValue
	bucket string
	// markerTTL, when set, is how long the marker Delete leaves stays in
	// the bucket's history (KeyValueMarkers).
	markerTTL time.Duration
	// nc and js, when set, are the connection Get and Create read the
	// bucket's stream leader through: the stream is replicated, so a
	// direct get may be answered by a replica behind the leader.
	nc *nats.Conn
	js jetstream.JetStream
}

// newKV is bucket as this package hands it out: read through its stream's
// leader when the stream has more than one replica (replicas as the stream
// had them when the bucket was opened).
func (b *Bus) newKV(kv jetstream.KeyValue, bucket string, replicas int) *KV {
	k := &KV{kv: kv, bucket: bucket}
	if replicas > 1 {
		k.nc, k.js = b.nc, b.js
	}
	return k
}

// lookupKV opens bucket, which must exist (jetstream.ErrBucketNotFound
// otherwise), as newKV does.
func (b *Bus) lookupKV(ctx context.Context, bucket string) (*KV, error) {
	kv, err := b.js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	replicas := 1
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		replicas = bs.StreamInfo().Config.Replicas
	}
	return b.newKV(kv, bucket, replicas), nil
}

// KeyValue opens bucket, creating it (file storage, Options.Replicas) when
// absent.
func (b *Bus) KeyValue(ctx context.Context, bucket, description string) (*KV, error) {
	kv, err := b.ensureKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: description, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// KeyValueTTL opens bucket as KeyValue does, its entries kept ttl after
// their last write: for records that matter only for a while (ended
// sessions), so the bucket cannot grow without bound.
func (b *Bus) KeyValueTTL(ctx context.Context, bucket, description string, ttl time.Duration) (*KV, error) {
	kv, err := b.ensureKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: description, Storage: jetstream.FileStorage, TTL: ttl,
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// KeyValueMarkers opens bucket as KeyValue does, with the marker that
// Delete leaves removed by the server markerTTL later (JetStream's limit
// marker TTL, NATS 2.11+): a bucket whose keys come and go — a task per
// key, removed when it expires — keeps no trace of the keys it held, where
// a plain bucket keeps one marker per deleted key forever.
func (b *Bus) KeyValueMarkers(ctx context.Context, bucket, description string, markerTTL time.Duration) (*KV, error) {
	kv, err := b.ensureKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: description, Storage: jetstream.FileStorage, LimitMarkerTTL: markerTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	kv.markerTTL = markerTTL
	return kv, nil
}

func (k *KV) wrap(op, key string, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		err = ErrKeyNotFound
	case errors.Is(err, jetstream.ErrKeyExists):
		err = ErrKeyExists
	default:
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			err = fmt.Errorf("%w: %w", ErrRevision, err)
		}
	}
	return fmt.Errorf("%s %s/%s: %w", op, k.bucket, key, err)
}

// Get returns key's value and revision (ErrKeyNotFound when it has none
// or was deleted).
//
// On a replicated bucket it asks the stream's leader (getFromLeader):
// nats.go's KV reads with a direct get, which any replica answers, and a
// replica may not have applied the latest acknowledged write yet — on a
// cluster a record read back just after it was written could be the one
// before (docs/capacity.md). The leader has applied every write it
// acknowledged. A bucket with one replica keeps the direct get: its one
// server is the leader.
func (k *KV) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if k.nc != nil {
		value, rev, err := k.getFromLeader(ctx, key)
		if err != nil {
			return nil, 0, k.wrap("get", key, err)
		}
		return value, rev, nil
	}
	e, err := k.kv.Get(ctx, key)
	if err != nil {
		return nil, 0, k.wrap("get", key, err)
	}
	return e.Value(), e.Revision(), nil
}

// Create stores key only when it does not exist (ErrKeyExists otherwise).
func (k *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.CreateTTL(ctx, key, value, 0)
}

// CreateTTL is Create of a key the server removes ttl later (0: never);
// the bucket must be opened with KeyValueMarkers.
func (k *KV) CreateTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	if k.nc != nil {
		rev, err := k.createOnLeader(ctx, key, value, ttl)
		if err != nil {
			return 0, k.wrap("create", key, err)
		}
		return rev, nil
	}
	var opts []jetstream.KVCreateOpt
	if ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	rev, err := k.kv.Create(ctx, key, value, opts...)
	if err != nil {
		return 0, k.wrap("create", key, err)
	}
	return rev, nil
}

// Update stores key only when its revision is still rev (ErrRevision otherwise).
func (k *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	rev, err := k.kv.Update(ctx, key, value, rev)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// nats.go reports a lost compare-and-swap as "key exists".
		return 0, fmt.Errorf("update %s/%s: %w: %w", k.bucket, key, ErrRevision, err)
	}
	if err != nil {
		return 0, k.wrap("update", key, err)
	}
	return rev, nil
}

// Put stores key whatever was there.
func (k *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := k.kv.Put(ctx, key, value)
	if err != nil {
		return 0, k.wrap("put", key, err)
	}
	return rev, nil
}

// Delete removes key (and its history); a missing key is no error.
func (k *KV) Delete(ctx context.Context, key string) error {
	var opts []jetstream.KVDeleteOpt
	if k.markerTTL > 0 {
		opts = append(opts, jetstream.PurgeTTL(k.markerTTL))
	}
	if err := k.kv.Purge(ctx, key, opts...); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return k.wrap("delete", key, err)
	}
	return nil
}

// Size is what the bucket holds: its messages (live values, their kept
// history and delete markers) and their bytes on the server.
func (k *KV) Size(ctx context.Context) (msgs, bytes uint64, err error) {
	st, err := k.kv.Status(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("status of bucket %s: %w", k.bucket, err)
	}
	return st.Values(), st.Bytes(), nil
}

// Each calls fn for every live key and its value and revision.
func (k *KV) Each(ctx context.Context, fn func(key string, value []byte, rev uint64) error) error {
	w, err := k.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("read bucket %s: %w", k.bucket, err)
	}
	defer w.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("read bucket %s: the watch ended before it caught up", k.bucket)
			}
			if e == nil { // caught up
				return nil
			}
			if err := fn(e.Key(), e.Value(), e.Revision()); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Follow calls fn with every live key's value, then caughtUp once, then fn
// for every change (value nil when deleted) until ctx ends — one ordered
// watch, so no change falls between the snapshot and the updates. When the
// watch ends for another reason, lost is called. It returns once watching.
func (k *KV) Follow(ctx context.Context, fn func(key string, value []byte, rev uint64), caughtUp, lost func()) error {
	w, err := k.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("follow bucket %s: %w", k.bucket, err)
	}
	go pump(ctx, w, fn, caughtUp, lost)
	return nil
}

// Watch calls fn for every change from now on (value nil when deleted)
// until ctx ends. It returns once watching.
func (k *KV) Watch(ctx context.Context, fn func(key string, value []byte, rev uint64)) error {
	w, err := k.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", k.bucket, err)
	}
	go pump(ctx, w, fn, func() {}, func() {})
	return nil
}

// WatchLost is Watch that calls lost when the watch ends for another
// reason than ctx (the connection closed, the server gone).
func (k *KV) WatchLost(ctx context.Context, fn func(key string, value []byte, rev uint64), lost func()) error {
	w, err := k.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", k.bucket, err)
	}
	go pump(ctx, w, fn, func() {}, lost)
	return nil
}

// pump hands a watcher's entries to fn until ctx ends or the watcher does.
func pump(ctx context.Context, w jetstream.KeyWatcher, fn func(key string, value []byte, rev uint64), caughtUp, lost func()) {
	defer w.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() == nil {
					lost()
				}
				return
			}
			if e == nil {
				caughtUp()
				continue
			}
			var v []byte
			if e.Operation() == jetstream.KeyValuePut {
				v = e.Value()
			}
			fn(e.Key(), v, e.Revision())
		case <-ctx.Done():
			return
		}
	}
}

// PublishAccepted records that the orchestrator accepted and queued a
// dispatch: the one kind the orchestrator publishes.
func (b *Bus) PublishAccepted(ctx context.Context, spec *schemas.DispatchSpec) error {
	ev := schemas.Event{Kind: schemas.KindAccepted, DispatchID: spec.DispatchID, TaskID: spec.TaskID,
		Round: spec.EffectiveRound(), Time: time.Now().UTC(), Subagent: spec.Subagent.Name, Runtime: spec.Subagent.Runtime}
	_, err := b.PublishEvent(ctx, ev)
	return err
}
