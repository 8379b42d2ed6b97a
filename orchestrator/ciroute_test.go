package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestCIRoute: a task submitted from CI that ends up without a route gets
// the configured CI route; a route of its own — given, or its registered
// sub-agent's — wins, and a task not from CI keeps the default. The same
// request again is the same task.
func TestCIRoute(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	reg, err := registry.Open(ctx, b, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterSubagent(ctx, wire.Subagent{Name: "routed", Runtime: "exec", Command: wire.Command{"true"}, Route: "lookup,human=1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterSubagent(ctx, wire.Subagent{Name: "plain", Runtime: "exec", Command: wire.Command{"true"}}); err != nil {
		t.Fatal(err)
	}
	o, err := New(Config{Bus: b, Store: store, Registry: reg, CIRoute: "memory,human=2m", Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	inline := schemas.Subagent{Name: "x", Runtime: schemas.RuntimeExec, Command: []string{"true"}}
	for _, tt := range []struct {
		name string
		req  wire.SubmitRequest
		want string
	}{
		{"from CI, no route", wire.SubmitRequest{TaskID: "ci-none", Subagent: inline, FromCI: true}, "memory,human=2m"},
		{"from CI, a route given", wire.SubmitRequest{TaskID: "ci-given", Subagent: inline, FromCI: true, Route: "human=5m"}, "human=5m"},
		{"from CI, the sub-agent's route", wire.SubmitRequest{TaskID: "ci-routed", SubagentRef: "routed", FromCI: true}, "lookup,human=1h"},
		{"from CI, a sub-agent without a route", wire.SubmitRequest{TaskID: "ci-plain", SubagentRef: "plain", FromCI: true}, "memory,human=2m"},
		{"not from CI", wire.SubmitRequest{TaskID: "not-ci", Subagent: inline}, ""},
	} {
		task, err := o.Submit(ctx, tt.req)
		if err != nil {
			t.Fatalf("%s: submit: %v", tt.name, err)
		}
		if task.Request.Route != tt.want {
			t.Errorf("%s: route %q, want %q", tt.name, task.Request.Route, tt.want)
		}
		again, err := o.Submit(ctx, tt.req)
		if err != nil || again.ID != task.ID {
			t.Errorf("%s: the same request again = %v, %v; want the same task", tt.name, again, err)
		}
	}
}

// TestCIRouteRefused: a CI route that does not parse, or names an
// answerer nobody serves, stops the orchestrator from starting.
func TestCIRouteRefused(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Bus: bustest.Bus(t), CIRoute: "human=soon"}); err == nil || !strings.Contains(err.Error(), `CI route "human=soon"`) {
		t.Errorf("New with a bad CI route = %v; want it refused", err)
	}
	o, err := New(Config{Bus: bustest.Bus(t), Store: storagetest.FileStore(t), CIRoute: "agent:nobody=1m", Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = o.Start(t.Context())
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	if err == nil || !strings.Contains(err.Error(), `the CI route "agent:nobody=1m"`) {
		t.Errorf("Start with a CI route naming no sub-agent = %v; want it refused", err)
	}
}
