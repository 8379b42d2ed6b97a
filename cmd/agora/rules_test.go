package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestAnswerRememberAndRules: agora answer --remember makes a rule that
// answers the next task's question like it; agora rules lists, shows and
// removes it; bad flags are one line and exit 2.
func TestAnswerRememberAndRules(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	env := s.env
	s.submit(t, "first")
	s.ask(t, "first", "Which colour?", "red", "green")

	agora(t, env, "answer", "first", "green", "--remember-for", "7d").want(t, "--remember-for without --remember", 2, nil, []string{"go with --remember"})
	agora(t, env, "answer", "first", "green", "--remember", "--remember-for", "200d").want(t, "--remember-for over the maximum", 2, nil, []string{"at most 180d"})
	agora(t, env, "answer", "first", "green", "--remember", "--remember-scope", "label:team=web").want(t, "a label the task lacks", 2, nil, []string{"has no label team=web"})
	if a := s.get(t, "first").Rounds[0].Answer; a != nil {
		t.Fatalf("a refused --remember took the answer: %+v", a)
	}
	r := agora(t, env, "answer", "first", "2", "--remember", "--remember-for", "7d")
	r.want(t, "answer --remember", 0, []string{"first round 1 answered: green (by tester)", "remembered as rule r-"}, nil)
	id := s.get(t, "first").Rounds[0].Answer.Remembered

	// The next task's question like it is answered by the rule.
	s.submit(t, "second")
	s.event(t, schemas.KindStarted, "second-r1", nil)
	s.event(t, schemas.KindNeedsInput, "second-r1", func(ev *schemas.Event) {
		ev.NeedsInput = &schemas.NeedsInput{Question: "which colour", Options: []string{"green", "red"}}
	})
	var second *wire.Task
	testutil.Eventually(t, 30*time.Second, "task second answered by the rule", func() bool {
		second = s.get(t, "second")
		return second.Rounds[0].Answer != nil
	})
	if a := second.Rounds[0].Answer; a.Value != "green" || a.Channel != "rule" || a.Rule == nil || a.Rule.ID != id || a.Rule.By != "tester" {
		t.Fatalf("second's answer = %+v, want green by rule %s made by tester", a, id)
	}
	agora(t, env, "status", "second").want(t, "status shows the rule in the timeline", 0, []string{"rule " + id + " (made by tester)"}, nil)

	agora(t, env, "rules").want(t, "rules", 0, []string{id, "Which colour?", "green", "subagent:echoer", "tester"}, nil)
	agora(t, env, "rules", "show", id).want(t, "rules show", 0, []string{"rule " + id, "options   red, green", "answer    green",
		"scope     subagent:echoer, on the operator's tasks", "made by   tester", "(task first round 1)"}, nil)
	agora(t, env, "rules", "--json").want(t, "rules --json", 0, []string{`"id": "` + id + `"`, `"from_task": "first"`}, nil)
	agora(t, env, "rules", "show", "r-nope").want(t, "rules show of a bad id", 2, nil, []string{"want r- and 16 hex digits"})
	agora(t, env, "rules", "show").want(t, "rules show without RULE", 2, nil, []string{"want agora rules show RULE"})
	agora(t, env, "rules", "frob").want(t, "an unknown subcommand", 2, nil, []string{`unknown rules command "frob"`})
	agora(t, env, "rules", "rm", id).want(t, "rules rm", 0, []string{fmt.Sprintf("rule %s removed", id)}, nil)
	r = agora(t, env, "rules", "show", id)
	if r.code != 1 || !strings.Contains(r.stderr, "no such rule") {
		t.Errorf("rules show of a removed rule: %v; want exit 1 saying there is no such rule", r)
	}
	agora(t, env, "rules").want(t, "rules when there are none", 0, []string{"no rules"}, nil)
}
