package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/natsserver/natstest"
)

// TestKVOperation: a bucket's message is read as the operation nats.go's KV
// reads it as (kvs.get), header by header.
func TestKVOperation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hdr  nats.Header
		want jetstream.KeyValueOp
	}{
		{"no headers", nil, jetstream.KeyValuePut},
		{"other headers", nats.Header{"Nats-Msg-Id": {"x"}}, jetstream.KeyValuePut},
		{"delete", nats.Header{"KV-Operation": {"DEL"}}, jetstream.KeyValueDelete},
		{"purge", nats.Header{"KV-Operation": {"PURGE"}}, jetstream.KeyValuePurge},
		{"unknown operation", nats.Header{"KV-Operation": {"NOPE"}}, jetstream.KeyValuePut},
		{"operation before marker reason", nats.Header{"KV-Operation": {"DEL"}, "Nats-Marker-Reason": {"MaxAge"}}, jetstream.KeyValueDelete},
		{"server marker: max age", nats.Header{"Nats-Marker-Reason": {"MaxAge"}}, jetstream.KeyValuePurge},
		{"server marker: purge", nats.Header{"Nats-Marker-Reason": {"Purge"}}, jetstream.KeyValuePurge},
		{"server marker: remove", nats.Header{"Nats-Marker-Reason": {"Remove"}}, jetstream.KeyValueDelete},
		{"server marker: unknown", nats.Header{"Nats-Marker-Reason": {"Other"}}, jetstream.KeyValuePut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kvOperation(tc.hdr); got != tc.want {
				t.Errorf("kvOperation(%v) = %v, want %v", tc.hdr, got, tc.want)
			}
		})
	}
}

