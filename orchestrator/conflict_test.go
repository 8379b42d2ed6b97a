package orchestrator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestRequestDifferences: a conflict names each field that differs with
// its stored and new value, one level into objects, in the request's
// field order, values cut, at most wire.MaxDifferences of them.
func TestRequestDifferences(t *testing.T) {
	t.Parallel()
	base := wire.SubmitRequest{TaskID: "b1-1", Subagent: schemas.Subagent{Name: "echoer", Runtime: "exec", Command: []string{"echo", "hi"}},
		Input: json.RawMessage(`{"n": 1, "text": "same"}`), Route: "human", Labels: map[string]string{wire.BatchLabel: "b1"}}
	with := func(change func(*wire.SubmitRequest)) wire.SubmitRequest {
		r := base
		r.Labels = map[string]string{wire.BatchLabel: "b1"}
		change(&r)
		return r
	}
	long := strings.Repeat("é", 100)
	tests := []struct {
		name string
		now  wire.SubmitRequest
		want []wire.Difference
		more int
	}{
		{"the same, input formatted otherwise", with(func(r *wire.SubmitRequest) { r.Input = json.RawMessage(`{"text":"same","n":1}`); r.TaskID = "x" }), nil, 0},
		{"route", with(func(r *wire.SubmitRequest) { r.Route = "memory,human" }),
			[]wire.Difference{{Field: "route", Stored: `"human"`, Now: `"memory,human"`}}, 0},
		{"route left out", with(func(r *wire.SubmitRequest) { r.Route = "" }),
			[]wire.Difference{{Field: "route", Stored: `"human"`, Now: ""}}, 0},
		{"input and sub-agent", with(func(r *wire.SubmitRequest) {
			r.Input = json.RawMessage(`{"n":2,"text":"same","extra":true}`)
			r.Subagent.Command = []string{"echo", "bye"}
		}), []wire.Difference{
			{Field: "subagent.command", Stored: `["echo","hi"]`, Now: `["echo","bye"]`},
			{Field: "input.extra", Stored: "", Now: "true"},
			{Field: "input.n", Stored: "1", Now: "2"}}, 0},
		{"input not an object any more is one field", with(func(r *wire.SubmitRequest) { r.Input = nil }),
			[]wire.Difference{{Field: "input.n", Stored: "1", Now: ""}, {Field: "input.text", Stored: `"same"`, Now: ""}}, 0},
		{"limits, labels, capabilities", with(func(r *wire.SubmitRequest) {
			r.Limits.MaxRounds = 3
			r.Labels["team"] = "ops"
			r.Capabilities = []schemas.BundleRef{{Name: "tools", SHA256: "sha256:00"}}
		}), []wire.Difference{
			{Field: "capabilities", Stored: "", Now: `[{"name":"tools","sha256":"sha256:00"}]`},
			{Field: "limits.max_rounds", Stored: "", Now: "3"},
			{Field: "labels.team", Stored: "", Now: `"ops"`}}, 0},
		{"a long value is cut on a character", with(func(r *wire.SubmitRequest) { r.Route = long }),
			[]wire.Difference{{Field: "route", Stored: `"human"`, Now: `"` + strings.Repeat("é", 38) + "…"}}, 0},
		{"many differences are counted", with(func(r *wire.SubmitRequest) {
			r.Input = json.RawMessage(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`)
		}), nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, more := requestDifferences(base, tt.now)
			if tt.name == "many differences are counted" {
				if len(got) != wire.MaxDifferences || more != tt.more {
					t.Errorf("requestDifferences: %d differences and %d more, want %d and %d", len(got), more, wire.MaxDifferences, tt.more)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) || more != tt.more {
				t.Errorf("requestDifferences =\n%s (+%d)\nwant\n%s (+%d)", fmt.Sprint(got), more, fmt.Sprint(tt.want), tt.more)
			}
		})
	}
}
