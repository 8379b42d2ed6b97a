package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logWriter routes the handler's logs to t.Log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newHandler(t *testing.T, svc *apitest.Service, tokens ...string) http.Handler {
	t.Helper()
	h, err := api.NewHandler(api.Config{Service: svc, Tokens: tokens, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	return checked(t, h)
}

// checked makes every request and response through h conform to
// openapi.json, or fail the test.
func checked(t testing.TB, h http.Handler) http.Handler {
	return openapitest.Handler(t, h, openapitest.Lenient)
}

// serve sends one request from a loopback peer; headers come in pairs.
func serve(h http.Handler, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:7070"
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func task(id string, state wire.State) *wire.Task {
	return &wire.Task{ID: id, State: state, Attention: wire.Attention{Kind: "none"},
		Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "x", Runtime: schemas.RuntimeExec}}}
}

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

func TestHandler_Endpoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		svc            func(t *testing.T, s *apitest.Service)
		method, target string
		body           string
		wantStatus     int
		// wantBody are substrings of the response body, in order.
		wantBody   []string
		wantHeader map[string]string
	}{
		{
			name: "submit a new task",
			svc: func(t *testing.T, s *apitest.Service) {
				s.GetFunc = func(_ context.Context, id string) (*wire.Task, error) {
					return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
				}
				s.SubmitFunc = func(_ context.Context, req wire.SubmitRequest) (*wire.Task, error) {
					if req.TaskID != "t-1" || req.Subagent.Name != "echo" || req.Labels["batch"] != "7" {
						t.Errorf("Submit(%+v): want task t-1 of echo with label batch=7", req)
					}
					return task("t-1", wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks",
			body:       `{"task_id":"t-1","subagent":{"name":"echo","runtime":"exec"},"labels":{"batch":"7"}}`,
			wantStatus: http.StatusCreated, wantBody: []string{`"id":"t-1"`, `"state":"queued"`},
			wantHeader: map[string]string{"Location": "/v1/tasks/t-1", "Content-Type": "application/json"},
		},
		{
			name: "submit again with the same id returns the task with 200",
			svc: func(t *testing.T, s *apitest.Service) {
				s.GetFunc = func(context.Context, string) (*wire.Task, error) {
					return task("t-1", wire.StateRunning), nil
				}
				s.SubmitFunc = func(context.Context, wire.SubmitRequest) (*wire.Task, error) {
					return task("t-1", wire.StateRunning), nil
				}
			},
			method: "POST", target: "/v1/tasks", body: `{"task_id":"t-1","subagent":{"name":"echo","runtime":"exec"}}`,
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"running"`},
		},
		{
			name: "submit without an id does not look for an existing task",
			svc: func(t *testing.T, s *apitest.Service) {
				s.GetFunc = func(context.Context, string) (*wire.Task, error) {
					t.Error("Get called for a submit without task_id")
					return nil, wire.ErrNotFound
				}
				s.SubmitFunc = func(context.Context, wire.SubmitRequest) (*wire.Task, error) {
					return task("t-9f2c", wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks", body: `{"subagent":{"name":"echo","runtime":"exec"}}`,
			wantStatus: http.StatusCreated, wantBody: []string{`"id":"t-9f2c"`},
			wantHeader: map[string]string{"Location": "/v1/tasks/t-9f2c"},
		},
		{
			name: "get",
			svc: func(t *testing.T, s *apitest.Service) {
				s.GetFunc = func(_ context.Context, id string) (*wire.Task, error) {
					if id != "t-1" {
						t.Errorf("Get(%q), want t-1", id)
					}
					return task(id, wire.StateNeedsInput), nil
				}
			},
			method: "GET", target: "/v1/tasks/t-1",
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"needs_input"`, `"attention":{`},
		},
		{
			name: "list with filters",
			svc: func(t *testing.T, s *apitest.Service) {
				s.ListFunc = func(_ context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
					want := wire.ListOptions{State: wire.StateNeedsInput, Label: "batch=7"}
					if opts != want {
						t.Errorf("List(%+v), want %+v", opts, want)
					}
					return wire.TaskPage{Tasks: []*wire.Task{task("t-2", wire.StateNeedsInput), task("t-1", wire.StateNeedsInput)},
						Summary: wire.Summary{Counts: map[wire.State]int{wire.StateNeedsInput: 2, wire.StateRunning: 1},
							Text: "1 running · 2 needs input"}}, nil
				}
			},
			method: "GET", target: "/v1/tasks?state=needs_input&label=batch%3D7",
			wantStatus: http.StatusOK,
			wantBody:   []string{`"tasks":[`, `"id":"t-2"`, `"id":"t-1"`, `"summary":{"counts":{`, `"text":"1 running · 2 needs input"`},
		},
		{
			name: "list of nothing is an empty array",
			svc: func(t *testing.T, s *apitest.Service) {
				s.ListFunc = func(context.Context, wire.ListOptions) (wire.TaskPage, error) {
					return wire.TaskPage{}, nil
				}
			},
			method: "GET", target: "/v1/tasks",
			wantStatus: http.StatusOK, wantBody: []string{`"tasks":[]`},
		},
		{
			name: "questions oldest first",
			svc: func(t *testing.T, s *apitest.Service) {
				s.QuestionsFunc = func(context.Context, wire.PageOptions) (wire.QuestionPage, error) {
					return wire.QuestionPage{Questions: []wire.QuestionView{
						{TaskID: "t-old", Round: 2, Question: "Size?", Options: []string{"S", "M"}, AskedAt: t0, Action: "agora answer t-old S"},
						{TaskID: "t-new", Round: 1, Question: "Colour?", AskedAt: t0.Add(time.Minute)},
					}}, nil
				}
			},
			method: "GET", target: "/v1/questions",
			wantStatus: http.StatusOK,
			wantBody:   []string{`"questions":[`, `"task_id":"t-old"`, `"options":["S","M"]`, `"action":"agora answer t-old S"`, `"task_id":"t-new"`},
		},
		{
			name: "no questions is an empty array",
			svc: func(t *testing.T, s *apitest.Service) {
				s.QuestionsFunc = func(context.Context, wire.PageOptions) (wire.QuestionPage, error) {
					return wire.QuestionPage{}, nil
				}
			},
			method: "GET", target: "/v1/questions",
			wantStatus: http.StatusOK, wantBody: []string{`"questions":[]`},
		},
		{
			name: "answer with round, by and channel",
			svc: func(t *testing.T, s *apitest.Service) {
				s.AnswerFunc = func(_ context.Context, req wire.AnswerRequest) (*wire.Task, error) {
					want := wire.AnswerRequest{TaskID: "t-1", Round: 2, Answer: "B", By: "carol", Channel: "slack"}
					if req != want {
						t.Errorf("Answer(%+v), want %+v", req, want)
					}
					return task("t-1", wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/answer", body: `{"answer":"B","round":2,"by":"carol","channel":"slack"}`,
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"queued"`},
		},
		{
			name: "answer by and channel default to api",
			svc: func(t *testing.T, s *apitest.Service) {
				s.AnswerFunc = func(_ context.Context, req wire.AnswerRequest) (*wire.Task, error) {
					want := wire.AnswerRequest{TaskID: "t-1", Answer: "B", By: "api", Channel: "api"}
					if req != want {
						t.Errorf("Answer(%+v), want %+v", req, want)
					}
					return task("t-1", wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/answer", body: `{"answer":"B"}`,
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`},
		},
		{
			name: "cancel",
			svc: func(t *testing.T, s *apitest.Service) {
				s.CancelFunc = func(_ context.Context, id string) (*wire.Task, error) {
					return task(id, wire.StateCancelled), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/cancel",
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"cancelled"`},
		},
		{
			name: "respawn",
			svc: func(t *testing.T, s *apitest.Service) {
				s.RespawnFunc = func(_ context.Context, id string) (*wire.Task, error) {
					return task(id, wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/respawn",
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"queued"`},
		},
		{
			name: "continue",
			svc: func(t *testing.T, s *apitest.Service) {
				s.ContinueFunc = func(_ context.Context, id, message, by string) (*wire.Task, error) {
					if id != "t-1" || message != "now in French" || by != "bob" {
						t.Errorf("Continue(%q, %q, %q), want t-1, now in French, bob", id, message, by)
					}
					return task(id, wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/continue", body: `{"message":"now in French","by":"bob"}`,
			wantStatus: http.StatusOK, wantBody: []string{`"id":"t-1"`, `"state":"queued"`},
		},
		{
			name: "continue by defaults to api",
			svc: func(t *testing.T, s *apitest.Service) {
				s.ContinueFunc = func(_ context.Context, id, message, by string) (*wire.Task, error) {
					if by != "api" {
						t.Errorf("Continue by = %q, want api", by)
					}
					return task(id, wire.StateQueued), nil
				}
			},
			method: "POST", target: "/v1/tasks/t-1/continue", body: `{"message":"again"}`,
			wantStatus: http.StatusOK,
		},
		{
			name: "remove",
			svc: func(t *testing.T, s *apitest.Service) {
				s.RemoveFunc = func(_ context.Context, id string) error {
					if id != "t-1" {
						t.Errorf("Remove(%q), want t-1", id)
					}
					return nil
				}
			},
			method: "DELETE", target: "/v1/tasks/t-1",
			wantStatus: http.StatusNoContent,
		},
		{
			name:   "an escaped id reaches the service decoded",
			method: "GET", target: "/v1/tasks/t%2D1",
			svc: func(t *testing.T, s *apitest.Service) {
				s.GetFunc = func(_ context.Context, id string) (*wire.Task, error) {
					if id != "t-1" {
						t.Errorf("Get(%q), want %q", id, "t-1")
					}
					return task(id, wire.StateQueued), nil
				}
			},
			wantStatus: http.StatusOK,
		},
		{
			name:   "healthz",
			svc:    func(*testing.T, *apitest.Service) {},
			method: "GET", target: "/healthz",
			wantStatus: http.StatusOK, wantBody: []string{`{"status":"ok"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &apitest.Service{}
			tt.svc(t, svc)
			rec := serve(newHandler(t, svc), tt.method, tt.target, tt.body)
			if rec.Code != tt.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.target, rec.Code, rec.Body, tt.wantStatus)
			}
			checkBody(t, rec.Body.String(), tt.wantBody)
			for k, v := range tt.wantHeader {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tt.wantStatus == http.StatusNoContent && rec.Body.Len() != 0 {
				t.Errorf("204 body = %q, want none", rec.Body)
			}
		})
	}
}

// checkBody fails unless body holds each of want, in order.
func checkBody(t *testing.T, body string, want []string) {
	t.Helper()
	rest := body
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("body %s\nlacks %s (after the earlier parts)", body, w)
			return
		}
		rest = rest[i+len(w):]
	}
}

func TestHandler_ServiceErrors(t *testing.T) {
	t.Parallel()
	answered := fmt.Errorf("task t-1 round 1: %w by alice via cli at 2025-06-01T10:00:00Z (answer %q)", wire.ErrAlreadyAnswered, "B")
	tests := []struct {
		name           string
		method, target string
		body           string
		err            error
		wantStatus     int
		wantCode       wire.Code
	}{
		{"not found", "GET", "/v1/tasks/t-404", "", fmt.Errorf("task t-404: %w", wire.ErrNotFound), 404, wire.CodeNotFound},
		{"conflict", "POST", "/v1/tasks", `{"subagent":{"name":"echo"}}`,
			fmt.Errorf("task t-1: %w (submit it under another id, or remove the task first)", wire.ErrConflict), 409, wire.CodeConflict},
		{"invalid request", "POST", "/v1/tasks", `{"subagent":{"name":"echo"}}`,
			fmt.Errorf("%w: workspace %q: want persist or fresh", wire.ErrInvalidRequest, "tmp"), 422, wire.CodeInvalid},
		{"already answered", "POST", "/v1/tasks/t-1/answer", `{"answer":"A"}`, answered, 409, wire.CodeAlreadyAnswered},
		{"invalid answer", "POST", "/v1/tasks/t-1/answer", `{"answer":"purple"}`,
			fmt.Errorf("task t-1 round 1: %w: %v", wire.ErrInvalidAnswer, `"purple" is not one of red, green`), 422, wire.CodeInvalidAnswer},
		{"no question", "POST", "/v1/tasks/t-1/answer", `{"answer":"A"}`,
			fmt.Errorf("task t-1 is running: %w", wire.ErrNoQuestion), 409, wire.CodeNoQuestion},
		{"wrong state", "POST", "/v1/tasks/t-1/cancel", "", fmt.Errorf("task t-1 is finished already: %w", wire.ErrWrongState), 409, wire.CodeWrongState},
		{"wrong state on respawn", "POST", "/v1/tasks/t-1/respawn", "",
			fmt.Errorf("task t-1 is running; respawn takes a failed, cancelled or expired task: %w", wire.ErrWrongState), 409, wire.CodeWrongState},
		{"empty follow-up", "POST", "/v1/tasks/t-1/continue", `{"message":""}`,
			fmt.Errorf("%w: the follow-up message is empty", wire.ErrInvalidRequest), 422, wire.CodeInvalid},
		{"remove a missing task", "DELETE", "/v1/tasks/t-404", "", fmt.Errorf("task t-404: %w", wire.ErrNotFound), 404, wire.CodeNotFound},
		{"anything else", "GET", "/v1/tasks", "", errors.New("list tasks: nats: connection closed"), 500, wire.CodeInternal},
		{"a deadline", "GET", "/v1/questions", "", fmt.Errorf("list questions: %w", context.DeadlineExceeded), 504, wire.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fail := func() error { return tt.err }
			svc := &apitest.Service{
				GetFunc: func(context.Context, string) (*wire.Task, error) { return nil, fail() },
				SubmitFunc: func(context.Context, wire.SubmitRequest) (*wire.Task, error) {
					return nil, fail()
				},
				ListFunc: func(context.Context, wire.ListOptions) (wire.TaskPage, error) {
					return wire.TaskPage{}, fail()
				},
				QuestionsFunc: func(context.Context, wire.PageOptions) (wire.QuestionPage, error) {
					return wire.QuestionPage{}, fail()
				},
				AnswerFunc: func(context.Context, wire.AnswerRequest) (*wire.Task, error) {
					return nil, fail()
				},
				CancelFunc:  func(context.Context, string) (*wire.Task, error) { return nil, fail() },
				RespawnFunc: func(context.Context, string) (*wire.Task, error) { return nil, fail() },
				ContinueFunc: func(context.Context, string, string, string) (*wire.Task, error) {
					return nil, fail()
				},
				RemoveFunc: func(context.Context, string) error { return fail() },
			}
			rec := serve(newHandler(t, svc), tt.method, tt.target, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("%s %s = %d, want %d", tt.method, tt.target, rec.Code, tt.wantStatus)
			}
			want := wire.ErrorBody{Error: tt.err.Error(), Code: tt.wantCode}
			if got := decodeError(t, rec); got.Error != want.Error || got.Code != want.Code || got.Differences != nil || got.MoreDifferences != 0 {
				t.Errorf("%s %s body = %+v, want %+v", tt.method, tt.target, got, want)
			}
			if s := tt.wantCode.Sentinel(); s != nil && !errors.Is(tt.err, s) {
				t.Errorf("code %s stands for %v, which the service's error does not wrap", tt.wantCode, s)
			}
		})
	}
}

// TestHandler_ConflictDifferences: a submit whose task id is taken by a
// different request is 409 conflict, and the body names the fields that
// differ ("differences"), besides the message that says the same.
func TestHandler_ConflictDifferences(t *testing.T) {
	t.Parallel()
	conflict := &wire.ConflictError{TaskID: "b1-1", Differences: []wire.Difference{
		{Field: "route", Stored: `"human"`, Now: `"memory,human"`}, {Field: "input.n", Stored: "1", Now: ""}}, More: 2}
	svc := &apitest.Service{
		GetFunc: func(context.Context, string) (*wire.Task, error) {
			return task("b1-1", wire.StateQueued), nil
		},
		SubmitFunc: func(context.Context, wire.SubmitRequest) (*wire.Task, error) {
			return nil, fmt.Errorf("submit: %w", conflict)
		},
	}
	rec := serve(newHandler(t, svc), "POST", "/v1/tasks", `{"task_id":"b1-1","subagent":{"name":"echo"}}`)
	if rec.Code != http.StatusConflict {
		t.Fatalf("POST /v1/tasks = %d %s, want 409", rec.Code, rec.Body)
	}
	got := decodeError(t, rec)
	if got.Code != wire.CodeConflict || !slices.Equal(got.Differences, conflict.Differences) || got.MoreDifferences != 2 {
		t.Errorf("conflict body = %+v, want code conflict, the differences and 2 more", got)
	}
	if want := `task b1-1: task id already used for a different request: route differs: stored "human", now "memory,human"; input.n differs: stored 1, now none; and 2 more fields (submit it under another id, or remove the task first)`; !strings.HasSuffix(got.Error, want) {
		t.Errorf("conflict message = %q, want it to end %q", got.Error, want)
	}
	if !errors.Is(fmt.Errorf("submit: %w", conflict), wire.ErrConflict) {
		t.Error("a ConflictError is not ErrConflict")
	}
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) wire.ErrorBody {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body wire.ErrorBody
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("decode error body: %v", err)
	}
	return body
}

func TestHandler_BadRequests(t *testing.T) {
	t.Parallel()
	huge := `{"answer":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`
	tests := []struct {
		name           string
		method, target string
		body           string
		wantStatus     int
		wantCode       wire.Code
		wantError      string // substring
		wantAllow      string
	}{
		{"empty body", "POST", "/v1/tasks", "", 400, wire.CodeInvalid, "request body is empty; want a JSON object", ""},
		{"cut short", "POST", "/v1/tasks", `{"task_id":`, 400, wire.CodeInvalid, "request body: not valid JSON: the document ends early", ""},
		{"not JSON", "POST", "/v1/tasks/t-1/answer", `{answer: B}`, 400, wire.CodeInvalid, "request body: not valid JSON at byte 2: invalid character 'a'", ""},
		{"unknown field", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","colour":"red"}`, 400, wire.CodeInvalid, `request body: unknown field "colour"`, ""},
		{"unknown nested field", "POST", "/v1/tasks", `{"subagent":{"name":"echo","flavour":"x"}}`, 400, wire.CodeInvalid, `unknown field "flavour"`, ""},
		{"wrong type", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","round":"two"}`, 400, wire.CodeInvalid, `request body: /round: expected an integer, got a string`, ""},
		{"not an object", "POST", "/v1/tasks/t-1/continue", `["again"]`, 400, wire.CodeInvalid, "request body: expected an object, got an array", ""},
		{"two objects", "POST", "/v1/tasks/t-1/answer", `{"answer":"B"} {"answer":"C"}`, 400, wire.CodeInvalid, "request body: not valid JSON: unexpected data after the JSON value (want exactly one value)", ""},
		{"field in another case", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","Round":2}`, 400, wire.CodeInvalid, `request body: unknown field "Round"`, ""},
		{"duplicate key", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","answer":"C"}`, 400, wire.CodeInvalid, `request body: key "answer" appears more than once`, ""},
		{"fraction for an integer", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","round":2.5}`, 400, wire.CodeInvalid, `request body: /round: expected an integer, got 2.5`, ""},
		{"integer too large", "POST", "/v1/tasks/t-1/answer", `{"answer":"B","round":99999999999999999999}`, 400, wire.CodeInvalid, `request body: /round: expected an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999`, ""},
		{"over 1 MiB", "POST", "/v1/tasks/t-1/answer", huge, 413, wire.CodeInvalid, "request body is larger than 1048576 bytes (1 MiB)", ""},
		{"unknown state", "GET", "/v1/tasks?state=done", "", 400, wire.CodeInvalid,
			`query: unknown state "done"; want one of running, queued, needs_input, finished, failed, cancelled, expired`, ""},
		{"label without value", "GET", "/v1/tasks?label=batch", "", 400, wire.CodeInvalid, `query: label "batch"; want key=value`, ""},
		{"two states", "GET", "/v1/tasks?state=queued&state=running", "", 400, wire.CodeInvalid, "query: state given 2 times; give it once", ""},
		{"unknown path", "GET", "/v1/nothing", "", 404, wire.CodeNoRoute, "no endpoint GET /v1/nothing", ""},
		{"no task id", "GET", "/v1/tasks/", "", 404, wire.CodeNoRoute, "no endpoint GET /v1/tasks/", ""},
		{"wrong method", "PUT", "/v1/tasks/t-1", "", 405, wire.CodeNoRoute, "method PUT not allowed on /v1/tasks/{id} (allowed: GET, HEAD, DELETE)", "GET, HEAD, DELETE"},
		{"answer is a POST", "GET", "/v1/tasks/t-1/answer", "", 405, wire.CodeNoRoute, "method GET not allowed", "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// No function is set: a request that reaches the service is a 500.
			rec := serve(newHandler(t, &apitest.Service{}), tt.method, tt.target, tt.body)
			if rec.Code != tt.wantStatus {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.target, rec.Code, rec.Body, tt.wantStatus)
			}
			got := decodeError(t, rec)
			if got.Code != tt.wantCode || !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("%s %s body = %+v, want code %s and an error containing %q", tt.method, tt.target, got, tt.wantCode, tt.wantError)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

func TestHandler_Auth(t *testing.T) {
	t.Parallel()
	tokens := []string{"s3cret", "alice:al1ce-secret", "slack:sl4ck:answerer"}
	tests := []struct {
		name       string
		tokens     []string
		remoteAddr string
		host       string
		header     string   // Authorization
		more       []string // further headers, in pairs
		target     string
		body       string
		wantStatus int
		wantBy     string // who the service was told answered
	}{
		{name: "missing token", tokens: tokens, wantStatus: 401},
		{name: "wrong token", tokens: tokens, header: "Bearer guess", wantStatus: 401},
		{name: "a name is not a token", tokens: tokens, header: "Bearer alice", wantStatus: 401},
		{name: "name and secret are not a token", tokens: tokens, header: "Bearer alice:al1ce-secret", wantStatus: 401},
		{name: "basic auth", tokens: tokens, header: "Basic czNjcmV0", wantStatus: 401},
		{name: "bearer without token", tokens: tokens, header: "Bearer ", wantStatus: 401},
		{name: "unnamed token answers as api", tokens: tokens, header: "Bearer s3cret", wantStatus: 200, wantBy: "api"},
		{name: "scheme is case-insensitive", tokens: tokens, header: "bearer s3cret", wantStatus: 200, wantBy: "api"},
		{name: "named token answers as its name", tokens: tokens, header: "Bearer al1ce-secret", wantStatus: 200, wantBy: "alice"},
		{name: "a named token may not answer for somebody else", tokens: tokens, header: "Bearer al1ce-secret",
			body: `{"answer":"B","by":"bob"}`, wantStatus: 403},
		{name: "a named token may give its own name", tokens: tokens, header: "Bearer al1ce-secret",
			body: `{"answer":"B","by":"alice"}`, wantStatus: 200, wantBy: "alice"},
		{name: "an answerer answers for the person it names", tokens: tokens, header: "Bearer sl4ck",
			body: `{"answer":"B","by":"bob"}`, wantStatus: 200, wantBy: "bob"},
		{name: "an answerer without by answers as itself", tokens: tokens, header: "Bearer sl4ck", wantStatus: 200, wantBy: "slack"},
		{name: "the roles are not part of the secret", tokens: tokens, header: "Bearer sl4ck:answerer", wantStatus: 401},
		{name: "the unnamed token (an admin) answers for somebody", tokens: tokens, header: "Bearer s3cret",
			body: `{"answer":"B","by":"bob"}`, wantStatus: 200, wantBy: "bob"},
		{name: "events need a token", tokens: tokens, target: "/v1/events", wantStatus: 401},
		{name: "unknown paths need a token", tokens: tokens, target: "/v1/nothing", wantStatus: 401},
		{name: "healthz needs none", tokens: tokens, target: "/healthz", wantStatus: 200},
		{name: "no tokens, loopback client", wantStatus: 200, wantBy: "api"},
		{name: "no tokens, IPv6 loopback client", remoteAddr: "[::1]:40000", wantStatus: 200, wantBy: "api"},
		{name: "no tokens, network client", remoteAddr: "192.0.2.7:40000", wantStatus: 403},
		{name: "no tokens, network client, healthz", remoteAddr: "192.0.2.7:40000", target: "/healthz", wantStatus: 200},
		{name: "no tokens, for localhost", host: "localhost:7070", wantStatus: 200, wantBy: "api"},
		{name: "no tokens, for [::1]", host: "[::1]:7070", wantStatus: 200, wantBy: "api"},
		{name: "no tokens, for a rebound name", host: "evil.example:7070", wantStatus: 403},
		{name: "a token, for any name", tokens: tokens, header: "Bearer s3cret", host: "agora.example.com", wantStatus: 200, wantBy: "api"},
		{name: "cross-site browser request", more: []string{"Sec-Fetch-Site", "cross-site"}, wantStatus: 403},
		{name: "cross-site browser request with a token", tokens: tokens, header: "Bearer s3cret",
			more: []string{"Sec-Fetch-Site", "cross-site"}, wantStatus: 403},
		{name: "another origin", more: []string{"Origin", "http://evil.example"}, wantStatus: 403},
		{name: "same-origin browser request", more: []string{"Sec-Fetch-Site", "same-origin"}, wantStatus: 200, wantBy: "api"},
		{name: "cross-site reads of healthz", target: "/healthz", more: []string{"Sec-Fetch-Site", "cross-site"}, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotBy string
			svc := &apitest.Service{AnswerFunc: func(_ context.Context, req wire.AnswerRequest) (*wire.Task, error) {
				gotBy = req.By
				return task(req.TaskID, wire.StateQueued), nil
			}}
			h := newHandler(t, svc, tt.tokens...)
			target, method, body := "/v1/tasks/t-1/answer", "POST", `{"answer":"B"}`
			if tt.target != "" {
				target, method, body = tt.target, "GET", ""
			}
			if tt.body != "" {
				body = tt.body
			}
			req := httptest.NewRequest(method, target, strings.NewReader(body))
			req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:7070"
			if tt.remoteAddr != "" {
				req.RemoteAddr = tt.remoteAddr
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			for i := 0; i+1 < len(tt.more); i += 2 {
				req.Header.Set(tt.more[i], tt.more[i+1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("%s %s = %d %s, want %d", method, target, rec.Code, rec.Body, tt.wantStatus)
			}
			if gotBy != tt.wantBy {
				t.Errorf("Answer by = %q, want %q", gotBy, tt.wantBy)
			}
			switch tt.wantStatus {
			case 401:
				if got := decodeError(t, rec); got.Code != wire.CodeUnauthorized {
					t.Errorf("code = %s, want unauthorized", got.Code)
				}
				if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="agora"` {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			case 403:
				if got := decodeError(t, rec); got.Code != wire.CodeUnauthorized {
					t.Errorf("body = %+v, want code unauthorized", got)
				}
			}
		})
	}
}

func TestNewHandler_Config(t *testing.T) {
	t.Parallel()
	svc := &apitest.Service{}
	tests := []struct {
		name    string
		cfg     api.Config
		wantErr string
	}{
		{"no service", api.Config{}, "api: Config.Service is nil"},
		{"empty token", api.Config{Service: svc, Tokens: []string{"ok", ""}}, "api: token 2: want SECRET or NAME:SECRET[:ROLE,…], each part non-empty"},
		{"name without secret", api.Config{Service: svc, Tokens: []string{"alice:"}}, "api: token 1: want SECRET or NAME:SECRET"},
		{"secret without name", api.Config{Service: svc, Tokens: []string{":s3cret"}}, "api: token 1: want SECRET or NAME:SECRET"},
		{"one secret twice", api.Config{Service: svc, Tokens: []string{"alice:s3cret", "bob:s3cret"}}, "api: token 2: the same secret is given twice"},
		{"no tokens", api.Config{Service: svc}, ""},
		{"tokens", api.Config{Service: svc, Tokens: []string{"s3cret", "alice:al1ce"}}, ""},
		{"roles", api.Config{Service: svc, Tokens: []string{"root:r00t:admin", "slack:sl4ck:answerer,submitter", "carol:a:b"}}, ""},
		{"same secret, roles aside", api.Config{Service: svc, Tokens: []string{"root:r00t:admin", "bob:r00t"}}, "api: token 2: the same secret is given twice"},
		{"local secrets", api.Config{Service: svc, Tokens: []string{"alice:al1ce"}, LocalSecrets: []string{"alice=github,npm"}}, ""},
		{"local secrets of nobody", api.Config{Service: svc, Tokens: []string{"alice:al1ce"}, LocalSecrets: []string{"bob=github"}},
			`api: local secrets "bob=github": no token is named bob`},
		{"local secrets without a list", api.Config{Service: svc, Tokens: []string{"alice:al1ce"}, LocalSecrets: []string{"alice"}},
			"want NAME=SECRET[,SECRET] or NAME=*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := api.NewHandler(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || h == nil {
					t.Errorf("NewHandler = %v, %v; want a handler", h, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewHandler error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr    string
		tokens  []string
		wantErr string
	}{
		{"127.0.0.1:7070", nil, ""},
		{"127.0.0.2:7070", nil, ""},
		{"localhost:7070", nil, ""},
		{"LOCALHOST:7070", nil, ""},
		{"[::1]:7070", nil, ""},
		{"127.0.0.1:0", nil, ""},
		{"0.0.0.0:8080", nil, "refusing to listen on 0.0.0.0:8080 without --token: the API would be open to the network"},
		{":8080", nil, "refusing to listen on :8080 without --token"},
		{"[::]:8080", nil, "refusing to listen on [::]:8080 without --token"},
		{"192.168.1.5:8080", nil, "refusing to listen on 192.168.1.5:8080"},
		{"agora.example.com:8080", nil, "refusing to listen on agora.example.com:8080"},
		{"0.0.0.0:8080", []string{"s3cret"}, ""},
		{"agora.example.com:8080", []string{"alice:s3cret"}, ""},
		{"8080", nil, `listen address "8080"`},
	}
	for _, tt := range tests {
		err := api.CheckBind(tt.addr, tt.tokens)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("CheckBind(%q, %q) = %v, want nil", tt.addr, tt.tokens, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("CheckBind(%q, %q) = %v, want %q", tt.addr, tt.tokens, err, tt.wantErr)
		}
	}
}

func TestCodes_Sentinels(t *testing.T) {
	t.Parallel()
	want := map[wire.Code]error{
		wire.CodeNotFound: wire.ErrNotFound, wire.CodeConflict: wire.ErrConflict,
		wire.CodeInvalid: wire.ErrInvalidRequest, wire.CodeInvalidAnswer: wire.ErrInvalidAnswer,
		wire.CodeAlreadyAnswered: wire.ErrAlreadyAnswered, wire.CodeNoQuestion: wire.ErrNoQuestion,
		wire.CodeWrongState: wire.ErrWrongState,
	}
	for _, c := range wire.Codes {
		if got := c.Sentinel(); got != want[c] {
			t.Errorf("Code(%s).Sentinel() = %v, want %v", c, got, want[c])
		}
	}
	if got := wire.Code("teapot").Sentinel(); got != nil {
		t.Errorf("unknown code's Sentinel() = %v, want nil", got)
	}
	// Every sentinel the orchestrator declares has its code.
	for _, s := range []error{wire.ErrNotFound, wire.ErrConflict, wire.ErrAlreadyAnswered,
		wire.ErrNoQuestion, wire.ErrInvalidAnswer, wire.ErrInvalidRequest, wire.ErrWrongState} {
		if !slices.ContainsFunc(wire.Codes, func(c wire.Code) bool { return c.Sentinel() == s }) {
			t.Errorf("no code for %v", s)
		}
	}
}

// A HEAD of a GET endpoint is served, without a body.
func TestHandler_Head(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newHandler(t, &apitest.Service{}))
	defer srv.Close()
	resp, err := srv.Client().Head(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("HEAD /healthz = %d %q, want 200 and no body", resp.StatusCode, body)
	}
}
