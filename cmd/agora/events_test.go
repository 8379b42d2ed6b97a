package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestEventsParked: a parked event shows in status and in 'agora events
// parked' with its error, and retry applies it (here the task is fine by
// now) so it is parked no more; bad input is a usage error.
func TestEventsParked(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	s.submit(t, "pk-1")
	zero, ms := 0, int64(5)
	parked := bus.ParkedEvent{Sequence: 77, Subject: "agora.events.pk-1-r1", DispatchID: "pk-1-r1", TaskID: "pk-1",
		Kind: schemas.KindFinished, Error: "apply dispatch.finished of pk-1-r1 to task pk-1: nats: timeout", Deliveries: 8,
		ParkedAt: time.Now().UTC(), Event: schemas.Event{Kind: schemas.KindFinished, DispatchID: "pk-1-r1", TaskID: "pk-1",
			Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms}}
	data, _ := json.Marshal(parked)
	// Parked by another replica: every orchestrator follows the bucket.
	kv, err := s.bus.KeyValue(t.Context(), orchestrator.ParkedBucket, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "77", data); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the parked event in status", func() bool {
		return agora(t, s.env, "status").code == 0 && s.parkedNow(t) == 1
	})
	agora(t, s.env, "status").want(t, "status names the parked event", 0,
		[]string{"attention: 1 event could not be applied", "agora events parked"}, nil)
	agora(t, s.env, "events", "parked").want(t, "the parked list", 0,
		[]string{"77", "dispatch.finished", "pk-1-r1", "nats: timeout", "agora events retry SEQ"}, nil)
	r := agora(t, s.env, "events", "parked", "--json")
	var list wire.ParkedEventList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.ParkedEvents) != 1 || list.ParkedEvents[0].Sequence != 77 {
		t.Errorf("events parked --json = %v (%v)", r, err)
	}

	agora(t, s.env, "events", "retry", "seventy").want(t, "a SEQ that is not a number", 2, nil, []string{"SEQ \"seventy\""})
	agora(t, s.env, "events").want(t, "no subcommand", 2, nil, []string{"want parked, retry SEQ or discard SEQ"})
	agora(t, s.env, "events", "retry", "77").want(t, "retry", 0, []string{"parked event 77 applied"}, nil)
	s.waitState(t, "pk-1", wire.StateFinished)
	agora(t, s.env, "events", "parked").want(t, "nothing parked after the retry", 0, []string{"no parked events"}, nil)
	agora(t, s.env, "events", "discard", "77").want(t, "discard an event that is not parked", 1, nil, []string{"77"})
}

func (s *taskServer) parkedNow(t *testing.T) int {
	t.Helper()
	p, _, err := s.orch.ParkedEvents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(p)
}
