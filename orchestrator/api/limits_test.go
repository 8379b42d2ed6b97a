package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/wire"
)

// newRealHandler is the API in front of the real orchestrator and
// registry, on an embedded NATS with file storage and no runner.
func newRealHandler(t *testing.T) http.Handler {
	t.Helper()
	ctx := t.Context()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	reg, err := registry.Open(ctx, b, store)
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Store: store, Registry: reg, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	h, err := api.NewHandler(api.Config{Service: o, Registry: reg, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return checked(t, h)
}

// badIDs are path ids that cannot be task ids, as they appear in a URL,
// and the id the error must name.
var badIDs = []struct{ inPath, id string }{
	{"%3E", ">"},
	{">", ">"},
	{"*", "*"},
	{"a%20b", "a b"},
	{"..", ".."},
	{"%2E%2E", ".."},
	{".", "."},
	{"a.b", "a.b"},
	{"a%2Fb", "a/b"},
	{"-a", "-a"},
	{strings.Repeat("a", 97), strings.Repeat("a", 97)},
	{strings.Repeat("x", 300), strings.Repeat("x", 100) + "…"},
}

// taskRequests are every request that takes a task id, with ID where it
// goes.
var taskRequests = []struct{ method, target, body string }{
	{http.MethodGet, "/v1/tasks/ID", ""},
	{http.MethodDelete, "/v1/tasks/ID", ""},
	{http.MethodPost, "/v1/tasks/ID/answer", `{"answer": "x"}`},
	{http.MethodPost, "/v1/tasks/ID/cancel", ""},
	{http.MethodPost, "/v1/tasks/ID/respawn", ""},
	{http.MethodPost, "/v1/tasks/ID/continue", `{"message": "more"}`},
	{http.MethodGet, "/v1/tasks/ID/logs", ""},
	{http.MethodGet, "/v1/tasks/ID/logs?round=1&follow=1", ""},
	{http.MethodGet, "/v1/events?task=ID", ""},
}

// TestInvalidIDs_RealOrchestrator: through the real handler and
// orchestrator, a task id or registry ref that cannot be one is 400
// invalid naming the id and the rule — it used to be 500 "nats: invalid
// key".
func TestInvalidIDs_RealOrchestrator(t *testing.T) {
	t.Parallel()
	h := newRealHandler(t)
	for _, bad := range badIDs {
		for _, req := range taskRequests {
			target := strings.Replace(req.target, "ID", bad.inPath, 1)
			rec := serve(h, req.method, target, req.body)
			checkInvalidID(t, req.method+" "+target, rec.Code, rec.Body.String(), bad.id, "letters, digits, '-' and '_', starting with a letter or digit, at most 96 characters")
		}
	}
	// A valid id no task has is 404, as before.
	if rec := serve(h, http.MethodGet, "/v1/tasks/"+strings.Repeat("a", 96), ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET /v1/tasks/<96 letters> = %d %s; want 404", rec.Code, rec.Body)
	}
	for _, tt := range []struct{ target, id, rule string }{
		{"/v1/subagents/%3E", ">", "want NAME or NAME@VERSION"},
		{"/v1/capabilities/a%20b", "a b", "want NAME or NAME@VERSION"},
		{"/v1/envs/x@nothex", "x@nothex", "want NAME or NAME@VERSION"},
		{"/v1/subagents/a*b/versions", "a*b", "letters, digits"},
		{"/v1/subagents/..", "..", "never an id"},
	} {
		rec := serve(h, http.MethodGet, tt.target, "")
		checkInvalidID(t, "GET "+tt.target, rec.Code, rec.Body.String(), tt.id, tt.rule)
	}
}

// TestInvalidIDs_NeverReachTheService: the handler checks path ids before
// it calls any service.
func TestInvalidIDs_NeverReachTheService(t *testing.T) {
	t.Parallel()
	called := func(ctx context.Context, id string) (*wire.Task, error) {
		t.Errorf("the service was called with %q", id)
		return nil, wire.ErrNotFound
	}
	svc := &apitest.Service{GetFunc: called, CancelFunc: called, RespawnFunc: called,
		RemoveFunc: func(ctx context.Context, id string) error { _, err := called(ctx, id); return err },
		AnswerFunc: func(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error) {
			return called(ctx, req.TaskID)
		},
		ContinueFunc: func(ctx context.Context, id, _, _ string) (*wire.Task, error) { return called(ctx, id) },
		WatchFunc: func(ctx context.Context, fn func(wire.Change)) error {
			t.Error("the service's Watch was called")
			return nil
		},
	}
	h := newHandler(t, svc)
	for _, bad := range badIDs {
		for _, req := range taskRequests {
			target := strings.Replace(req.target, "ID", bad.inPath, 1)
			rec := serve(h, req.method, target, req.body)
			checkInvalidID(t, req.method+" "+target, rec.Code, rec.Body.String(), bad.id, "letters, digits")
		}
	}
}

func checkInvalidID(t *testing.T, call string, status int, body, id, rule string) {
	t.Helper()
	var e wire.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Errorf("%s = %d %q; want a JSON error", call, status, body)
		return
	}
	if status != http.StatusBadRequest || e.Code != wire.CodeInvalid {
		t.Errorf("%s = %d %s %q; want 400 invalid", call, status, e.Code, e.Error)
		return
	}
	if !strings.Contains(e.Error, fmt.Sprintf("%q", id)) || !strings.Contains(e.Error, rule) {
		t.Errorf("%s: error %q; want it to name %q and the rule (%s)", call, e.Error, id, rule)
	}
}

// TestSubmitMaximums_HTTP: a submitted task over this server's maximums
// is 422 invalid naming the field, the value, the maximum and the flag;
// under them, 201.
func TestSubmitMaximums_HTTP(t *testing.T) {
	t.Parallel()
	h := newRealHandler(t)
	const sub = `"subagent": {"name": "x", "runtime": "exec", "command": ["true"]}`
	input := func(n int) string { return `{"x":"` + strings.Repeat("a", n-len(`{"x":""}`)) + `"}` }
	tests := []submitCase{
		{"under every maximum", `"resources": {"memory_mb": 16384, "cpus": 16, "pids": 4096}, "timeout_seconds": 86400,
			"limits": {"max_rounds": 100, "max_wait_seconds": 2592000}, "input": ` + input(256<<10), http.StatusCreated, ""},
		{"memory 2^44 MiB", `"resources": {"memory_mb": 17592186044416}`, http.StatusUnprocessableEntity,
			"resources.memory_mb 17592186044416 is over this server's maximum 16384 (--max-memory-mb)"},
		{"memory over", `"resources": {"memory_mb": 16385}`, http.StatusUnprocessableEntity,
			"resources.memory_mb 16385 is over this server's maximum 16384 (--max-memory-mb)"},
		{"memory past int64", `"resources": {"memory_mb": 1e30}`, http.StatusBadRequest, "request body: /resources/memory_mb: expected an integer from"},
		{"cpus over", `"resources": {"cpus": 1e300}`, http.StatusUnprocessableEntity,
			"resources.cpus 1e+300 is over this server's maximum 16 (--max-cpus)"},
		{"pids over", `"resources": {"pids": 9223372036854775807}`, http.StatusUnprocessableEntity,
			"resources.pids 9223372036854775807 is over this server's maximum 4096 (--max-pids)"},
		{"timeout over", `"timeout_seconds": 9223372036854775807`, http.StatusUnprocessableEntity,
			"timeout_seconds 9223372036854775807 is over this server's maximum 86400 (--max-timeout)"},
		{"rounds over", `"limits": {"max_rounds": 101}`, http.StatusUnprocessableEntity,
			"limits.max_rounds 101 is over this server's maximum 100 (--max-rounds)"},
		{"wait over", `"limits": {"max_wait_seconds": 2592001}`, http.StatusUnprocessableEntity,
			"limits.max_wait_seconds 2592001 is over this server's maximum 2592000 (--max-wait)"},
		{"input over", `"input": ` + input(500_000), http.StatusUnprocessableEntity,
			"input is 500000 bytes, over this server's maximum 262144 (--max-input-kb 256)"},
		{"body over 1 MiB", `"input": ` + input(1<<20), http.StatusRequestEntityTooLarge, "request body is larger than 1048576 bytes"},
		{"task id over 96", `"task_id": "` + strings.Repeat("a", 97) + `"`, http.StatusUnprocessableEntity, "task_id"},
	}
	for _, tt := range tests {
		tt.submit(t, h, sub)
	}
}

// submitCase is one POST /v1/tasks of fields beside a sub-agent: the
// status it gets and, for a refusal, what its message must say.
type submitCase struct {
	name   string
	fields string
	status int
	want   string
}

// submit posts the case and checks it; it returns the refusal's message
// ("" when there is none to look at further).
func (tt submitCase) submit(t *testing.T, h http.Handler, sub string) string {
	t.Helper()
	rec := serve(h, http.MethodPost, "/v1/tasks", "{"+sub+", "+tt.fields+"}")
	if rec.Code != tt.status {
		t.Errorf("%s: POST /v1/tasks = %d %s; want %d", tt.name, rec.Code, truncate(rec.Body.String()), tt.status)
		return ""
	}
	if tt.want == "" {
		return ""
	}
	var e wire.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != wire.CodeInvalid || !strings.Contains(e.Error, tt.want) {
		t.Errorf("%s: POST /v1/tasks = %d %s; want code invalid and a message saying %q", tt.name, rec.Code, truncate(rec.Body.String()), tt.want)
	}
	return e.Error
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
