package capacity

import (
	"context"
	"encoding/json"
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

// TestClusterQuestionsRouted: on a 3-node NATS cluster every question is
// routed and every task finishes. A KV read there used to be a direct get,
// which a replica the write had not reached yet could answer: a router that
// trusted it saw the task as it was before it asked and forgot the
// question, and an answer's or a submit's read back met the same stale
// record (one task in 60 expired in 2 of 3 runs). The bus now reads a
// replicated bucket through its stream's leader (docs/capacity.md).
func TestClusterQuestionsRouted(t *testing.T) {
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
