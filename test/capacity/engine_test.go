package capacity

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute/procbench"
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
	checkTwoRounds(t, s, ids)
}

// TestMeasuringEngineReplay runs the same two-round tasks on the replay
// mode: one task runs the worker (both rounds recorded), the next ones are
// replayed, and their task records are the real worker's (ids and times
// aside) — question, partial_state, answer, result, exit codes, decisions.
func TestMeasuringEngineReplay(t *testing.T) {
	real := newStack(t, shape{orchestrators: 1, runners: 1, slots: 2, natsNodes: 1})
	want, _ := real.submit(t, "real", 1)
	real.wait(t, want, 2*time.Minute)
	checkTwoRounds(t, real, want)

	s := newStack(t, shape{orchestrators: 1, runners: 1, slots: 2, natsNodes: 1, engine: procbench.ReplayName})
	first, _ := s.submit(t, "record", 1)
	s.wait(t, first, 2*time.Minute)
	if rec, rep := s.workerRuns(); rec != 2 || rep != 0 {
		t.Fatalf("after the first task: %d worker runs, %d replays; want both rounds run and recorded", rec, rep)
	}
	ids, _ := s.submit(t, "replayed", 4)
	s.wait(t, ids, 2*time.Minute)
	if rec, rep := s.workerRuns(); rec != 2 || rep != 8 {
		t.Errorf("%d worker runs, %d replays; want the 8 dispatches of the later tasks replayed", rec, rep)
	}
	checkTwoRounds(t, s, append(first, ids...))
	realTask := comparable(t, real, want[0])
	for _, id := range ids {
		if got := comparable(t, s, id); got != realTask {
			t.Errorf("replayed task %s differs from the real worker's:\n got %s\nwant %s", id, got, realTask)
		}
	}
}

// checkTwoRounds checks that each task finished in two rounds: round 1
// asked with its partial_state, the lookup rule answered, round 2 left the
// result.
func checkTwoRounds(t *testing.T, s *stack, ids []string) {
	t.Helper()
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
			if ph := s.traces.Of(r.DispatchID); ph == nil {
				t.Errorf("dispatch %s never passed the runner", r.DispatchID)
			}
		}
	}
}

// rulesPath is the stack's lookup rules file, in its own temporary
// directory.
var rulesPath = regexp.MustCompile(`\S*/rules\.json`)

// comparable is a task record as JSON with what differs between any two
// runs taken out: ids, times, durations and waits, revisions, the storage
// URIs that hold ids, the rules file's path.
func comparable(t *testing.T, s *stack, id string) string {
	t.Helper()
	task, err := s.orchs[0].Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch {
				case k == "id" || k == "task_id" || k == "dispatch_id" || k == "uri" || k == "at" || k == "revision" ||
					strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "deadline"):
					delete(v, k)
				default:
					v[k] = strip(x)
				}
			}
		case []any:
			for i := range v {
				v[i] = strip(v[i])
			}
		case string:
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return "<time>"
			}
			return rulesPath.ReplaceAllString(strings.ReplaceAll(v, id, "<task>"), "<rules>")
		}
		return v
	}
	out, _ := json.Marshal(strip(v))
	return string(out)
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
