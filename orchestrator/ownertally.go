package orchestrator

import (
	"maps"

	"github.com/agoradev/agora/wire"
)

// ownerTally counts every owner's tasks by state, kept by the task cache as
// tasks change, so a submitter's list (whose summary counts only its own
// tasks) reads its counts instead of walking every task: at 100,000 tasks
// that walk was most of the list's time under load (docs/capacity.md, "The
// API under load"). Owners are the cache's interned name indexes (0: none).
type ownerTally map[uint32]map[wire.State]int

// add counts one task of owner in state s.
func (t ownerTally) add(owner uint32, s wire.State) {
	if owner == 0 {
		return
	}
	m := t[owner]
	if m == nil {
		m = map[wire.State]int{}
		t[owner] = m
	}
	m[s]++
}

// remove uncounts one task of owner in state s.
func (t ownerTally) remove(owner uint32, s wire.State) {
	m := t[owner]
	if m == nil {
		return
	}
	if m[s]--; m[s] <= 0 {
		delete(m, s)
	}
	if len(m) == 0 {
		delete(t, owner)
	}
}

// of is a copy of owner's counts (empty for no owner).
func (t ownerTally) of(owner uint32) map[wire.State]int {
	if m := t[owner]; m != nil {
		return maps.Clone(m)
	}
	return map[wire.State]int{}
}
