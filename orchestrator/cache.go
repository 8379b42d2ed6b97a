package orchestrator

import (
	"encoding/json"
	"log/slog"
	"sync"
)

// taskCache holds every task decoded, kept current by one ordered watch of
// the tasks bucket (so changes by other replicas arrive too) and by this
// process's own writes (so a caller reads what it just wrote). List and
// Questions read it instead of decoding the whole bucket on every call:
// docs/benchmarks.md, "Attention at scale". Until the watch has caught up,
// or after it is lost, they fall back to reading the bucket.
type taskCache struct {
	log *slog.Logger

	mu    sync.RWMutex
	ready bool
	tasks map[string]*Task
	// gone holds the revision at which a task was removed, so an older
	// value still in flight does not bring it back.
	gone map[string]uint64
}

func newTaskCache(log *slog.Logger) *taskCache {
	return &taskCache{log: log, tasks: map[string]*Task{}, gone: map[string]uint64{}}
}

// put stores the task value of revision rev unless a newer one is there.
func (c *taskCache) put(id string, value []byte, rev uint64) {
	var t Task
	if err := json.Unmarshal(value, &t); err != nil {
		// One bad record must not take every listing down with it: it is
		// left out (Get still reports the error for that task).
		c.log.Warn("task cache: a task does not decode; leaving it out of listings", "task_id", id, "error", err)
		c.remove(id, 0)
		return
	}
	t.Revision = rev
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.tasks[id]; cur != nil && cur.Revision >= rev {
		return
	}
	if g, ok := c.gone[id]; ok {
		if rev <= g {
			return
		}
		delete(c.gone, id)
	}
	c.tasks[id] = &t
}

// remove drops a task removed at revision rev; 0 means "whatever is
// cached now" (a removal by this process, whose revision it does not get).
func (c *taskCache) remove(id string, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev == 0 {
		if cur := c.tasks[id]; cur != nil {
			rev = cur.Revision
		}
	}
	if rev > c.gone[id] {
		c.gone[id] = rev
	}
	delete(c.tasks, id)
}

// each calls fn with a copy of every cached task (fn may change the copy's
// own fields, not what they point to). It returns false, calling nothing,
// when the cache is not to be trusted.
func (c *taskCache) each(fn func(*Task)) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return false
	}
	for _, t := range c.tasks {
		cp := *t
		fn(&cp)
	}
	return true
}

func (c *taskCache) setReady(ready bool) {
	c.mu.Lock()
	c.ready = ready
	c.mu.Unlock()
}
