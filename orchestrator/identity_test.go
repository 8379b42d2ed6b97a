package orchestrator

import (
	"fmt"
	"testing"

	"github.com/agoradev/agora/wire"
)

// TestIdentityScopes: who sees a task, who acts on it, who names a local
// secret.
func TestIdentityScopes(t *testing.T) {
	t.Parallel()
	alices, operators := &wire.Task{Owner: "alice"}, &wire.Task{}
	tests := []struct {
		name                 string
		id                   Identity
		seesAlice, ownsAlice bool
		seesOperator, github bool
		deployKey            bool
	}{
		{"alice", Identity{Name: "alice", LocalSecrets: []string{"github"}}, true, true, false, true, false},
		{"bob", Identity{Name: "bob"}, false, false, false, false, false},
		{"an answerer", Identity{Name: "slack", Answerer: true}, true, false, true, false, false},
		{"an admin", Identity{Name: "root", Admin: true}, true, true, true, true, true},
		{"all local secrets", Identity{Name: "ops", LocalSecrets: []string{"*"}}, false, false, false, true, true},
		{"an unnamed non-admin owns nothing", Identity{}, false, false, false, false, false},
	}
	for _, tt := range tests {
		got := [5]bool{tt.id.sees(alices), tt.id.owns(alices), tt.id.sees(operators), tt.id.mayUseLocal("github"), tt.id.mayUseLocal("deploy-key")}
		want := [5]bool{tt.seesAlice, tt.ownsAlice, tt.seesOperator, tt.github, tt.deployKey}
		if got != want {
			t.Errorf("%s: sees alice's, owns alice's, sees the operator's, may use github, deploy-key = %v, want %v", tt.name, got, want)
		}
	}
	if id := caller(t.Context()); !id.Admin || id.actor() != OperatorName {
		t.Errorf("a context without an identity is %+v (%s), want the operator", id, id.actor())
	}
}

// TestHistoryBounded: the history keeps the submit and the latest others.
func TestHistoryBounded(t *testing.T) {
	t.Parallel()
	s := newLogsStack(t)
	task := &wire.Task{}
	s.orch.record(task, wire.HistoryEntry{Action: wire.ActionSubmit, By: "alice"})
	for i := range 2 * wire.MaxHistory {
		s.orch.record(task, wire.HistoryEntry{Action: wire.ActionAnswer, By: "alice", Detail: fmt.Sprint(i)})
	}
	h := task.History
	if len(h) != wire.MaxHistory || h[0].Action != wire.ActionSubmit || h[len(h)-1].Detail != fmt.Sprint(2*wire.MaxHistory-1) ||
		h[1].Detail != fmt.Sprint(wire.MaxHistory+1) || h[1].At.IsZero() {
		t.Errorf("history of %d entries: first %+v, second %+v, last %+v; want %d, the submit, then the latest", len(h), h[0], h[1], h[len(h)-1], wire.MaxHistory)
	}
}
