package client_test

import (
	"context"
	"errors"
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

// The client and the API in front of the real orchestrator on an embedded
// NATS server (no runner: rounds stay queued): the operations that need no
// container, and every error the orchestrator returns arriving as its
// sentinel.
func TestClient_RealOrchestrator(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
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

	req := wire.SubmitRequest{TaskID: "t-api-1", Labels: map[string]string{"batch": "7"},
		Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{"/bin/true"}}}
	task, err := c.Submit(ctx, req)
	if err != nil || task.ID != "t-api-1" || task.State != wire.StateQueued || task.Attention.Kind != "none" {
		t.Fatalf("Submit = %+v, %v; want t-api-1 queued, attention none", task, err)
	}
	if again, err := c.Submit(ctx, req); err != nil || again.ID != task.ID || !again.CreatedAt.Equal(task.CreatedAt) {
		t.Errorf("Submit again = %+v, %v; want the same task", again, err)
	}
	other := req
	other.Route = "memory"
	if _, err := c.Submit(ctx, other); !errors.Is(err, wire.ErrConflict) {
		t.Errorf("Submit with the same id and another request = %v, want ErrConflict", err)
	}
	bad := req
	bad.TaskID = "not an id!"
	if _, err := c.Submit(ctx, bad); !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("Submit with a bad id = %v, want ErrInvalidRequest", err)
	}

	page, err := c.List(ctx, wire.ListOptions{Label: "batch=7"})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != task.ID || page.Summary.Counts[wire.StateQueued] != 1 {
		t.Errorf("List(batch=7) = %d tasks, %+v, %v; want t-api-1 and 1 queued", len(page.Tasks), page.Summary, err)
	}
	st, err := c.Stats(ctx, wire.StatsOptions{Label: "batch=7", Since: task.CreatedAt})
	if err != nil || st.Total.Tasks != 1 || st.Total.Dispatches != 1 || st.Total.Questions != 0 || len(st.Subagents) != 1 || st.Subagents[0].Subagent != "noop" {
		t.Errorf("Stats(batch=7) = %+v, %v; want one task of noop, one dispatch, no question", st, err)
	}
	if st, err := c.Stats(ctx, wire.StatsOptions{Subagent: "other"}); err != nil || st.Total.Tasks != 0 || len(st.Subagents) != 0 {
		t.Errorf("Stats(subagent other) = %+v, %v; want nothing", st, err)
	}
	if _, err := c.Stats(ctx, wire.StatsOptions{Label: "batch"}); !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("Stats with a label without = : %v, want ErrInvalidRequest", err)
	}
	if qs, err := c.Questions(ctx, wire.PageOptions{}); err != nil || len(qs.Questions) != 0 || qs.NextCursor != "" {
		t.Errorf("Questions = %+v, %v; want none", qs, err)
	}
	if _, err := c.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "yes"}); !errors.Is(err, wire.ErrNoQuestion) {
		t.Errorf("Answer a queued task = %v, want ErrNoQuestion", err)
	}

	// Wait follows the task until the cancel below ends it.
	waited := make(chan *wire.Task, 1)
	go func() {
		w, err := c.Wait(ctx, task.ID)
		if err != nil {
			t.Errorf("Wait = %v", err)
		}
		waited <- w
	}()
	if task, err = c.Cancel(ctx, task.ID); err != nil || task.State != wire.StateCancelled {
		t.Fatalf("Cancel = %+v, %v; want cancelled", task, err)
	}
	select {
	case w := <-waited:
		if w == nil || w.State != wire.StateCancelled {
			t.Errorf("Wait returned %+v, want the cancelled task", w)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return within 30s of the cancel")
	}
	if _, err := c.Cancel(ctx, task.ID); !errors.Is(err, wire.ErrWrongState) {
		t.Errorf("Cancel a cancelled task = %v, want ErrWrongState", err)
	}
	if _, err := c.Continue(ctx, task.ID, "more", ""); !errors.Is(err, wire.ErrWrongState) {
		t.Errorf("Continue a cancelled task = %v, want ErrWrongState", err)
	}
	if task, err = c.Respawn(ctx, task.ID); err != nil || task.State != wire.StateQueued {
		t.Errorf("Respawn = %+v, %v; want queued", task, err)
	}
	if err := c.Remove(ctx, task.ID); err != nil {
		t.Errorf("Remove = %v", err)
	}
	if _, err := c.Get(ctx, task.ID); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Get a removed task = %v, want ErrNotFound", err)
	}
}
