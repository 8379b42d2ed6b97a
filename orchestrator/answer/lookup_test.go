package answer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/answertest"
)

func TestLookupAsk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		q        answer.Question
		want     string // outcome
		wantAns  string
		wantRule int
	}{
		{name: "pattern and option set", q: answer.Question{Question: "Rewrite function A or B?", Options: []string{"B", "A"}},
			want: "answered", wantAns: "B", wantRule: 1},
		{name: "case-insensitive pattern", q: answer.Question{Question: "REWRITE A OR B", Options: []string{"A", "B"}},
			want: "answered", wantAns: "B", wantRule: 1},
		{name: "anchored pattern", q: answer.Question{Question: "Should I rewrite A or B?", Options: []string{"A", "B"}},
			want: "declined"},
		{name: "option set differs", q: answer.Question{Question: "Rewrite A or B?", Options: []string{"A", "B", "C"}},
			want: "declined"},
		{name: "no options where the rule has some", q: answer.Question{Question: "Rewrite A or B?"},
			want: "declined"},
		{name: "sub-agent rule", q: answer.Question{Subagent: "migrator", Question: "Which database should I use?"},
			want: "answered", wantAns: "postgres", wantRule: 2},
		{name: "sub-agent rule, other sub-agent", q: answer.Question{Subagent: "coder", Question: "Which database should I use?"},
			want: "declined"},
		{name: "scalar answer", q: answer.Question{Question: "Run the full test suite?", Options: []string{"no", "yes"}},
			want: "answered", wantAns: "yes", wantRule: 3},
		{name: "rule without options fits the question's options", q: answer.Question{Question: "Proceed?", Options: []string{"Yes", "No"}},
			want: "answered", wantAns: "Yes", wantRule: 4},
		{name: "rule without options, answer not among them", q: answer.Question{Question: "Proceed?", Options: []string{"now", "later"}},
			want: "declined"},
		{name: "rule without options, free-text question", q: answer.Question{Question: "proceed?"},
			want: "answered", wantAns: "yes", wantRule: 4},
		{name: "nothing matches", q: answer.Question{Question: "What colour?"}, want: "declined"},
	}
	for _, file := range []string{"testdata/rules.yaml", "testdata/rules.json"} {
		l, err := answer.LoadRules(file)
		if err != nil {
			t.Fatalf("LoadRules(%s): %v", file, err)
		}
		for _, tt := range tests {
			t.Run(filepath.Ext(file)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := l.Ask(t.Context(), tt.q)
				if outcome(err) != tt.want {
					t.Fatalf("Ask(%q, %q) = %+v, %v; want %s", tt.q.Question, tt.q.Options, got, err, tt.want)
				}
				if tt.want != "answered" {
					return
				}
				wantBy := fmt.Sprintf("lookup: %s rule %d", file, tt.wantRule)
				if got.Answer != tt.wantAns || got.By != wantBy {
					t.Errorf("Ask(%q) = %+v; want %q by %q", tt.q.Question, got, tt.wantAns, wantBy)
				}
			})
		}
	}
}

func TestLoadRulesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		content string
		wantErr string
	}{
		{name: "bad regexp", file: "rules.yaml", content: "- {question: ok, answer: x}\n- {question: ok, answer: y}\n- {question: '(a', answer: x}\n",
			wantErr: "rules.yaml: rule 3: question: error parsing regexp: missing closing ): `(a`"},
		{name: "answer not among options", file: "rules.yaml", content: "- question: x\n  options: [A, B]\n  answer: C\n",
			wantErr: `rules.yaml: rule 1: answer: "C" is not one of: A, B`},
		{name: "answer not among options, JSON", file: "rules.json", content: `[{"question":"x","options":["A","B"],"answer":"C"}]`,
			wantErr: `rules.json: rule 1: answer: "C" is not one of: A, B`},
		{name: "missing question", file: "rules.yaml", content: "- answer: x\n", wantErr: "rules.yaml: rule 1: question: required"},
		{name: "missing answer", file: "rules.json", content: `[{"question":"x"}]`, wantErr: "rules.json: rule 1: answer: required"},
		{name: "empty options", file: "rules.yaml", content: "- {question: x, options: [], answer: A}\n", wantErr: "rules.yaml: rule 1: options: empty list"},
		{name: "duplicate option", file: "rules.yaml", content: "- {question: x, options: [A, A], answer: A}\n", wantErr: `rules.yaml: rule 1: options: "A" appears twice`},
		{name: "unknown field YAML", file: "rules.yml", content: "- {question: x, anwser: A}\n", wantErr: `rules.yml: rule 1: line 1: unknown field "anwser"`},
		{name: "unknown field JSON", file: "rules.json", content: `[{"question":"x","anwser":"A"}]`, wantErr: `rules.json: rule 1: unknown field "anwser"`},
		{name: "wrong type JSON", file: "rules.json", content: `[{"question":5,"answer":"A"}]`, wantErr: "rules.json: rule 1: question: expected a string, got a number"},
		{name: "options not a list", file: "rules.yaml", content: "- {question: x, options: A, answer: A}\n", wantErr: "rules.yaml: rule 1: options: line 1: want a list of strings"},
		{name: "rule not a mapping", file: "rules.yaml", content: "- just text\n", wantErr: "rules.yaml: rule 1: line 1: not a mapping"},
		{name: "rule not an object", file: "rules.json", content: `["x"]`, wantErr: "rules.json: rule 1: not an object"},
		{name: "field in another case JSON", file: "rules.json", content: `[{"question":"x","Answer":"A","answer":"B"}]`, wantErr: `rules.json: rule 1: unknown field "Answer"`},
		{name: "duplicate key JSON", file: "rules.json", content: `[{"question":"x","answer":"A","answer":"B"}]`, wantErr: `rules.json: rule 1: key "answer" appears more than once`},
		{name: "not a list YAML", file: "rules.yaml", content: "question: x\n", wantErr: "rules.yaml: line 1: want a YAML list of rules"},
		{name: "not a list JSON", file: "rules.json", content: `{"question":"x"}`, wantErr: "rules.json: want a JSON list of rules"},
		{name: "YAML syntax", file: "rules.yaml", content: "- question: [\n", wantErr: "rules.yaml: yaml: line"},
		{name: "extension", file: "rules.toml", content: "", wantErr: `rules.toml: unsupported extension ".toml"`},
		// White space as the contract defines it (schemas.IsSpace), the
		// byte-order mark included, which strings.TrimSpace keeps.
		{name: "question of Unicode blanks", file: "rules.json", content: `[{"question":"\ufeff\u3000","answer":"A"}]`, wantErr: "rules.json: rule 1: question: required"},
		{name: "answer of a byte-order mark", file: "rules.json", content: `[{"question":"x","answer":"\ufeff"}]`, wantErr: "rules.json: rule 1: answer: required"},
		{name: "option of Unicode blanks", file: "rules.yaml", content: "- {question: x, options: [A, \"\\u00a0\\ufeff\"], answer: A}\n", wantErr: "rules.yaml: rule 1: options: option 2 is blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := answer.LoadRules(path)
			if err == nil {
				t.Fatalf("LoadRules(%s) = %v, nil; want error %q", tt.file, l, tt.wantErr)
			}
			if got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)); !strings.HasPrefix(got, tt.wantErr) {
				t.Errorf("LoadRules(%s) error = %q; want it to start with %q", tt.file, got, tt.wantErr)
			}
		})
	}
}

func TestLoadRulesMissingFile(t *testing.T) {
	t.Parallel()
	if _, err := answer.LoadRules(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("LoadRules(missing) error = %v; want it to name the file", err)
	}
}

func TestLookupEmptyFileDeclines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte("# no rules yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := answer.LoadRules(path)
	if err != nil {
		t.Fatalf("LoadRules(empty) = %v", err)
	}
	if _, err := l.Ask(t.Context(), answer.Question{Question: "x"}); outcome(err) != "declined" {
		t.Errorf("Ask with no rules = %v; want declined", err)
	}
}

func TestLookupContract(t *testing.T) {
	t.Parallel()
	l, err := answer.NewLookup("inline", []answer.Rule{{Question: "a or b", Options: []string{"A", "B"}, Answer: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	answertest.Answerer(t, l, answer.Question{Question: "A or B?", Options: []string{"A", "B"}}, time.Second)
}

func TestLoadRulesYAMLAnchors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	content := "- {question: 'a or b', options: &ab [A, B], answer: A}\n- {question: 'b or a', options: *ab, answer: B}\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := answer.LoadRules(path)
	if err != nil {
		t.Fatalf("LoadRules(anchors) = %v", err)
	}
	got, err := l.Ask(t.Context(), answer.Question{Question: "B or A?", Options: []string{"A", "B"}})
	if err != nil || got.Answer != "B" || !strings.HasSuffix(got.By, "rule 2") {
		t.Errorf("Ask = %+v, %v; want B by rule 2 (options through an alias)", got, err)
	}
}

// TestLookupTrimsContractWhiteSpace: a rule's answer is trimmed of white
// space as the contract defines it (schemas.IsSpace), so an answer written
// with a byte-order mark or an ideographic space around it names the
// option.
func TestLookupTrimsContractWhiteSpace(t *testing.T) {
	t.Parallel()
	l, err := answer.NewLookup("rules", []answer.Rule{
		{Question: "deploy", Options: []string{"yes", "no"}, Answer: "\ufeffyes\u3000"},
		{Question: "colour", Answer: "\u00a0blue\ufeff"},
	})
	if err != nil {
		t.Fatalf("NewLookup: %v", err)
	}
	for _, tt := range []struct {
		q    answer.Question
		want string
	}{
		{answer.Question{Question: "Deploy?", Options: []string{"no", "yes"}}, "yes"},
		{answer.Question{Question: "Which colour?"}, "blue"},
	} {
		got, err := l.Ask(t.Context(), tt.q)
		if err != nil || got.Answer != tt.want {
			t.Errorf("Ask(%q) = %+v, %v; want %q", tt.q.Question, got, err, tt.want)
		}
	}
}
