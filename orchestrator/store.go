package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// Buckets the orchestrator keeps its state in.
const (
	TaskBucket   = "agora_tasks"
	IndexBucket  = "agora_dispatch_index"
	MemoryBucket = "agora_memory"
)

// errUndecodable: a stored task record does not decode.
var errUndecodable = errors.New("the stored record does not decode")

// errNoChange tells update that fn decided not to write.
var errNoChange = errors.New("no change")

// store is the tasks bucket with compare-and-swap updates.
type store struct {
	tasks *bus.KV
	index *bus.KV
	// cache, when set, learns every write this process makes at once.
	cache *taskCache
	log   *slog.Logger
}

func openStore(ctx context.Context, b *bus.Bus, markerTTL time.Duration, log *slog.Logger) (*store, error) {
	// Removed and expired tasks leave a delete marker each; the server
	// drops it after MarkerTTL, so the history is bounded by the tasks
	// kept, not by every task ever run.
	tasks, err := b.KeyValueMarkers(ctx, TaskBucket, "agora tasks, one key per task id", markerTTL)
	if err != nil {
		return nil, err
	}
	index, err := b.KeyValueMarkers(ctx, IndexBucket, "agora dispatch id → task id", markerTTL)
	if err != nil {
		return nil, err
	}
	return &store{tasks: tasks, index: index, log: log}, nil
}

// get, create and update check the task id first (wire.CheckTaskID): an id
// such as ">" or "a b" is wire.ErrInvalidID, never a KV error, whatever path
// it came by.
func (s *store) get(ctx context.Context, id string) (*wire.Task, error) {
	if err := wire.CheckTaskID(id); err != nil {
		return nil, err
	}
	data, rev, err := s.tasks.Get(ctx, id)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var t wire.Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("decode task %s: %w: %w", id, errUndecodable, err)
	}
	t.Revision = rev
	return &t, nil
}

func (s *store) create(ctx context.Context, t *wire.Task) error {
	if err := wire.CheckTaskID(t.ID); err != nil {
		return err
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	rev, err := s.tasks.Create(ctx, t.ID, data)
	if err != nil {
		return err
	}
	t.Revision = rev
	if s.cache != nil {
		s.cache.put(t.ID, data, rev)
	}
	return nil
}

// update reads the task, applies fn and writes it back if the revision is
// unchanged, retrying on a lost race. fn may return errNoChange.
func (s *store) update(ctx context.Context, id string, fn func(*wire.Task) error) (*wire.Task, error) {
	return s.updateFrom(ctx, id, nil, fn)
}

// updateFrom is update whose first try starts from read, a copy of the
// task this caller read or wrote at read.Revision (nil: read it now): the
// write is still a compare-and-swap on that revision, so a task changed
// since is read again and fn applied to it, as update does. It saves the
// read (a round trip and a decode) where the caller has the task in hand:
// an answer, the enqueue that follows a write (docs/capacity.md, "The API
// under load"). fn may change the copy it is given, never read itself.
func (s *store) updateFrom(ctx context.Context, id string, read *wire.Task, fn func(*wire.Task) error) (*wire.Task, error) {
	if read != nil {
		cp := *read
		cp.Rounds = slices.Clone(read.Rounds)
		cp.History = slices.Clone(read.History)
		read = &cp
	}
	// A lost race is retried at once (the next read sees the winner), up to
	// 51 tries; every other error stands.
	return backoff.Retry(ctx, func() (*wire.Task, error) {
		t, err := read, error(nil)
		if read = nil; t == nil {
			t, err = s.get(ctx, id)
		}
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		if err := fn(t); errors.Is(err, errNoChange) {
			return t, nil
		} else if err != nil {
			return nil, backoff.Permanent(err)
		}
		data, err := json.Marshal(t)
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		rev, err := s.tasks.Update(ctx, id, data, t.Revision)
		if errors.Is(err, bus.ErrRevision) {
			return nil, err
		}
		if err != nil {
			return nil, backoff.Permanent(err)
		}
		t.Revision = rev
		if s.cache != nil {
			s.cache.put(id, data, rev)
		}
		return t, nil
	}, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(51), backoff.WithMaxElapsedTime(0))
}

// kvMemory keeps answers for the memory answerer in JetStream KV.
type kvMemory struct{ kv *bus.KV }

var _ answer.MemoryStore = kvMemory{}

// kvKey hashes a memory key: KV keys allow few characters.
func kvKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func (m kvMemory) Recall(ctx context.Context, key string) (answer.Reply, bool, error) {
	data, _, err := m.kv.Get(ctx, kvKey(key))
	if errors.Is(err, bus.ErrKeyNotFound) {
		return answer.Reply{}, false, nil
	}
	if err != nil {
		return answer.Reply{}, false, err
	}
	var r answer.Reply
	if err := json.Unmarshal(data, &r); err != nil {
		return answer.Reply{}, false, err
	}
	return r, true, nil
}

func (m kvMemory) Remember(ctx context.Context, key string, r answer.Reply) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = m.kv.Put(ctx, kvKey(key), data)
	return err
}

// removedKey is the index bucket's record of how many tasks of an id were
// removed; no dispatch id contains '.', so it cannot collide with one.
func removedKey(taskID string) string { return "removed." + taskID }

// generation is the generation a new task of this id gets: 1, or one more
// than the removed tasks of the same id.
func (s *store) generation(ctx context.Context, taskID string) (int, error) {
	data, _, err := s.index.Get(ctx, removedKey(taskID))
	if errors.Is(err, bus.ErrKeyNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(string(data))
	if err != nil {
		return 0, fmt.Errorf("removed-task record of %s: %w", taskID, err)
	}
	return n + 1, nil
}

// noteRemoved records that the task of this id and generation was removed.
// The first removal of an id is recorded for removedTTL, after which no
// queue message id, claim or event of its dispatches is left to collide
// with (the event stream keeps 30 days), so expiring a million tasks a day
// does not leave a million records a day for good; an id removed again
// (its record exists) is overwritten and kept.
func (s *store) noteRemoved(ctx context.Context, t *wire.Task) error {
	value := []byte(strconv.Itoa(max(t.Generation, 1)))
	_, err := s.index.CreateTTL(ctx, removedKey(t.ID), value, removedTTL)
	if errors.Is(err, bus.ErrKeyExists) {
		_, err = s.index.Put(ctx, removedKey(t.ID), value)
	}
	return err
}

// removedTTL is how long the first removal of a task id is remembered:
// the events' retention and a day.
const removedTTL = bus.EventMaxAge + 24*time.Hour
