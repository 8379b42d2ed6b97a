package answer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/answer"
)

func TestResolverResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("- {question: colour, answer: blue}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(`[{"question": "deploy", "answer": "yes"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("- {question: x, answer: y}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runner := fakeRunner{RunAgentFunc: func(_ context.Context, subagent string, _ json.RawMessage) (answer.AgentResult, error) {
		return answer.AgentResult{LastLine: "from " + subagent, TaskID: "t-8"}, nil
	}}
	full := &answer.Resolver{
		Memory: &answer.MapMemory{}, RulesFile: rules, RulesDir: dir, Agents: runner,
		WebhookSecret: "s", Logger: testLogger(t),
	}
	tests := []struct {
		name    string
		r       *answer.Resolver
		step    string
		q       answer.Question // asked of the resolved answerer
		want    string          // outcome of Ask
		wantAns string
		wantErr string // from Resolve
	}{
		{name: "memory", r: full, step: "memory", q: answer.Question{Question: "?"}, want: "declined"},
		{name: "lookup, configured rules", r: full, step: "lookup", q: answer.Question{Question: "Which colour?"}, want: "answered", wantAns: "blue"},
		{name: "lookup:<path> in the rules dir", r: full, step: "lookup:ops.json", q: answer.Question{Question: "Deploy?"}, want: "answered", wantAns: "yes"},
		{name: "lookup:<absolute path> in the rules dir", r: full, step: "lookup:" + filepath.Join(dir, "ops.json"), q: answer.Question{Question: "Deploy?"}, want: "answered", wantAns: "yes"},
		{name: "lookup:<path> escaping the rules dir", r: full, step: "lookup:../" + filepath.Base(filepath.Dir(outside)) + "/outside.yaml", wantErr: "lookup ../"},
		{name: "lookup:<absolute path> outside the rules dir", r: full, step: "lookup:" + outside, wantErr: "outside the rules directory"},
		{name: "lookup:<path> unconfined", r: &answer.Resolver{}, step: "lookup:" + outside, q: answer.Question{Question: "x"}, want: "answered", wantAns: "y"},
		{name: "agent", r: full, step: "agent:triage", q: answer.Question{Question: "?"}, want: "answered", wantAns: "from triage"},
		{name: "webhook", r: full, step: "webhook:http://127.0.0.1:1/hook", q: answer.Question{Question: "?"}},
		{name: "human", r: full, step: "human", q: answer.Question{Question: "?"}, want: "pending"},
		{name: "cli", r: &answer.Resolver{}, step: "cli", q: answer.Question{Question: "?"}, want: "pending"},
		{name: "unknown", r: full, step: "carrier-pigeon:loft",
			wantErr: `unknown answerer "carrier-pigeon:loft" (known: memory, lookup, lookup:<path>, agent:<subagent>, webhook:<url>, human, cli)`},
		{name: "memory unconfigured", r: &answer.Resolver{}, step: "memory", wantErr: "no memory store configured"},
		{name: "memory with an argument", r: full, step: "memory:x", wantErr: `answerer "memory" takes no argument`},
		{name: "lookup unconfigured", r: &answer.Resolver{}, step: "lookup", wantErr: "no rules file configured"},
		{name: "lookup file broken", r: &answer.Resolver{RulesFile: filepath.Join(dir, "missing.yaml")}, step: "lookup", wantErr: "missing.yaml"},
		{name: "agent unconfigured", r: &answer.Resolver{}, step: "agent:triage", wantErr: "no agent runner configured"},
		{name: "agent without a name", r: full, step: "agent", wantErr: "want agent:<subagent>"},
		{name: "webhook without a secret", r: &answer.Resolver{}, step: "webhook:https://example.com", wantErr: "no webhook secret configured"},
		{name: "webhook with a bad URL", r: full, step: "webhook:mailto:ops@example.com", wantErr: "want an http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := tt.r.Resolve(tt.step)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) = %v, %v; want error containing %q", tt.step, a, err, tt.wantErr)
				}
				if a != nil {
					t.Errorf("Resolve(%q) = %#v with an error; want a nil Answerer", tt.step, a)
				}
				return
			}
			if err != nil || a == nil {
				t.Fatalf("Resolve(%q) = %v, %v; want an answerer", tt.step, a, err)
			}
			if tt.want == "" {
				return
			}
			got, err := a.Ask(t.Context(), tt.q)
			if outcome(err) != tt.want || got.Answer != tt.wantAns {
				t.Errorf("Resolve(%q).Ask = %+v, %v; want %s %q", tt.step, got, err, tt.want, tt.wantAns)
			}
		})
	}
}

