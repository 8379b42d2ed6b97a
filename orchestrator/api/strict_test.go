package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSubmitReadsJSONExactly: POST /v1/tasks reads its body as every
// outside document is read (docs/contract.md, "Reading JSON"), and no
// answer shows Go's decoder or its type names.
func TestSubmitReadsJSONExactly(t *testing.T) {
	t.Parallel()
	h := newRealHandler(t)
	const sub = `"subagent": {"name": "x", "runtime": "exec", "command": ["true"]}`
	deep := strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001)
	tests := []submitCase{
		{"input an array", `"input": []`, http.StatusUnprocessableEntity, "input must be a JSON object, not an array"},
		{"input a string", `"input": "x"`, http.StatusUnprocessableEntity, "input must be a JSON object, not a string"},
		{"input an object", `"input": {"a": [1, {"b": null}]}`, http.StatusCreated, ""},
		{"timeout 60.0", `"timeout_seconds": 60.0`, http.StatusCreated, ""},
		{"timeout 1e2", `"timeout_seconds": 1e2`, http.StatusCreated, ""},
		{"timeout 2.5", `"timeout_seconds": 2.5`, http.StatusBadRequest, "request body: /timeout_seconds: expected an integer, got 2.5"},
		{"timeout too large", `"timeout_seconds": 99999999999999999999`, http.StatusBadRequest,
			"request body: /timeout_seconds: expected an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999"},
		{"TIMEOUT_SECONDS", `"TIMEOUT_SECONDS": 1`, http.StatusBadRequest, `request body: unknown field "TIMEOUT_SECONDS"`},
		{"Subagent beside subagent", `"Subagent": 5`, http.StatusBadRequest, `request body: unknown field "Subagent"`},
		{"duplicate key", `"task_id": "a", "task_id": "b"`, http.StatusBadRequest, `request body: key "task_id" appears more than once`},
		{"input 10,001 deep", `"input": ` + deep, http.StatusBadRequest, "request body: /input/a/a/"},
		{"input 10,001 deep limit", `"input": ` + deep, http.StatusBadRequest, "nested more than 64 levels deep"},
	}
	for _, tt := range tests {
		msg := tt.submit(t, h, sub)
		for _, goText := range []string{"json:", "unmarshal", "Go value", "map[string]", "int64"} {
			if strings.Contains(msg, goText) {
				t.Errorf("%s: error %q shows Go's decoder (%q)", tt.name, msg, goText)
			}
		}
	}
}
