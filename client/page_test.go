package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestClient_Pages: through the API in front of the real orchestrator, a
// walk by cursor lists every task once while tasks are submitted and
// cancelled between pages; ListAll follows the pages; the list view
// leaves out the input that Get returns; a bad limit or cursor is a 400
// that errors.Is ErrInvalidRequest.
func TestClient_Pages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	o, err := orchestrator.New(orchestrator.Config{Bus: bustest.Bus(t), Store: storagetest.FileStore(t), Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatalf("start orchestrator: %v", err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	h, err := api.NewHandler(api.Config{Service: o, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "", client.WithHTTPClient(srv.Client()))

	input := json.RawMessage(`{"blob":"` + strings.Repeat("y", 32<<10) + `"}`)
	submit := func(id string) {
		t.Helper()
		_, err := c.Submit(ctx, wire.SubmitRequest{TaskID: id, Input: input, Labels: map[string]string{"walk": "1"},
			Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{"/bin/true"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	const n = 11
	for i := range n {
		submit(fmt.Sprintf("w-%02d", i))
	}
	seen := map[string]int{}
	cursor := ""
	for page := 1; ; page++ {
		p, err := c.List(ctx, wire.ListOptions{Label: "walk=1", Limit: 4, Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if len(p.Tasks) > 4 {
			t.Fatalf("page %d has %d tasks, limit 4", page, len(p.Tasks))
		}
		for _, task := range p.Tasks {
			seen[task.ID]++
			if len(task.Request.Input) != 0 {
				t.Errorf("%s in a list page carries its input", task.ID)
			}
		}
		if got := p.Summary.Counts[wire.StateQueued] + p.Summary.Counts[wire.StateCancelled]; got != n+page-1 {
			t.Errorf("page %d counts %v; want %d tasks in all", page, p.Summary.Counts, n+page-1)
		}
		// Between pages: a new task, and an old one ending.
		submit(fmt.Sprintf("x-%d", page))
		if _, err := c.Cancel(ctx, fmt.Sprintf("w-%02d", page)); err != nil {
			t.Fatal(err)
		}
		if p.NextCursor == "" {
			if page != 3 {
				t.Errorf("%d pages of 4 for %d tasks; want 3", page, n)
			}
			break
		}
		cursor = p.NextCursor
	}
	for i := range n {
		if id := fmt.Sprintf("w-%02d", i); seen[id] != 1 {
			t.Errorf("%s listed %d times, want once", id, seen[id])
		}
	}
	if len(seen) != n {
		t.Errorf("the walk listed %d tasks, want the %d there when it began", len(seen), n)
	}

	all, summary, err := c.ListAll(ctx, wire.ListOptions{Label: "walk=1", Limit: 2})
	if err != nil || len(all) != n+3 || summary.Counts[wire.StateCancelled] != 3 {
		t.Errorf("ListAll = %d tasks, %v, %v; want %d and 3 cancelled", len(all), summary.Counts, err, n+3)
	}
	cancelled, _, err := c.ListAll(ctx, wire.ListOptions{State: wire.StateCancelled})
	if err != nil || len(cancelled) != 3 || cancelled[0].ID != "w-03" || cancelled[0].Attention.Action != "agora respawn w-03" {
		t.Errorf("ListAll(cancelled) = %d tasks, %v; want w-03, w-02, w-01 with their attention", len(cancelled), err)
	}
	if full, err := c.Get(ctx, "w-03"); err != nil || len(full.Request.Input) < 32<<10 {
		t.Errorf("Get(w-03) lacks its input: %v", err)
	}

	for _, opts := range []wire.ListOptions{{Limit: wire.MaxPageLimit + 1}, {Limit: -1}, {Cursor: "not-a-cursor"}} {
		_, err := c.List(ctx, opts)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != 400 || !errors.Is(err, wire.ErrInvalidRequest) {
			t.Errorf("List(%+v) = %v; want a 400 that is ErrInvalidRequest", opts, err)
		}
	}
	if _, err := c.Questions(ctx, wire.PageOptions{Limit: 1001}); err == nil || !strings.Contains(err.Error(), "limit") || !strings.Contains(err.Error(), "1000") {
		t.Errorf("Questions(limit 1001) = %v; want an error naming limit and 1000", err)
	}
	if qs, err := c.QuestionsAll(ctx); err != nil || len(qs) != 0 {
		t.Errorf("QuestionsAll = %v, %v; want none", qs, err)
	}
}
