package answer_test

import (
	"testing"

	"github.com/agoradev/agora/orchestrator/answer"
)

func TestValidateAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		options []string
		answer  string
		want    string
		wantErr string
	}{
		{name: "exact option", options: []string{"A", "B"}, answer: "B", want: "B"},
		{name: "trimmed", options: []string{"A", "B"}, answer: "  B\n", want: "B"},
		{name: "case-insensitive", options: []string{"Rewrite A", "Rewrite B"}, answer: "rewrite b", want: "Rewrite B"},
		{name: "exact wins over case-insensitive", options: []string{"yes", "YES"}, answer: "YES", want: "YES"},
		{name: "ambiguous case-insensitive", options: []string{"yes", "YES"}, answer: "Yes", wantErr: `answer "Yes" is not one of: yes, YES (or 1-2)`},
		{name: "by index", options: []string{"A", "B"}, answer: "2", want: "B"},
		{name: "index out of range", options: []string{"A", "B"}, answer: "3", wantErr: `answer "3" is not one of: A, B (or 1-2)`},
		{name: "index zero", options: []string{"A", "B"}, answer: "0", wantErr: `answer "0" is not one of: A, B (or 1-2)`},
		{name: "signed index", options: []string{"A", "B"}, answer: "+1", wantErr: `answer "+1" is not one of: A, B (or 1-2)`},
		{name: "not an option", options: []string{"A", "B"}, answer: "C", wantErr: `answer "C" is not one of: A, B (or 1-2)`},
		{name: "one option", options: []string{"A"}, answer: "C", wantErr: `answer "C" is not one of: A (or 1)`},
		{name: "blank with options", options: []string{"A", "B"}, answer: " ", wantErr: `answer "" is not one of: A, B (or 1-2)`},
		{name: "numeric options match by value", options: []string{"1", "2", "5"}, answer: "5", want: "5"},
		{name: "numeric options take no index", options: []string{"1", "2", "5"}, answer: "3", wantErr: `answer "3" is not one of: 1, 2, 5`},
		{name: "free text", answer: " ship it \n", want: "ship it"},
		{name: "free text blank", answer: " \t", wantErr: "answer is empty"},
		// White space as the contract defines it (schemas.IsSpace): Unicode's
		// and ECMA-262's, the byte-order mark included.
		{name: "trimmed of Unicode white space", options: []string{"A", "B"}, answer: "\ufeff\u00a0B\u3000\u2028", want: "B"},
		{name: "free text trimmed of a byte-order mark", answer: "\ufeffship it\u2003", want: "ship it"},
		{name: "free text of Unicode blanks", answer: "\ufeff\u00a0\u3000\u2028\u0085", wantErr: "answer is empty"},
		{name: "a zero-width space is not white space", answer: "\u200b", want: "\u200b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := answer.ValidateAnswer(answer.Question{Question: "?", Options: tt.options}, tt.answer)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ValidateAnswer(%q, %q) = %q, %v; want error %q", tt.options, tt.answer, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ValidateAnswer(%q, %q) = %q, %v; want %q", tt.options, tt.answer, got, err, tt.want)
			}
		})
	}
}

func TestSameQuestion(t *testing.T) {
	t.Parallel()
	q := answer.Question{Question: "Rewrite A or B?", Options: []string{"A", "B"}}
	cases := []struct {
		name    string
		text    string
		options []string
		want    bool
	}{
		{"identical", "Rewrite A or B?", []string{"A", "B"}, true},
		{"case, space and trailing punctuation", "  rewrite a   or b ", []string{"B", " A", "A"}, true},
		{"other text", "Rewrite A or C?", []string{"A", "B"}, false},
		{"fewer options", "Rewrite A or B?", []string{"A"}, false},
		{"no options", "Rewrite A or B?", nil, false},
		{"option case matters", "Rewrite A or B?", []string{"a", "b"}, false},
	}
	for _, c := range cases {
		if got := answer.SameQuestion(c.text, c.options, q); got != c.want {
			t.Errorf("%s: SameQuestion(%q, %q) = %v, want %v", c.name, c.text, c.options, got, c.want)
		}
	}
}
