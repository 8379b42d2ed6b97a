package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/ecs/ecsfake"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
	"github.com/agoradev/agora/runner"
)

// TestAskAnswerResumeOnECS is the demo's loop — ask, answer, resume,
// finish — with the runner placing every round as an ECS task (EC2 launch
// type) through the real SDK against the loopback fake (ecsfake), which
// runs the worker image on the local Docker engine.
func TestAskAnswerResumeOnECS(t *testing.T) {
	t.Parallel()
	var fake *ecsfake.Server
	s := newStackOn(t, func(eng *docker.Engine, runnerID string) compute.Engine {
		o := ecstest.Options{EC2: true, Cluster: "agora-" + runnerID, Engine: func(c *ecs.Config) { c.StopTimeout = 3 * time.Second }}
		fake = ecstest.StartFake(t, eng, o)
		e := ecstest.Engine(t, fake, o)
		t.Cleanup(func() { // before the fake closes, after the runner stops
			left, err := e.List(context.Background(), map[string]string{runner.LabelRunner: runnerID})
			if err != nil || len(left) != 0 {
				t.Errorf("tasks left: %+v, %v", left, err)
			}
		})
		return e
	}, nil)
	ctx := context.Background()
	task := s.submit(SubmitRequest{Subagent: askerWith(1), Input: json.RawMessage(`{"goal":"paint"}`)})
	task = s.waitState(task.ID, StateNeedsInput)
	if q := currentRound(task).Question; q.Question != "Pick a colour for step 1" || string(q.PartialState) != `{"seen":1}` {
		t.Fatalf("question = %+v", q)
	}
	if _, err := s.orch.Answer(ctx, AnswerRequest{TaskID: task.ID, Answer: "blue", By: "alice", Channel: "cli"}); err != nil {
		t.Fatalf("Answer(blue): %v", err)
	}
	task = s.waitState(task.ID, StateFinished, StateFailed)
	if task.State != StateFinished {
		t.Fatalf("task ended %s: %+v", task.State, task.Outcome)
	}
	if out := s.output(task.Rounds[1].DispatchID); !strings.Contains(out, "answers: blue") {
		t.Errorf("round 2 output = %q, want it to have read the answer", out)
	}
	if n := len(fake.Calls("RunTask")); n != 2 {
		t.Errorf("RunTask calls = %d, want one per round", n)
	}
}
