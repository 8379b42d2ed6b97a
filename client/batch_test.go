package client_test

import (
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

func TestParseBatch(t *testing.T) {
	t.Parallel()
	const ok = `{"subagent":{"name":"a","runtime":"exec","command":["true"]}}`
	tests := []struct {
		name  string
		lines []string
		// want is per non-blank line: a task id, or "!" and a part of the error.
		want []string
	}{
		{"default ids by line number, blank lines skipped", []string{ok, "", ok}, []string{"b-1", "b-3"}},
		{"own id kept", []string{`{"task_id":"mine","subagent":{"name":"a"}}`}, []string{"mine"}},
		{"unknown field", []string{`{"subagnet":{}}`}, []string{`!unknown field "subagnet" (known: allow_memory, capabilities,`}},
		{"not an object", []string{`[1]`}, []string{"!not a JSON object (an array); want one submit request per line"}},
		{"two values", []string{ok + ok}, []string{"!more than one JSON value on the line"}},
		{"cut short", []string{`{"subagent":`}, []string{"!bad JSON: the line ends inside a value"}},
		{"wrong type", []string{`{"task_id":7}`}, []string{"!/task_id: expected a string, got a number"}},
		{"another batch's label", []string{`{"labels":{"agora.batch":"x"}}`}, []string{`!label agora.batch is "x", not this batch's "b"; drop the label or pass --batch x`}},
		{"the same id twice", []string{`{"task_id":"d"}`, `{"task_id":"d"}`}, []string{"d", "!task id d is line 1's already"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := client.ParseBatch([]byte(strings.Join(tt.lines, "\n")), "b", "memory")
			if len(got) != len(tt.want) {
				t.Fatalf("%d lines, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				l := got[i]
				if msg, failed := strings.CutPrefix(w, "!"); failed {
					if l.Result != client.BatchFailed || l.Request != nil || !strings.Contains(l.Error, msg) {
						t.Errorf("line %d = %+v, want failed with %q", l.Line, l, msg)
					}
					continue
				}
				if l.Request == nil || l.TaskID != w || l.Request.TaskID != w || l.Request.Labels[wire.BatchLabel] != "b" || l.Request.Route != "memory" {
					t.Errorf("line %d = %+v (request %+v), want task %s of batch b, route memory", l.Line, l, l.Request, w)
				}
			}
		})
	}
}
