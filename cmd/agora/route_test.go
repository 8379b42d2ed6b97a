package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agoradev/agora/wire"
)

// TestDispatchRouteRefused: a route step that names no answerer, or an
// agent:NAME whose sub-agent is neither configured nor registered, is
// refused at submit (exit 2, nothing submitted) instead of expiring the
// task at its first question.
func TestDispatchRouteRefused(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	cmd := []string{"dispatch", "--command", "true"}
	agora(t, s.env, append(cmd, "--route", "bogus")...).want(t, "--route bogus", 2, nil,
		[]string{`route step 1 "bogus": unknown answerer "bogus" (known: memory, lookup, lookup:<path>, agent:<subagent>, webhook:<url>, human, cli)`})
	agora(t, s.env, append(cmd, "--route", "memory,human:bob")...).want(t, "--route human:bob", 2, nil,
		[]string{`route step 2 "human:bob": answerer "human" takes no argument`})
	agora(t, s.env, append(cmd, "--route", "agent:nobody=2m,human")...).want(t, "--route agent:nobody", 2, nil,
		[]string{`route step 1 "agent:nobody": no sub-agent "nobody" is registered ('agora subagent list' shows them)`})
	agora(t, s.env, append(cmd, "--route", "human=abc")...).want(t, "--route human=abc", 2, nil,
		[]string{`--route "human=abc": route step 1 "human=abc": timeout: "abc" is not a duration`})
	if page, err := s.orch.List(t.Context(), wire.ListOptions{}); err != nil || len(page.Tasks) != 0 {
		t.Fatalf("after refused routes: %d tasks, %v; want none", len(page.Tasks), err)
	}

	file := filepath.Join(t.TempDir(), "triage.yaml")
	if err := os.WriteFile(file, []byte("name: triage\nruntime: exec\ncommand: [\"/bin/sh\", \"-c\", \"echo A\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agora(t, s.env, "subagent", "register", file).want(t, "subagent register", 0, nil, nil)
	agora(t, s.env, append(cmd, "--route", "memory,lookup,agent:triage=2m,webhook:https://example.invalid/q,human=1h")...).want(t,
		"a route of known steps", 0, []string{"queued"}, nil)
}
