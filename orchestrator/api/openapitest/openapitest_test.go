package openapitest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agoradev/agora/orchestrator/api/openapitest"
)

// recordingT keeps the errors Handler reports instead of failing the test.
type recordingT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingT) Helper() {}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestHandler checks that the checker finds what breaks the document, and
// only that: each case serves one canned response to one request.
func TestHandler(t *testing.T) {
	t.Parallel()
	health := func(status int, ct, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name, method, target, ct, body string
		mode                           openapitest.Mode
		serve                          http.HandlerFunc
		wantErr                        string // "" means none
	}{
		{name: "a conforming response", method: "GET", target: "/healthz",
			serve: health(200, "application/json", `{"status":"ok"}`)},
		{name: "a required field missing", method: "GET", target: "/healthz",
			serve: health(200, "application/json", `{}`), wantErr: `property "status" is missing`},
		{name: "a field of the wrong type", method: "GET", target: "/healthz",
			serve: health(200, "application/json", `{"status":1}`), wantErr: "response 200 to GET /healthz breaks openapi.json"},
		{name: "an error body with a code outside wire.Codes", method: "GET", target: "/v1/tasks/t-1",
			serve: health(404, "application/json", `{"error":"no","code":"nope"}`), wantErr: "not one of the allowed values"},
		{name: "a time that is no date-time", method: "GET", target: "/v1/envs",
			serve:   health(200, "application/json", `{"entries":[{"kind":"env","name":"a","version":"1","digest":"d","seq":1,"created_at":"yesterday"}]}`),
			wantErr: `doesn't match the format "date-time"`},
		{name: "an undocumented content type", method: "GET", target: "/v1/tasks/t-1/logs",
			serve: health(200, "text/html", `<p>`), wantErr: `content type "text/html" is not documented`},
		{name: "a 204 with a body", method: "DELETE", target: "/v1/tasks/t-1",
			serve: health(204, "application/json", `{}`), wantErr: "204 with a body"},
		{name: "a refused request the server refuses too", method: "GET", target: "/v1/tasks?limit=0",
			serve: health(400, "application/json", `{"error":"limit","code":"invalid"}`)},
		{name: "a refused request the server takes", method: "GET", target: "/v1/tasks?limit=0",
			serve: health(200, "application/json", `{"tasks":[],"summary":{"counts":{},"text":""}}`), wantErr: "not a 4xx refusal"},
		{name: "a refused request in strict mode", method: "POST", target: "/v1/tasks/t-1/answer", body: `{"answer":1}`, ct: "application/json",
			mode: openapitest.Strict, serve: health(400, "application/json", `{"error":"answer","code":"invalid"}`), wantErr: "request POST /v1/tasks/t-1/answer breaks openapi.json"},
		{name: "a body without a content type in strict mode", method: "POST", target: "/v1/tasks/t-1/continue", body: `{"message":"go"}`,
			mode: openapitest.Strict, serve: health(400, "application/json", `{"error":"x","code":"invalid"}`), wantErr: "Content-Type"},
		{name: "an unknown field in a body", method: "POST", target: "/v1/tasks/t-1/continue", body: `{"message":"go","Message":"x"}`, ct: "application/json",
			mode: openapitest.Strict, serve: health(400, "application/json", `{"error":"x","code":"invalid"}`), wantErr: "Message"},
		{name: "an artifact name with slashes", method: "GET", target: "/v1/tasks/t-1/artifacts/out/report.txt",
			serve: health(200, "application/octet-stream", `bytes`)},
		{name: "a stream of conforming events", method: "GET", target: "/v1/events",
			serve: health(200, "text/event-stream", ": stream open\n\nevent: task\ndata: {\"task_id\":\"t-1\",\"removed\":true}\n\n")},
		{name: "an event whose data breaks its schema", method: "GET", target: "/v1/events",
			serve:   health(200, "text/event-stream", "event: task\ndata: {\"removed\":true}\n\n"),
			wantErr: `property "task_id" is missing`},
		{name: "an event the document does not name", method: "GET", target: "/v1/events",
			serve:   health(200, "text/event-stream", "event: tasks\ndata: {}\n\n"),
			wantErr: `event "tasks" of /v1/events is not in openapi.json`},
		{name: "a logs trailer that is no error body", method: "GET", target: "/v1/tasks/t-1/logs",
			serve: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				_, _ = w.Write([]byte("out\n"))
				w.Header().Set(http.TrailerPrefix+"Agora-Error", `{"error":"cut"}`)
			},
			wantErr: `trailer Agora-Error`},
		{name: "a path the document does not have", method: "GET", target: "/v2/nothing",
			serve: health(404, "text/plain", `nothing`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := &recordingT{TB: t}
			h := openapitest.Handler(rt, tt.serve, tt.mode)
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			got := strings.Join(rt.errors, "\n")
			switch {
			case tt.wantErr == "" && got != "":
				t.Errorf("%s %s: reported %s; want nothing", tt.method, tt.target, got)
			case tt.wantErr != "" && !strings.Contains(got, tt.wantErr):
				t.Errorf("%s %s: reported %q; want an error with %q", tt.method, tt.target, got, tt.wantErr)
			}
		})
	}
}
