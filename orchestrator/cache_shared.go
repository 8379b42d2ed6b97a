package orchestrator

import "github.com/agoradev/agora/wire"

// eachOpenShared calls fn with the list view of every open task, not a
// copy: fn must not change it, and may keep it (a change to a task makes
// a new view; the cache never changes one it holds).
func (c *taskCache) eachOpenShared(fn func(*wire.Task)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.open {
		fn(e.task)
	}
}
