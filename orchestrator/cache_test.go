package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/schemas"
)

func TestTaskCacheOrdering(t *testing.T) {
	c := newTaskCache(natstest.Logger(t))
	value := func(state State) []byte {
		data, _ := json.Marshal(Task{ID: "t", State: state})
		return data
	}
	count := func() (n int, state State) {
		c.each(func(t *Task) { n++; state = t.State })
		return n, state
	}
	if c.each(func(*Task) {}) {
		t.Fatal("a cache that has not caught up claims to be current")
	}
	c.setReady(true)
	c.put("t", value(StateRunning), 5)
	c.put("t", value(StateQueued), 4) // older, arriving late
	if n, s := count(); n != 1 || s != StateRunning {
		t.Errorf("after an older value: %d tasks, %s; want the newer running", n, s)
	}
	c.remove("t", 0)
	c.put("t", value(StateRunning), 5) // the watch delivering what was removed
	if n, _ := count(); n != 0 {
		t.Error("a removed task came back with an older value")
	}
	c.put("t", value(StateQueued), 9) // the same id submitted again
	if n, s := count(); n != 1 || s != StateQueued {
		t.Errorf("a task submitted again after removal: %d tasks, %s", n, s)
	}
	c.put("u", value(StateQueued), 11)
	c.put("t", []byte("not json"), 10)
	if !c.each(func(*Task) {}) {
		t.Error("one task that does not decode made the whole cache untrusted")
	}
	if n, s := count(); n != 1 || s != StateQueued {
		t.Errorf("after a bad record: %d tasks, %s; want only the other task", n, s)
	}
}

// TestTaskCacheAcrossReplicas: a listing reflects this process's writes at
// once and another replica's as soon as the watch brings them.
func TestTaskCacheAcrossReplicas(t *testing.T) {
	t.Parallel()
	b, store := testenv.Bus(t), testenv.FileStore(t)
	start := func() *Orchestrator {
		o, err := New(Config{Bus: b, Store: store, Logger: natstest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Stop(context.Background()) })
		return o
	}
	one, two := start(), start()
	ids := func(o *Orchestrator) map[string]State {
		tasks, _, err := o.List(t.Context(), ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]State{}
		for _, task := range tasks {
			out[task.ID] = task.State
		}
		return out
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually("both caches current", func() bool {
		return one.store.cache.each(func(*Task) {}) && two.store.cache.each(func(*Task) {})
	})
	sub := schemas.Subagent{Name: "s", Runtime: schemas.RuntimeExec, Command: []string{"true"}}
	if _, err := one.Submit(t.Context(), SubmitRequest{TaskID: "c-1", Subagent: sub}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ids(one)["c-1"]; !ok {
		t.Error("the replica that submitted does not list the task right away")
	}
	eventually("the other replica lists the task", func() bool { _, ok := ids(two)["c-1"]; return ok })
	if _, err := two.Cancel(t.Context(), "c-1"); err != nil {
		t.Fatal(err)
	}
	eventually("the first replica sees the cancel", func() bool { return ids(one)["c-1"] == StateCancelled })
	if err := one.Remove(t.Context(), "c-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ids(one)["c-1"]; ok {
		t.Error("the replica that removed the task still lists it")
	}
	eventually("the other replica drops the task", func() bool { _, ok := ids(two)["c-1"]; return !ok })
}
