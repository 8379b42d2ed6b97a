package capacity

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/agoradev/agora/wire"
)

// TestMeasuringEngine runs two-round tasks end to end on the measuring
// engine: the real worker asks, the lookup rule answers, the orchestrator
// re-dispatches with the answer and the partial_state, the second round
// checks both and leaves a result. It keeps the engine the capacity
// benchmark stands on from rotting.
func TestMeasuringEngine(t *testing.T) {
	s := newStack(t, shape{orchestrators: 1, runners: 1, slots: 2, natsNodes: 1})
	ids, _ := s.submit(t, "e2e", 3)
	s.wait(t, ids, 2*time.Minute)
	for _, id := range ids {
		task, err := s.orchs[0].Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != wire.StateFinished || len(task.Rounds) != 2 {
			data, _ := json.MarshalIndent(task, "", "  ")
			t.Fatalf("task %s ended %s with %d rounds, want finished in 2:\n%s", id, task.State, len(task.Rounds), data)
		}
		r1, r2 := task.Rounds[0], task.Rounds[1]
		if r1.Question == nil || r1.Question.Question != "Pick a colour" || r1.Answer == nil || r1.Answer.Value != "green" || r1.Answer.Channel != "lookup" {
			t.Errorf("task %s round 1: question %+v, answer %+v", id, r1.Question, r1.Answer)
		}
		if string(r1.Question.PartialState) != `{"seen": 1}` && string(r1.Question.PartialState) != `{"seen":1}` {
			t.Errorf("task %s round 1 partial_state = %s", id, r1.Question.PartialState)
		}
		var res struct {
			Colour string `json:"colour"`
			Round  int    `json:"round"`
		}
		if err := json.Unmarshal(r2.Result, &res); err != nil || res.Colour != "green" || res.Round != 2 {
			t.Errorf("task %s result = %s (%v), want colour green from round 2", id, r2.Result, err)
		}
		for _, r := range task.Rounds {
			if ph := s.traces.of(r.DispatchID); ph == nil {
				t.Errorf("dispatch %s never passed the runner", r.DispatchID)
			}
		}
	}
}

// TestClusterQuestionsRouted: on a 3-node NATS cluster, where a KV read
// may come from a replica a write has not reached yet, every question is
// routed and every task finishes. A router that trusted such a read saw
// the task as it was before it asked, forgot the question, and about one
// task in ten waited on needs_input for ever (docs/capacity.md).
func TestClusterQuestionsRouted(t *testing.T) {
	// Opt-in until the other stale reads are fixed: on a loaded machine
	// 0–3 of the 60 still expire after their lookup step's 30 s passed
	// unanswered (docs/capacity.md, caveats), which would make make test
	// fail for everyone.
	if os.Getenv("AGORA_TEST_CLUSTER_ROUTING") != "1" {
		t.Skip("opt-in (AGORA_TEST_CLUSTER_ROUTING=1): stale KV reads on a NATS cluster past the router are a known, open bug (docs/capacity.md)")
	}
	s := newStack(t, shape{orchestrators: 1, runners: 4, slots: 4, natsNodes: 3})
	ids, _ := s.submit(t, "cluster", 60)
	s.wait(t, ids, 3*time.Minute)
	for _, id := range ids {
		task, err := s.orchs[0].Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != wire.StateFinished {
			t.Errorf("task %s is %s (%+v, round 1 decisions %+v); want finished", id, task.State, task.Outcome, task.Rounds[0].Decisions)
		}
	}
}
