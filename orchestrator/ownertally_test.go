package orchestrator

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/wire"
)

// The counts a submitter's list shows are kept as tasks change; they stay
// what counting every task of the owner gives, through updates, an owner
// change by a value of another replica, removals and stale values.
func TestOwnerTally(t *testing.T) {
	type step struct {
		id, owner string
		state     wire.State
		rev       uint64
		remove    bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"created", []step{{"a", "ann", wire.StateQueued, 1, false}, {"b", "bob", wire.StateQueued, 2, false}}},
		{"updated", []step{{"a", "ann", wire.StateQueued, 1, false}, {"a", "ann", wire.StateRunning, 2, false}, {"a", "ann", wire.StateFinished, 3, false}}},
		{"an older value arriving late", []step{{"a", "ann", wire.StateRunning, 5, false}, {"a", "ann", wire.StateQueued, 4, false}}},
		{"removed", []step{{"a", "ann", wire.StateQueued, 1, false}, {"b", "ann", wire.StateQueued, 2, false}, {"a", "", "", 3, true}}},
		{"removed, then an older value", []step{{"a", "ann", wire.StateQueued, 1, false}, {"a", "", "", 3, true}, {"a", "ann", wire.StateRunning, 2, false}}},
		{"no owner", []step{{"a", "", wire.StateQueued, 1, false}, {"b", "ann", wire.StateQueued, 2, false}}},
		{"another owner on a later value", []step{{"a", "ann", wire.StateQueued, 1, false}, {"a", "bob", wire.StateRunning, 2, false}}},
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTaskCache(natstest.Logger(t))
			c.setReady(true)
			for _, s := range tt.steps {
				if s.remove {
					c.remove(s.id, s.rev)
					continue
				}
				data, _ := json.Marshal(wire.Task{ID: s.id, Owner: s.owner, State: s.state, CreatedAt: base})
				c.put(s.id, data, s.rev)
			}
			for _, owner := range []string{"", "ann", "bob", "carol"} {
				want := map[wire.State]int{}
				for _, e := range c.order {
					if !e.dropped && owner != "" && c.names.name(e.owner) == owner {
						want[e.state()]++
					}
				}
				c.mu.RLock()
				got := c.ownerCounts(owner)
				c.mu.RUnlock()
				if !maps.Equal(got, want) {
					t.Errorf("ownerCounts(%q) = %v, want %v (counted)", owner, got, want)
				}
			}
		})
	}
}

// BenchmarkOwnerCounts is a submitter's list summary at 100,000 tasks of
// ten owners: kept counts (before: a walk of every task per list).
func BenchmarkOwnerCounts(b *testing.B) {
	c := newTaskCache(natstest.Logger(b))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		data, _ := json.Marshal(wire.Task{ID: fmt.Sprint(i), Owner: fmt.Sprintf("owner-%d", i%10), State: wire.StateFinished,
			CreatedAt: base.Add(time.Duration(i) * time.Second)})
		c.put(fmt.Sprint(i), data, uint64(i+1))
	}
	c.setReady(true)
	for b.Loop() {
		c.mu.RLock()
		_ = c.ownerCounts("owner-3")
		c.mu.RUnlock()
	}
}
