package view

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResult(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"hello"`:                "hello\n",
		`"two\nlines\n"`:         "two\nlines\n",
		`{"a": 1,  "b": [1, 2]}`: `{"a":1,"b":[1,2]}` + "\n",
		`42`:                     "42\n",
		`null`:                   "",
		``:                       "",
		`""`:                     "\n",
	} {
		var b strings.Builder
		if err := Result(&b, json.RawMessage(in)); err != nil || b.String() != want {
			t.Errorf("Result(%s) = %q, %v; want %q", in, b.String(), err, want)
		}
	}
}
