package runner

import (
	"context"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// TestOutcomeKeptThroughNATSOutage: NATS is down when a dispatch ends, for
// longer than one publish window. The runner used to log the failed
// publish, remove the container and acknowledge the request, so the outcome
// was lost and its task ran forever. Now it keeps the container and the
// request and stores the terminal event once NATS is back: exactly one.
func TestOutcomeKeptThroughNATSOutage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.PublishWindow = time.Second })
	h.start()
	req := request("touch /workspace/ready; sleep 2; echo done")
	id := req.Spec.DispatchID
	h.enqueue(req)
	h.awaitReady(id)
	h.srv.Shutdown()
	// The container ends and the publish window passes twice over.
	testutil.Eventually(t, time.Minute, "the container to exit", func() bool {
		cs, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id, LabelRunner: h.cfg.ID})
		return err == nil && len(cs) == 1 && cs[0].State == "exited"
	})
	time.Sleep(3 * h.cfg.PublishWindow)
	cs, err := h.engine.List(context.Background(), map[string]string{compute.LabelDispatchID: id, LabelRunner: h.cfg.ID})
	if err != nil || len(cs) != 1 {
		t.Fatalf("while NATS is down the exited container must stay until its outcome is stored: %v, %v", cs, err)
	}
	if h.runner.lookup(id) == nil {
		t.Error("the runner let go of a dispatch whose outcome is not stored")
	}
	h.srv = natstest.Restart(t, h.srv)
	ev := h.terminal(id, time.Minute)
	if ev.Kind != schemas.KindFinished {
		t.Errorf("terminal event = %s %+v, want dispatch.finished", ev.Kind, ev.Failure)
	}
	h.settled(id)
}
