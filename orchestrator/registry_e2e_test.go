package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/wire"
)

// TestRegisteredSubagent runs a registered sub-agent whose capability holds
// the script it runs and whose env bundle gives it a value. Between its two
// rounds the env bundle gets a new version: round 2 still runs the pinned
// one. Its question is answered by another registered sub-agent through an
// agent: route step that no static configuration names.
func TestRegisteredSubagent(t *testing.T) {
	t.Parallel()
	var reg *registry.Registry
	s := newStack(t, func(c *Config) {
		r, err := registry.Open(context.Background(), c.Bus, c.Store)
		if err != nil {
			t.Fatal(err)
		}
		c.Registry, reg = r, r
	})
	ctx := context.Background()
	archive, files, err := registryfile.PackDir(filepath.Join("testdata", "greeter-skill"), wire.MaxCapabilityBytes)
	if err != nil || files != 1 {
		t.Fatalf("PackDir = %d files, %v", files, err)
	}
	skill, err := reg.RegisterCapability(ctx, "greeter-skill", "", archive)
	if err != nil {
		t.Fatal(err)
	}
	env1, err := reg.RegisterEnv(ctx, wire.Env{Name: "greeting", Values: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterSubagent(ctx, wire.Subagent{Name: "chooser", Runtime: "exec",
		Command: wire.Command{"/bin/sh", "-c", `echo '{"answer": "team"}' > .agora/answer.json`}}); err != nil {
		t.Fatal(err)
	}
	greeter, err := reg.RegisterSubagent(ctx, wire.Subagent{Name: "greeter", Runtime: "exec",
		Command: wire.Command{"/bin/sh", "tools/greet.sh"}, Capabilities: []string{"greeter-skill"}, Env: []string{"greeting"},
		Route: "human=1h"})
	if err != nil {
		t.Fatal(err)
	}

	task := s.submit(wire.SubmitRequest{SubagentRef: "greeter"})
	want := wire.Pins{Subagent: greeter.Entry.Ref(), Capabilities: []string{skill.Entry.Ref()}, Env: []string{env1.Entry.Ref()}}
	if task.Pins == nil || task.Pins.Subagent != want.Subagent || task.Pins.Capabilities[0] != want.Capabilities[0] || task.Pins.Env[0] != want.Env[0] {
		t.Fatalf("pins = %+v, want %+v", task.Pins, want)
	}
	task = s.waitState(task.ID, wire.StateNeedsInput, wire.StateFailed)
	if task.State != wire.StateNeedsInput {
		t.Fatalf("round 1 ended %s: %+v", task.State, task.Outcome)
	}
	if out := s.output(task.Rounds[0].DispatchID); !strings.Contains(out, "round 1 greeting: hello") {
		t.Errorf("round 1 output = %q; want the capability's script with the env bundle's value", out)
	}

	// A new version of the env bundle does not reach a task pinned before it.
	if _, err := reg.RegisterEnv(ctx, wire.Env{Name: "greeting", Values: map[string]string{"GREETING": "bye"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "world", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished {
		t.Fatalf("task ended %s: %+v", task.State, task.Outcome)
	}
	if out := s.output(task.Rounds[1].DispatchID); !strings.Contains(out, "round 2 greeting: hello, world") {
		t.Errorf("round 2 output = %q; want the pinned env (hello) and the answer", out)
	}

	// A new task takes the latest versions; its question goes to a
	// registered sub-agent.
	next := s.submit(wire.SubmitRequest{SubagentRef: "greeter", Route: "agent:chooser=2m,human"})
	if next.Pins.Env[0] == env1.Entry.Ref() {
		t.Errorf("a new task pinned the old env %s", next.Pins.Env[0])
	}
	next = s.waitState(next.ID, wire.StateFinished, wire.StateFailed)
	if a := next.Rounds[0].Answer; next.State != wire.StateFinished || a == nil || a.Value != "team" || a.Channel != "agent:chooser" {
		t.Fatalf("task %s, answer %+v; want finished with team from agent:chooser", next.State, a)
	}
	if out := s.output(next.Rounds[1].DispatchID); !strings.Contains(out, "round 2 greeting: bye, team") {
		t.Errorf("round 2 output = %q; want the new env (bye)", out)
	}
}
