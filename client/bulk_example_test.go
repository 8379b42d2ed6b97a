package client_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

// Select pages through the list for a batch's failed and expired tasks;
// Bulk respawns each through its own endpoint. A task whose state changed
// in between is skipped, not failed.
func ExampleClient_Bulk() {
	batch := func(id string, st wire.State) *wire.Task {
		return &wire.Task{ID: id, State: st, Request: wire.SubmitRequest{Labels: map[string]string{wire.BatchLabel: "nightly"}}}
	}
	pages := map[string]wire.TaskPage{
		"":   {Tasks: []*wire.Task{batch("nightly-4", wire.StateFailed), batch("nightly-3", wire.StateFinished)}, NextCursor: "p2"},
		"p2": {Tasks: []*wire.Task{batch("nightly-2", wire.StateExpired), batch("nightly-1", wire.StateFailed)}},
	}
	svc := &apitest.Service{
		ListFunc: func(_ context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
			if opts.Label != wire.BatchLabel+"=nightly" {
				return wire.TaskPage{}, nil
			}
			return pages[opts.Cursor], nil
		},
		RespawnFunc: func(_ context.Context, id string) (*wire.Task, error) {
			if id == "nightly-1" { // respawned by somebody else meanwhile
				return nil, fmt.Errorf("task %s is queued; respawn takes a failed, cancelled or expired task: %w", id, wire.ErrWrongState)
			}
			return &wire.Task{ID: id, State: wire.StateQueued}, nil
		},
	}
	h, err := api.NewHandler(api.Config{Service: svc})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx := context.Background()
	c := client.New(srv.URL, "")
	picked, err := c.Select(ctx, client.Selector{Batch: "nightly", States: []wire.State{wire.StateFailed, wire.StateExpired}})
	if err != nil {
		log.Fatal(err)
	}
	var ids []string
	for _, p := range picked {
		ids = append(ids, p.TaskID)
	}
	fmt.Printf("%d tasks match: %v\n", len(ids), ids)
	for _, it := range c.Bulk(ctx, ids, client.BulkOptions{Workers: 2}, c.Respawn) {
		fmt.Println(it.TaskID, it.Result, it.State)
	}
	// Output:
	// 3 tasks match: [nightly-4 nightly-2 nightly-1]
	// nightly-4 done queued
	// nightly-2 done queued
	// nightly-1 skipped
}
