package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api"
)

// TestRulesOverHTTP: remembering an answer, and listing, showing and
// removing rules, through the API with tokens of each role (every
// response checked against openapi.json): only who may answer the task
// makes a rule, a submitter sees its own tasks' rules only, an answerer
// removes only the rules it made, bad ids are 400, bad remembers 400 or
// 422 with the answer not taken.
func TestRulesOverHTTP(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce", "bob:b0b", "slack:sl4ck:answerer", "other:0ther:answerer", "root:r00t:admin"}})
	const alice, bob, slack, other, root = "al1ce", "b0b", "sl4ck", "0ther", "r00t"
	for _, id := range []string{"ra", "ra2"} {
		if code, body := s.call(t, alice, "POST", "/v1/tasks", submitOf(id)); code != 201 {
			t.Fatalf("alice submits %s = %d %v", id, code, body)
		}
	}
	s.ask(t, alice, "ra")

	if code, body := s.call(t, bob, "POST", "/v1/tasks/ra/answer", `{"answer":"A","remember":{}}`); code != 404 {
		t.Errorf("bob remembers an answer to alice's task = %d %v, want 404", code, body)
	}
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"an unknown field", `{"answer":"A","remember":{"scopes":"owner"}}`, 400, "scopes"},
		{"a scope that is none", `{"answer":"A","remember":{"scope":"team"}}`, 422, "want subagent, label:KEY=VALUE or owner"},
		{"over the maximum", `{"answer":"A","remember":{"expires_in_seconds":99999999}}`, 422, "want 1 to 15552000"},
	} {
		if code, body := s.call(t, alice, "POST", "/v1/tasks/ra/answer", c.body); code != c.code || !strings.Contains(body["error"].(string), c.want) {
			t.Errorf("%s: %d %v, want %d saying %q", c.name, code, body, c.code, c.want)
		}
	}
	code, task := s.call(t, slack, "POST", "/v1/tasks/ra/answer", `{"answer":"B","by":"dana","remember":{"scope":"owner","expires_in_seconds":3600}}`)
	if code != 200 {
		t.Fatalf("the answerer remembers for dana = %d %v", code, task)
	}
	round := items(task, "rounds")[0].(map[string]any)
	id, _ := round["answer"].(map[string]any)["remembered"].(string)
	if !strings.HasPrefix(id, "r-") {
		t.Fatalf("answer = %v, want remembered set", round["answer"])
	}
	code, rule := s.call(t, alice, "GET", "/v1/rules/"+id, "")
	if code != 200 || rule["by"] != "dana" || rule["via"] != "slack" || rule["owner"] != "alice" || rule["answer"] != "B" {
		t.Errorf("alice reads the rule = %d %v, want dana's via slack on alice's tasks", code, rule)
	}
	if exp, _ := time.Parse(time.RFC3339, rule["expires_at"].(string)); time.Until(exp) > time.Hour || time.Until(exp) < 58*time.Minute {
		t.Errorf("expires_at = %v, want in an hour", rule["expires_at"])
	}

	// alice's next task asks the same: the rule answers it.
	if err := s.publishAsk(t, "ra2"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "ra2 answered by the rule", func() bool {
		_, got := s.call(t, alice, "GET", "/v1/tasks/ra2", "")
		rounds := items(got, "rounds")
		if len(rounds) == 0 {
			return false
		}
		a, _ := rounds[0].(map[string]any)["answer"].(map[string]any)
		r, _ := a["rule"].(map[string]any)
		return a["channel"] == "rule" && r["id"] == id && r["by"] == "dana"
	})

	lists := []struct {
		token string
		want  int
	}{{alice, 1}, {bob, 0}, {slack, 1}, {other, 1}, {root, 1}}
	for _, l := range lists {
		if code, body := s.call(t, l.token, "GET", "/v1/rules", ""); code != 200 || len(items(body, "rules")) != l.want {
			t.Errorf("GET /v1/rules as %s = %d %v, want %d rules", l.token, code, body, l.want)
		}
	}
	if code, _ := s.call(t, bob, "GET", "/v1/rules/"+id, ""); code != 404 {
		t.Errorf("bob reads alice's rule = %d, want 404", code)
	}
	if code, body := s.call(t, alice, "GET", "/v1/rules/r-nope", ""); code != 400 || !strings.Contains(body["error"].(string), "16 hex digits") {
		t.Errorf("GET a bad rule id = %d %v, want 400", code, body)
	}
	if code, body := s.call(t, alice, "GET", "/v1/rules?limit=0", ""); code != 400 {
		t.Errorf("GET /v1/rules?limit=0 = %d %v, want 400", code, body)
	}
	if code, _ := s.call(t, bob, "DELETE", "/v1/rules/"+id, ""); code != 404 {
		t.Errorf("bob removes alice's rule = %d, want 404", code)
	}
	if code, body := s.call(t, other, "DELETE", "/v1/rules/"+id, ""); code != 403 || !strings.Contains(body["error"].(string), "only they or an admin may remove it") {
		t.Errorf("another answerer removes the rule = %d %v, want 403", code, body)
	}
	if code, body := s.call(t, slack, "DELETE", "/v1/rules/"+id, ""); code != 204 {
		t.Errorf("the answerer that made it removes the rule = %d %v, want 204", code, body)
	}
	if code, _ := s.call(t, root, "GET", "/v1/rules/"+id, ""); code != 404 {
		t.Errorf("GET a removed rule = %d, want 404", code)
	}
}
