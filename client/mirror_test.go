package client_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestTaskSetApply(t *testing.T) {
	t.Parallel()
	v := func(id string, rev uint64, st wire.State) wire.Change {
		return wire.Change{TaskID: id, Task: &wire.Task{ID: id, Revision: rev, State: st}}
	}
	steps := []struct {
		name string
		ch   wire.Change
		took bool
	}{
		{"a new task", v("t-1", 1, wire.StateQueued), true},
		{"the same version again", v("t-1", 1, wire.StateQueued), false},
		{"a newer version", v("t-1", 3, wire.StateNeedsInput), true},
		{"an older version after it", v("t-1", 2, wire.StateRunning), false},
		{"a change without a task", wire.Change{TaskID: "t-1"}, false},
		{"another task", v("t-2", 1, wire.StateRunning), true},
		{"the removal of one not held", wire.Change{TaskID: "t-9", Removed: true}, false},
		{"the removal of one held", wire.Change{TaskID: "t-2", Removed: true}, true},
	}
	s := client.NewTaskSet("")
	for _, st := range steps {
		if got := s.Apply(st.ch); got != st.took {
			t.Errorf("%s: Apply = %v, want %v", st.name, got, st.took)
		}
	}
	if tasks := s.Tasks(); len(tasks) != 1 || tasks[0].Revision != 3 {
		t.Errorf("Tasks = %+v; want t-1 at revision 3", tasks)
	}
	if sum := s.Summary(); sum.Text != "1 needs input" || sum.Counts[wire.StateNeedsInput] != 1 {
		t.Errorf("Summary = %+v; want 1 needs input", sum)
	}
	if sum := client.NewTaskSet("").Summary(); sum.Text != "no tasks" {
		t.Errorf("empty Summary = %q; want no tasks", sum.Text)
	}
	one := client.NewTaskSet("t-1")
	if one.Apply(v("t-2", 1, wire.StateQueued)) || !one.Apply(v("t-1", 1, wire.StateQueued)) {
		t.Error("a set of t-1 took t-2, or not t-1")
	}
}

// Mirror against the API in front of the real orchestrator (no runner:
// rounds stay queued): the task there first, one submitted and one removed
// while it follows. A change made before the stream is open comes with the
// next read, so the test reads often: either way must deliver it.
func TestMirror(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Store: store, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start orchestrator: %v", err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	h, err := api.NewHandler(api.Config{Service: o, Tokens: []string{"alice:s3cret"}, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "s3cret", client.WithHTTPClient(srv.Client()))
	submit := func(id string) {
		t.Helper()
		req := wire.SubmitRequest{TaskID: id,
			Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{"/bin/true"}}}
		if _, err := c.Submit(ctx, req); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
	}
	submit("m-1")

	set := client.NewTaskSet("")
	changes := make(chan wire.Change, 64)
	settled := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() {
		done <- c.Mirror(ctx, set, 300*time.Millisecond, func(ch wire.Change) { changes <- ch }, func() { settled <- struct{}{} })
	}()
	next := func(what string, ok func(wire.Change) bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ch := <-changes:
				if ok(ch) {
					return
				}
			case <-deadline:
				t.Fatalf("no change: %s", what)
			}
		}
	}
	next("m-1 from the first read", func(ch wire.Change) bool { return ch.TaskID == "m-1" && ch.Task != nil })
	select {
	case <-settled:
	case <-time.After(30 * time.Second):
		t.Fatal("settled not called after the first read")
	}
	submit("m-2")
	next("m-2", func(ch wire.Change) bool { return ch.TaskID == "m-2" && ch.Task != nil })
	if _, err := c.Cancel(ctx, "m-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, "m-1"); err != nil {
		t.Fatal(err)
	}
	next("m-1 removed", func(ch wire.Change) bool { return ch.TaskID == "m-1" && ch.Removed })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Mirror after ctx ended = %v, want nil", err)
	}
	if tasks := set.Tasks(); len(tasks) != 1 || tasks[0].ID != "m-2" {
		t.Errorf("set holds %d tasks; want m-2 alone", len(tasks))
	}

	// The first read failing is Mirror's error.
	if err := c.Mirror(t.Context(), client.NewTaskSet("no-such"), time.Hour, nil, nil); err == nil {
		t.Error("Mirror of a task that does not exist = nil, want its error")
	}
}
