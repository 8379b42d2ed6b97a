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

// TestFollowAll: the tasks come back ended, in the order asked, once each
// has ended — one ended before, one while followed; an unknown id is its
// not-found error, an empty id is skipped, and the others are not held up
// by either.
func TestFollowAll(t *testing.T) {
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

	for _, id := range []string{"fa-1", "fa-2"} {
		req := wire.SubmitRequest{TaskID: id, Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{"/bin/true"}}}
		if _, err := c.Submit(ctx, req); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
	}
	if _, err := c.Cancel(ctx, "fa-1"); err != nil {
		t.Fatalf("cancel fa-1: %v", err)
	}
	// fa-2 is still queued (no runner); it ends while followed.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _ = c.Cancel(ctx, "fa-2")
	}()
	tasks, errs := c.FollowAll(ctx, []string{"fa-1", "", "nope", "fa-2"}, client.FollowOptions{Poll: 100 * time.Millisecond})
	if len(tasks) != 4 || len(errs) != 4 {
		t.Fatalf("FollowAll returned %d tasks, %d errors; want 4 of each", len(tasks), len(errs))
	}
	for _, i := range []int{0, 3} {
		if errs[i] != nil || tasks[i] == nil || tasks[i].State != wire.StateCancelled {
			t.Errorf("FollowAll[%d] = %+v, %v; want the task cancelled", i, tasks[i], errs[i])
		}
	}
	if tasks[0].ID != "fa-1" || tasks[3].ID != "fa-2" {
		t.Errorf("FollowAll order: %s, %s; want fa-1, fa-2", tasks[0].ID, tasks[3].ID)
	}
	if tasks[1] != nil || errs[1] != nil {
		t.Errorf("FollowAll of an empty id = %+v, %v; want nil, nil", tasks[1], errs[1])
	}
	if !errors.Is(errs[2], wire.ErrNotFound) || tasks[2] != nil {
		t.Errorf("FollowAll of an unknown id = %+v, %v; want ErrNotFound", tasks[2], errs[2])
	}
}