// TestLeaderReadsAgreeWithNatsGo: after each of a sequence of writes, a
// read through the stream's leader (what a replicated bucket does) returns
// what nats.go's own KV Get returns — value, revision, not found — and a
// Create through the leader succeeds exactly when nats.go's would. One
// server, where both reads see the same store.
func TestLeaderReadsAgreeWithNatsGo(t *testing.T) {
	t.Parallel()
	b := queueBus(t)
	ctx := context.Background()
	direct, err := b.KeyValueMarkers(ctx, "leader_reads", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if direct.nc != nil {
		t.Fatal("a one-replica bucket reads through the leader; want the direct get")
	}
	leader := *direct
	leader.nc, leader.js = b.nc, b.js

	type read struct {
		value string
		rev   uint64
		err   error
	}
	get := func(k *KV, key string) read {
		v, rev, err := k.Get(ctx, key)
		switch {
		case errors.Is(err, ErrKeyNotFound):
			err = ErrKeyNotFound
		case err != nil:
			err = fmt.Errorf("other: %w", err)
		}
		return read{string(v), rev, err}
	}
	steps := []struct {
		name  string
		write func() error
		key   string
	}{
		{"never written", func() error { return nil }, "k1"},
		{"created", func() error { _, err := direct.Create(ctx, "k1", []byte("one")); return err }, "k1"},
		{"put", func() error { _, err := direct.Put(ctx, "k1", []byte("two")); return err }, "k1"},
		{"updated", func() error {
			_, rev, err := direct.Get(ctx, "k1")
			if err == nil {
				_, err = direct.Update(ctx, "k1", []byte("three"), rev)
			}
			return err
		}, "k1"},
		{"an empty value", func() error { _, err := direct.Put(ctx, "k1", nil); return err }, "k1"},
		{"deleted (a DEL marker)", func() error { return direct.kv.Delete(ctx, "k1") }, "k1"},
		{"created over the DEL marker by the leader", func() error { _, err := leader.Create(ctx, "k1", []byte("four")); return err }, "k1"},
		{"purged (agora's Delete)", func() error { return direct.Delete(ctx, "k1") }, "k1"},
		{"created over the purge marker by the leader", func() error { _, err := leader.Create(ctx, "k1", []byte("five")); return err }, "k1"},
		{"a key with dots and slashes", func() error { _, err := direct.Put(ctx, "a.b/c=d-e_f", []byte("six")); return err }, "a.b/c=d-e_f"},
		{"another key's neighbour", func() error { _, err := direct.Put(ctx, "k10", []byte("seven")); return err }, "k1"},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if d, l := get(direct, s.key), get(&leader, s.key); d != l {
			t.Errorf("%s: leader read %+v, nats.go read %+v", s.name, l, d)
		}
	}

	t.Run("create over a live key", func(t *testing.T) {
		if _, err := leader.Create(ctx, "k1", []byte("x")); !errors.Is(err, ErrKeyExists) {
			t.Errorf("leader Create of a live key = %v, want ErrKeyExists", err)
		}
		if _, err := direct.Create(ctx, "k1", []byte("x")); !errors.Is(err, ErrKeyExists) {
			t.Errorf("nats.go Create of a live key = %v, want ErrKeyExists", err)
		}
	})
	t.Run("invalid keys", func(t *testing.T) {
		for _, key := range []string{"", ".a", "a.", "a..b", "a b", "a*", ">"} {
			if _, _, err := leader.Get(ctx, key); !errors.Is(err, jetstream.ErrInvalidKey) {
				t.Errorf("leader Get(%q) = %v, want jetstream.ErrInvalidKey", key, err)
			}
			if _, err := leader.Create(ctx, key, nil); !errors.Is(err, jetstream.ErrInvalidKey) {
				t.Errorf("leader Create(%q) = %v, want jetstream.ErrInvalidKey", key, err)
			}
		}
	})
}

// TestReadYourWritesOnCluster: on a 3-node cluster with an R3 bucket, a
// Get made through another node just after a write returns that write —
// its value and revision, or not found after a delete — and a Create
// through a third node of a key just deleted succeeds. Writers work side
// by side on keys of their own, each step writing through one node's
// connection and reading through the next one's, so reads land where a
// replica may lag behind the leader; with nats.go's direct get this failed.
func TestReadYourWritesOnCluster(t *testing.T) {
	t.Parallel()
	c := natstest.StartCluster(t, 3)
	ctx := context.Background()
	var buckets []*KV
	for i, s := range c.Servers {
		b, err := Connect(ctx, s.ClientURL(), Options{Name: fmt.Sprintf("node%d", i), Replicas: 3, Logger: natstest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		kv, err := b.KeyValue(ctx, "read_your_writes", "test")
		if err != nil {
			t.Fatal(err)
		}
		if kv.nc == nil {
			t.Fatal("an R3 bucket reads with a direct get; want through the leader")
		}
		buckets = append(buckets, kv)
	}
	const writers, steps = 32, 150
	var mu sync.Mutex
	var mismatches []string
	miss := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		mismatches = append(mismatches, fmt.Sprintf(format, args...))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", w)
			var rev uint64
			for i := range steps {
				wr, r, third := buckets[(w+i)%3], buckets[(w+i+1)%3], buckets[(w+i+2)%3]
				value := fmt.Sprintf("v%d", i)
				var err error
				switch {
				case i%10 == 9: // delete, read not found, create again through a third node
					if err = wr.Delete(ctx, key); err != nil {
						miss("%s step %d: Delete: %v", key, i, err)
						return
					}
					if v, got, err := r.Get(ctx, key); !errors.Is(err, ErrKeyNotFound) {
						miss("%s step %d: Get after Delete = %q at %d, %v; want not found", key, i, v, got, err)
					}
					if rev, err = third.Create(ctx, key, []byte(value)); err != nil {
						miss("%s step %d: Create after Delete: %v", key, i, err)
						return
					}
					r = wr
				case rev == 0:
					rev, err = wr.Create(ctx, key, []byte(value))
				default:
					rev, err = wr.Update(ctx, key, []byte(value), rev)
				}
				if err != nil {
					miss("%s step %d: write: %v", key, i, err)
					return
				}
				got, gotRev, err := r.Get(ctx, key)
				if err != nil || string(got) != value || gotRev != rev {
					miss("%s step %d: Get = %q at revision %d, %v; want %q at %d", key, i, got, gotRev, err, value, rev)
				}
			}
		})
	}
	wg.Wait()
	if len(mismatches) > 0 {
		t.Errorf("%d of %d reads after a write did not see it; the first: %v", len(mismatches), writers*steps, mismatches[:min(5, len(mismatches))])
	}
}