func TestResolverRegister(t *testing.T) {
	t.Parallel()
	r := &answer.Resolver{}
	var gotArg string
	slack := func(arg string) (answer.Answerer, error) {
		if arg == "" {
			return nil, errors.New("want slack:<channel>")
		}
		gotArg = arg
		return answer.NewHuman(nil), nil
	}
	if err := r.Register("slack", slack); err != nil {
		t.Fatalf("Register(slack) = %v", err)
	}
	a, err := r.Resolve("slack:#ops")
	if err != nil || a == nil || gotArg != "#ops" {
		t.Fatalf("Resolve(slack:#ops) = %v, %v (arg %q); want an answerer made with #ops", a, err, gotArg)
	}
	if _, err := r.Resolve("slack"); err == nil || !strings.Contains(err.Error(), "answerer slack: want slack:<channel>") {
		t.Errorf("Resolve(slack) = %v; want the constructor's error naming the step", err)
	}
	if _, err := r.Resolve("teams:x"); err == nil || !strings.Contains(err.Error(), "slack:<arg>") {
		t.Errorf("Resolve(teams:x) = %v; want the known steps, slack:<arg> among them", err)
	}
	// A registration takes precedence over a built-in.
	if err := r.Register("human", func(string) (answer.Answerer, error) {
		return answer.Func(func(context.Context, answer.Question) (answer.Reply, error) {
			return answer.Reply{Answer: "paged", By: "pager"}, nil
		}), nil
	}); err != nil {
		t.Fatal(err)
	}
	a, err = r.Resolve("human")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Ask(t.Context(), answer.Question{Question: "?"}); err != nil || got.By != "pager" {
		t.Errorf("registered human Ask = %+v, %v; want the registered answerer", got, err)
	}
	for _, bad := range []string{"", "Slack", "sl:ack", "9x"} {
		if err := r.Register(bad, slack); err == nil {
			t.Errorf("Register(%q) = nil; want an error", bad)
		}
	}
	if err := r.Register("nil", nil); err == nil {
		t.Errorf("Register(nil constructor) = nil; want an error")
	}
}

// TestResolverCheck: Check accepts every step kind Resolve knows, with the
// right argument shape, without their configuration; it refuses a step no
// answerer serves, naming the known ones.
func TestResolverCheck(t *testing.T) {
	t.Parallel()
	r := &answer.Resolver{}
	if err := r.Register("slack", func(string) (answer.Answerer, error) { return answer.NewHuman(nil), nil }); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"memory", "lookup", "lookup:rules.yaml", "agent:triage", "webhook:https://h/x", "human", "cli", "slack:#ops", "slack"} {
		if err := r.Check(step); err != nil {
			t.Errorf("Check(%q) = %v; want nil", step, err)
		}
	}
	for step, want := range map[string]string{
		"bogus":      `unknown answerer "bogus" (known: memory, lookup, lookup:<path>, agent:<subagent>, webhook:<url>, human, cli, slack:<arg>)`,
		"teams:x":    `unknown answerer "teams:x"`,
		"human:bob":  `answerer "human" takes no argument`,
		"memory:x":   `answerer "memory" takes no argument`,
		"agent":      "want agent:<subagent>",
		"webhook: ":  "want webhook:<url>",
		"lookup:   ": "want lookup or lookup:<path>",
	} {
		if err := r.Check(step); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v; want an error with %q", step, err, want)
		}
	}
	// A registered step's argument is checked when a check is registered.
	r.RegisterCheck("slack", func(arg string) error {
		if !strings.HasPrefix(arg, "#") {
			return errors.New("want #channel")
		}
		return nil
	})
	if err := r.Check("slack:#ops"); err != nil {
		t.Errorf("Check(slack:#ops) with a check = %v; want nil", err)
	}
	if err := r.Check("slack:ops"); err == nil || err.Error() != "answerer slack:ops: want #channel" {
		t.Errorf("Check(slack:ops) with a check = %v; want %q", err, "answerer slack:ops: want #channel")
	}
}
