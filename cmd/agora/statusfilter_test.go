package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestStatusFilteredSays: status with --state or --label keeps the counts
// line of every task and says what the filter shows of them.
func TestStatusFilteredSays(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for i := range 5 {
		req := wire.SubmitRequest{TaskID: fmt.Sprintf("f-%d", i), Labels: map[string]string{"team": "a"},
			Subagent: schemas.Subagent{Name: "echoer", Runtime: schemas.RuntimeExec, Command: []string{"echo", "hi"}}}
		if i >= 3 {
			req.Labels["team"] = "b"
		}
		if _, err := s.orch.Submit(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	s.ask(t, "f-0", "Which?", "x", "y")
	agora(t, s.env, "status", "--state", "queued").want(t, "status --state queued", 0,
		[]string{"4 queued · 1 needs input\nshowing queued: 4 of 5 tasks\n"}, nil)
	agora(t, s.env, "status", "--label", "team=a").want(t, "status --label team=a", 0,
		[]string{"4 queued · 1 needs input\nshowing labelled team=a: 3 of 5 tasks\n"}, nil)
	agora(t, s.env, "status", "--label", "team=a", "--limit", "1").want(t, "status --label team=a --limit 1", 0,
		[]string{"showing labelled team=a: at least 1 of 5 tasks\n"}, nil)
	agora(t, s.env, "status", "--state", "queued", "--label", "team=b").want(t, "status --state queued --label team=b", 0,
		[]string{"showing queued, labelled team=b: 2 of 5 tasks\n"}, nil)
	if r := agora(t, s.env, "status"); r.code != 0 || strings.Contains(r.stdout, "showing") {
		t.Errorf("status without a filter = %v; want no 'showing' line", r)
	}
}
