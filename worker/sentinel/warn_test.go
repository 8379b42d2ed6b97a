package sentinel

import (
	"strings"
	"testing"
)

// TestReadWarnsNearMisses: an unknown field close to a known one is still
// ignored (the sentinel is valid and its question asked as free text), but
// the worker says so on stderr, naming the field it probably meant; other
// unknown fields pass in silence.
func TestReadWarnsNearMisses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sentinel string
		want     []string
	}{
		{`{"question": "A or B?", "opts": ["A", "B"]}`, []string{`agora-worker: sentinel field "opts" is not known (did you mean "options"?); it is ignored`}},
		{`{"question": "A or B?", "optoins": ["A", "B"], "ctx": "why"}`, []string{
			`sentinel field "ctx" is not known (did you mean "context"?)`, `sentinel field "optoins" is not known (did you mean "options"?)`}},
		{`{"question": "A?", "partialState": {"n": 1}, "Default": "A"}`, []string{
			`sentinel field "Default" is not known (did you mean "default"?)`, `sentinel field "partialState" is not known (did you mean "partial_state"?)`}},
		{`{"question": "A?", "defualt": "A"}`, []string{`(did you mean "default"?)`}},
		{`{"question": "A?", "options": ["A"], "priority": 3, "x-trace": "abc", "q": 1}`, nil},
	} {
		var warn strings.Builder
		n, err := ReadTo(workspaceWith(t, []byte(tt.sentinel)), &warn)
		if err != nil || n == nil {
			t.Errorf("ReadTo(%s) = %v, %v; want the sentinel (unknown fields are ignored)", tt.sentinel, n, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(warn.String(), "\n"), "\n")
		if len(tt.want) == 0 {
			if warn.Len() != 0 {
				t.Errorf("ReadTo(%s) warned %q; want nothing", tt.sentinel, warn.String())
			}
			continue
		}
		if len(lines) != len(tt.want) {
			t.Errorf("ReadTo(%s) warned %q; want %d lines", tt.sentinel, warn.String(), len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(lines[i], w) || !strings.HasPrefix(lines[i], "agora-worker: ") {
				t.Errorf("ReadTo(%s) warning %d = %q; want it to contain %q", tt.sentinel, i, lines[i], w)
			}
		}
	}
}
