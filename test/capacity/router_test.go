package capacity

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/wire"
)

// TestSlowAnswererHoldsOnlyItsTask: while a webhook answerer takes its
// time over one task's question, another task's question is answered and
// that task finishes — the router routes tasks side by side (the single
// router that made a burst of questions queue up on a NATS cluster,
// docs/capacity.md) — and the slow task goes on once its webhook declines.
func TestSlowAnswererHoldsOnlyItsTask(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	asked := make(chan struct{}, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent) // declines: the route goes on to lookup
	}))
	t.Cleanup(hook.Close)
	t.Cleanup(free) // before the server closes: runs first

	s := newStack(t, shape{orchestrators: 1, runners: 1, slots: 2, natsNodes: 1})
	ctx := context.Background()
	slow := fmt.Sprintf("cap-%d-slow", os.Getpid())
	if _, err := s.orchs[0].Submit(ctx, wire.SubmitRequest{TaskID: slow, Subagent: twoRounds(), Route: "webhook:" + hook.URL + "/slow=5m,lookup"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(2 * time.Minute):
		t.Fatal("the webhook was never asked")
	}
	ids, _ := s.submit(t, "beside", 2)
	s.wait(t, ids, time.Minute) // fails while the slow webhook holds the router
	if task, err := s.orchs[0].Get(ctx, slow); err != nil || task.State != wire.StateNeedsInput {
		t.Fatalf("the slow task is %v (%v) while its webhook thinks; want needs_input", task.State, err)
	}
	free()
	s.wait(t, []string{slow}, time.Minute)
	task, err := s.orchs[0].Get(ctx, slow)
	if err != nil || task.State != wire.StateFinished || task.Rounds[0].Answer.Channel != "lookup" {
		t.Fatalf("slow task = %+v, %v; want finished, answered by lookup after the webhook declined", task, err)
	}
}
