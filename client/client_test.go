package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// newClient serves svc through the real API handler on a loopback httptest
// server, with tokens s3cret and alice:al1ce:answerer (an answering
// service, so it may answer for somebody else), and returns a client
// holding token.
func newClient(t *testing.T, svc *apitest.Service, token string, opts ...client.Option) *client.Client {
	t.Helper()
	h, err := api.NewHandler(api.Config{Service: svc, Tokens: []string{"s3cret", "alice:al1ce:answerer"},
		Logger: slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	// What the client sends and what it is answered must be what
	// openapi.json says.
	srv := httptest.NewServer(openapitest.Handler(t, h, openapitest.Strict))
	t.Cleanup(srv.Close)
	return client.New(srv.URL+"/", token, append([]client.Option{client.WithHTTPClient(srv.Client())}, opts...)...)
}

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

// richTask has every kind of field a task carries, to see it survive the
// trip through JSON.
func richTask(id string, state wire.State) *wire.Task {
	def, exit := "red", 0
	return &wire.Task{
		ID: id, State: state, SubagentHash: "sha256:ab12",
		Request: wire.SubmitRequest{TaskID: id, Subagent: schemas.Subagent{Name: "painter", Runtime: schemas.RuntimeExec,
			Command: []string{"./paint.sh"}}, Input: json.RawMessage(`{"wall":"north"}`), Route: "memory,human=24h",
			Limits: wire.Limits{MaxRounds: 3}, Labels: map[string]string{"batch": "7"}},
		Rounds: []wire.Round{
			{N: 1, DispatchID: id + "-r1", State: wire.StateNeedsInput, QueuedAt: t0, StartedAt: t0.Add(time.Second),
				EndedAt: t0.Add(time.Minute), ExitCode: &exit, AskedAt: t0.Add(time.Minute), Attempt: 1, Enqueued: true,
				Question: &schemas.NeedsInput{Question: "Which colour?", Options: []string{"red", "green"}, Default: &def,
					PartialState: json.RawMessage(`{"primed":true}`)},
				Answer:    &wire.Answer{Value: "green", By: "alice", Channel: "api", At: t0.Add(2 * time.Minute), WaitMS: 60000},
				Decisions: []wire.Decision{{StepIndex: 1, Step: "human", Result: "answered", Detail: "by alice", At: t0.Add(2 * time.Minute)}}},
			{N: 2, DispatchID: id + "-r2", State: state, QueuedAt: t0.Add(2 * time.Minute), Attempt: 1},
		},
		CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Minute), WaitedMS: 60000, Revision: 7,
		Attention: wire.Attention{Kind: "none", Summary: "round 2 queued for a runner slot; no action needed"},
	}
}

func TestClient_RoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	want := richTask("t-1", wire.StateQueued)
	calls := map[string]any{}
	var mu sync.Mutex
	record := func(name string, arg any) {
		mu.Lock()
		defer mu.Unlock()
		calls[name] = arg
	}
	svc := &apitest.Service{
		SubmitFunc: func(_ context.Context, req wire.SubmitRequest) (*wire.Task, error) {
			record("Submit", req)
			return want, nil
		},
		GetFunc: func(_ context.Context, id string) (*wire.Task, error) {
			record("Get", id)
			if id != "t-1" {
				return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
			}
			return want, nil
		},
		ListFunc: func(_ context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
			record("List", opts)
			return wire.TaskPage{Tasks: []*wire.Task{want},
				Summary: wire.Summary{Counts: map[wire.State]int{wire.StateQueued: 1}, Text: "1 queued"}}, nil
		},
		QuestionsFunc: func(_ context.Context, opts wire.PageOptions) (wire.QuestionPage, error) {
			record("Questions", opts)
			return wire.QuestionPage{Questions: []wire.QuestionView{{TaskID: "t-1", Round: 1, DispatchID: "t-1-r1", Subagent: "painter", Question: "Which colour?",
				Options: []string{"red", "green"}, AskedAt: t0, AgeMS: 5000, Action: "agora answer t-1 red"}}}, nil
		},
		AnswerFunc: func(_ context.Context, req wire.AnswerRequest) (*wire.Task, error) {
			record("Answer", req)
			return want, nil
		},
		CancelFunc: func(_ context.Context, id string) (*wire.Task, error) { record("Cancel", id); return want, nil },
		RespawnFunc: func(_ context.Context, id string) (*wire.Task, error) {
			record("Respawn", id)
			return want, nil
		},
		ContinueFunc: func(_ context.Context, id, message, by string) (*wire.Task, error) {
			record("Continue", []string{id, message, by})
			return want, nil
		},
		RemoveFunc: func(_ context.Context, id string) error { record("Remove", id); return nil },
	}
	c := newClient(t, svc, "al1ce")

	submit := want.Request
	submit.Resources = &schemas.Resources{CPUs: 1.5, MemoryMB: 512}
	tests := []struct {
		name     string
		call     func() (any, error)
		wantCall string
		wantArg  any
		wantOut  any
	}{
		{"Submit", func() (any, error) { return c.Submit(ctx, submit) }, "Submit", submit, want},
		{"Get", func() (any, error) { return c.Get(ctx, "t-1") }, "Get", "t-1", want},
		{"List", func() (any, error) {
			page, err := c.List(ctx, wire.ListOptions{State: wire.StateQueued, Label: "batch=7", Limit: 5, Cursor: "dA"})
			return []any{page.Tasks, page.Summary}, err
		}, "List", wire.ListOptions{State: wire.StateQueued, Label: "batch=7", Limit: 5, Cursor: "dA"},
			[]any{[]*wire.Task{want}, wire.Summary{Counts: map[wire.State]int{wire.StateQueued: 1}, Text: "1 queued"}}},
		{"List unfiltered", func() (any, error) {
			page, err := c.List(ctx, wire.ListOptions{})
			return page.Summary.Text, err
		}, "List", wire.ListOptions{}, "1 queued"},
		{"Questions", func() (any, error) {
			page, err := c.Questions(ctx, wire.PageOptions{Limit: 3})
			qs := page.Questions
			return len(qs) == 1 && qs[0].Action == "agora answer t-1 red" && qs[0].AskedAt.Equal(t0) && qs[0].Options[1] == "green", err
		}, "Questions", wire.PageOptions{Limit: 3}, true},
		{"Answer as the token's name", func() (any, error) {
			return c.Answer(ctx, wire.AnswerRequest{TaskID: "t-1", Round: 1, Answer: "green"})
		}, "Answer", wire.AnswerRequest{TaskID: "t-1", Round: 1, Answer: "green", By: "alice", Channel: "api"}, want},
		{"Answer by somebody through a channel", func() (any, error) {
			return c.Answer(ctx, wire.AnswerRequest{TaskID: "t-1", Answer: "green", By: "carol", Channel: "slack"})
		}, "Answer", wire.AnswerRequest{TaskID: "t-1", Answer: "green", By: "carol", Via: "alice", Channel: "slack"}, want},
		{"Cancel", func() (any, error) { return c.Cancel(ctx, "t-1") }, "Cancel", "t-1", want},
		{"Respawn", func() (any, error) { return c.Respawn(ctx, "t-1") }, "Respawn", "t-1", want},
		{"Continue", func() (any, error) { return c.Continue(ctx, "t-1", "now blue", "") }, "Continue", []string{"t-1", "now blue", "alice"}, want},
		{"Remove", func() (any, error) { return nil, c.Remove(ctx, "t-1") }, "Remove", "t-1", nil},
		// Escaped as one path segment, the id reaches the API whole, which
		// refuses it by name before any service sees it.
		{"an id that needs escaping", func() (any, error) {
			_, err := c.Get(ctx, "t/1 x")
			return errors.Is(err, wire.ErrInvalidRequest) && strings.Contains(err.Error(), `"t/1 x"`), nil
		}, "", nil, true},
	}
	for _, tt := range tests {
		// Sequential: the calls share the recording fake.
		got, err := tt.call()
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.wantOut) {
			t.Errorf("%s = %s\nwant %s", tt.name, jsonOf(got), jsonOf(tt.wantOut))
		}
		if tt.wantCall == "" {
			continue
		}
		mu.Lock()
		arg := calls[tt.wantCall]
		delete(calls, tt.wantCall)
		mu.Unlock()
		if !reflect.DeepEqual(arg, tt.wantArg) {
			t.Errorf("%s: service got %s\nwant %s", tt.name, jsonOf(arg), jsonOf(tt.wantArg))
		}
	}
}

func jsonOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(data)
}

func TestClient_Errors(t *testing.T) {
	t.Parallel()
	sentinels := []error{wire.ErrNotFound, wire.ErrConflict, wire.ErrAlreadyAnswered, wire.ErrNoQuestion,
		wire.ErrInvalidAnswer, wire.ErrInvalidRequest, wire.ErrWrongState}
	tests := []struct {
		name       string
		err        error // what the service returns
		wantStatus int
		wantCode   string
		wantIs     error // nil: none of the sentinels
	}{
		{"not found", fmt.Errorf("task t-1: %w", wire.ErrNotFound), 404, "not_found", wire.ErrNotFound},
		{"conflict", fmt.Errorf("task t-1: %w", wire.ErrConflict), 409, "conflict", wire.ErrConflict},
		{"already answered", fmt.Errorf("task t-1 round 1: %w by alice via cli at 2025-06-01T10:00:00Z (answer %q)",
			wire.ErrAlreadyAnswered, "B"), 409, "already_answered", wire.ErrAlreadyAnswered},
		{"no question", fmt.Errorf("task t-1 is running: %w", wire.ErrNoQuestion), 409, "no_question", wire.ErrNoQuestion},
		{"invalid answer", fmt.Errorf("task t-1 round 1: %w: not an option", wire.ErrInvalidAnswer), 422, "invalid_answer", wire.ErrInvalidAnswer},
		{"invalid request", fmt.Errorf("%w: route: unknown answerer", wire.ErrInvalidRequest), 422, "invalid", wire.ErrInvalidRequest},
		{"wrong state", fmt.Errorf("task t-1 is finished already: %w", wire.ErrWrongState), 409, "wrong_state", wire.ErrWrongState},
		{"internal", errors.New("nats: connection closed"), 500, "internal", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &apitest.Service{AnswerFunc: func(context.Context, wire.AnswerRequest) (*wire.Task, error) {
				return nil, tt.err
			}}
			c := newClient(t, svc, "s3cret")
			_, err := c.Answer(t.Context(), wire.AnswerRequest{TaskID: "t-1", Answer: "B"})
			want := &client.Error{Status: tt.wantStatus, Code: tt.wantCode, Message: tt.err.Error()}
			got, ok := errors.AsType[*client.Error](err)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("Answer error = %#v, want %#v", err, want)
			}
			for _, s := range sentinels {
				if is := errors.Is(err, s); is != (s == tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = %t, want %t", err, s, is, !is)
				}
			}
		})
	}
}

func TestClient_ErrorsOutsideTheService(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := &apitest.Service{GetFunc: func(context.Context, string) (*wire.Task, error) {
		t.Error("the service was called")
		return nil, nil
	}}

	_, err := newClient(t, svc, "wrong").Get(ctx, "t-1")
	if got, ok := errors.AsType[*client.Error](err); !ok || got.Status != 401 || got.Code != "unauthorized" {
		t.Errorf("Get with a wrong token = %v, want a 401 unauthorized *Error", err)
	}
	if errors.Is(err, wire.ErrNotFound) {
		t.Errorf("a 401 is ErrNotFound")
	}

	_, err = newClient(t, svc, "s3cret").Get(ctx, "")
	if !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("Get(\"\") = %v, want ErrInvalidRequest", err)
	}

	// Not the API: a proxy's error page, a wrong base URL.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream unavailable", http.StatusBadGateway)
	}))
	defer proxy.Close()
	_, err = client.New(proxy.URL, "s3cret", client.WithHTTPClient(proxy.Client())).Get(ctx, "t-1")
	want := &client.Error{Status: 502, Message: "upstream unavailable"}
	if got, ok := errors.AsType[*client.Error](err); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("Get through a failing proxy = %#v, want %#v", err, want)
	}
	if want := "agora api: upstream unavailable (HTTP 502)"; err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}

	// No server at all: a transport error, not an *Error.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	_, err = client.New(gone.URL, "").Get(ctx, "t-1")
	if _, ok := errors.AsType[*client.Error](err); err == nil || ok {
		t.Errorf("Get from a closed server = %v, want a transport error", err)
	}
}

func TestError_Text(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *client.Error
		want string
	}{
		{&client.Error{Status: 404, Code: "not_found", Message: "task t-1: task not found"}, "agora api: task t-1: task not found (HTTP 404, not_found)"},
		{&client.Error{Code: "internal", Message: "watch: closed"}, "agora api: watch: closed (internal)"},
		{&client.Error{Status: 502, Message: "Bad Gateway"}, "agora api: Bad Gateway (HTTP 502)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestClient_Watch(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	svc := &apitest.Service{WatchFunc: func(ctx context.Context, fn func(wire.Change)) error {
		fn(wire.Change{TaskID: "t-1", Task: richTask("t-1", wire.StateRunning)})
		fn(wire.Change{TaskID: "t-2", Task: richTask("t-2", wire.StateRunning)})
		fn(wire.Change{TaskID: "t-1", Removed: true})
		<-ctx.Done()
		close(ended)
		return nil
	}}
	c := newClient(t, svc, "s3cret")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []wire.Change
	err := c.Watch(ctx, "t-1", func(ch wire.Change) {
		got = append(got, ch)
		if len(got) == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Watch = %v, want context.Canceled once ctx ends", err)
	}
	want := []wire.Change{{TaskID: "t-1", Task: richTask("t-1", wire.StateRunning)}, {TaskID: "t-1", Removed: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Watch(t-1) saw %s\nwant %s", jsonOf(got), jsonOf(want))
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the service's Watch context did not end within 10s of the client's")
	}
}

func TestClient_WatchErrors(t *testing.T) {
	t.Parallel()
	failing := &apitest.Service{WatchFunc: func(context.Context, func(wire.Change)) error {
		return errors.New("nats: connection closed")
	}}
	err := newClient(t, failing, "s3cret").Watch(t.Context(), "", func(wire.Change) {})
	want := &client.Error{Code: "internal", Message: "nats: connection closed"}
	if got, ok := errors.AsType[*client.Error](err); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("Watch of a failing service = %#v, want %#v", err, want)
	}

	err = newClient(t, failing, "").Watch(t.Context(), "", func(wire.Change) {})
	if got, ok := errors.AsType[*client.Error](err); !ok || got.Status != 401 {
		t.Errorf("Watch without a token = %v, want a 401 *Error", err)
	}

	ended := &apitest.Service{WatchFunc: func(context.Context, func(wire.Change)) error { return nil }}
	err = newClient(t, ended, "s3cret").Watch(t.Context(), "", func(wire.Change) {})
	if err == nil || !strings.Contains(err.Error(), "event stream ended") {
		t.Errorf("Watch of a stream the API ends = %v, want event stream ended", err)
	}
}

// waitService serves task t-1: Get answers from states in turn (the last
// one repeating), Watch sends changes on each stream it opens.
type waitService struct {
	apitest.Service
	gets    atomic.Int32
	streams atomic.Int32
}

func newWaitService(states []wire.State, changes func(stream int) []wire.Change) *waitService {
	s := &waitService{}
	s.GetFunc = func(_ context.Context, id string) (*wire.Task, error) {
		if id != "t-1" {
			return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
		}
		n := int(s.gets.Add(1)) - 1
		return richTask(id, states[min(n, len(states)-1)]), nil
	}
	s.WatchFunc = func(ctx context.Context, fn func(wire.Change)) error {
		n := int(s.streams.Add(1))
		cs := changes(n)
		if cs == nil {
			return nil // this stream ends at once
		}
		for _, c := range cs {
			fn(c)
		}
		<-ctx.Done()
		return nil
	}
	return s
}

func states(s ...wire.State) []wire.State { return s }

func changeTo(id string, state wire.State) wire.Change {
	return wire.Change{TaskID: id, Task: richTask(id, state)}
}

func TestClient_Wait(t *testing.T) {
	t.Parallel()
	running, queued := wire.StateRunning, wire.StateQueued
	tests := []struct {
		name      string
		svc       *waitService
		opts      []client.Option
		taskID    string
		wantState wire.State
		wantErr   error
		wantGets  int32 // 0: not checked
	}{
		{
			name:      "already waiting for an answer",
			svc:       newWaitService(states(wire.StateNeedsInput), func(int) []wire.Change { return []wire.Change{} }),
			taskID:    "t-1",
			wantState: wire.StateNeedsInput, wantGets: 1,
		},
		{
			name:      "already finished",
			svc:       newWaitService(states(wire.StateFinished), func(int) []wire.Change { return []wire.Change{} }),
			taskID:    "t-1",
			wantState: wire.StateFinished, wantGets: 1,
		},
		{
			name: "asks a question later",
			svc: newWaitService(states(queued), func(int) []wire.Change {
				return []wire.Change{changeTo("t-1", running), changeTo("t-1", wire.StateNeedsInput)}
			}),
			taskID:    "t-1",
			wantState: wire.StateNeedsInput, wantGets: 1,
		},
		{
			name: "fails later; other tasks' changes do not count",
			svc: newWaitService(states(running), func(int) []wire.Change {
				return []wire.Change{changeTo("t-2", wire.StateFinished), changeTo("t-1", wire.StateFailed)}
			}),
			taskID:    "t-1",
			wantState: wire.StateFailed, wantGets: 1,
		},
		{
			name:    "removed while waiting",
			svc:     newWaitService(states(running), func(int) []wire.Change { return []wire.Change{{TaskID: "t-1", Removed: true}} }),
			taskID:  "t-1",
			wantErr: wire.ErrNotFound,
		},
		{
			name:    "no such task",
			svc:     newWaitService(states(running), func(int) []wire.Change { return []wire.Change{} }),
			taskID:  "t-404",
			wantErr: wire.ErrNotFound,
		},
		{
			name:      "a quiet stream is polled",
			svc:       newWaitService(states(running, running, wire.StateCancelled), func(int) []wire.Change { return []wire.Change{} }),
			opts:      []client.Option{client.WithPollInterval(time.Millisecond)},
			taskID:    "t-1",
			wantState: wire.StateCancelled, wantGets: 3,
		},
		{
			name: "a broken stream is reopened",
			svc: newWaitService(states(running), func(stream int) []wire.Change {
				if stream == 1 {
					return nil
				}
				return []wire.Change{changeTo("t-1", wire.StateExpired)}
			}),
			opts:      []client.Option{client.WithReopenDelay(time.Millisecond)},
			taskID:    "t-1",
			wantState: wire.StateExpired, wantGets: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, &tt.svc.Service, "s3cret", tt.opts...)
			got, err := c.Wait(t.Context(), tt.taskID)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Wait(%s) = %v, %v; want %v", tt.taskID, got, err, tt.wantErr)
				}
			case err != nil || got.State != tt.wantState || got.ID != tt.taskID:
				t.Errorf("Wait(%s) = %v, %v; want the task in state %s", tt.taskID, got, err, tt.wantState)
			}
			if n := tt.svc.gets.Load(); tt.wantGets != 0 && n != tt.wantGets {
				t.Errorf("Wait(%s) read the task %d times, want %d", tt.taskID, n, tt.wantGets)
			}
		})
	}
}

// A stream that breaks and cannot be reopened (the API restarts behind a
// gateway that answers 503 meanwhile) ends the wait after 5 reopens.
func TestClient_WaitGivesUp(t *testing.T) {
	t.Parallel()
	svc := newWaitService(states(wire.StateRunning), func(int) []wire.Change { return nil })
	h, err := api.NewHandler(api.Config{Service: &svc.Service})
	if err != nil {
		t.Fatal(err)
	}
	var streams atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/events" && streams.Add(1) > 1 {
			http.Error(w, "no upstream", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "", client.WithHTTPClient(srv.Client()), client.WithReopenDelay(time.Millisecond))
	_, err = c.Wait(t.Context(), "t-1")
	if want := "wait for task t-1: the event stream broke and 5 reopens failed: agora api: no upstream (HTTP 503)"; err == nil || err.Error() != want {
		t.Errorf("Wait = %v, want %s", err, want)
	}
	if n := streams.Load(); n != 6 {
		t.Errorf("Wait opened the stream %d times, want 6 (the first and five reopens)", n)
	}
}

func TestClient_WaitEnds(t *testing.T) {
	t.Parallel()
	t.Run("with its context", func(t *testing.T) {
		t.Parallel()
		svc := newWaitService(states(wire.StateRunning), func(int) []wire.Change { return []wire.Change{} })
		ctx, cancel := context.WithCancel(t.Context())
		var opened atomic.Bool
		svc.GetFunc = func(context.Context, string) (*wire.Task, error) {
			opened.Store(true)
			cancel() // the wait is under way: give up
			return richTask("t-1", wire.StateRunning), nil
		}
		_, err := newClient(t, &svc.Service, "s3cret").Wait(ctx, "t-1")
		if !errors.Is(err, context.Canceled) || !opened.Load() {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
	})
	t.Run("at once when there is no API", func(t *testing.T) {
		t.Parallel()
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		if _, err := client.New(gone.URL, "").Wait(t.Context(), "t-1"); err == nil {
			t.Error("Wait with no API = nil error")
		}
	})
	t.Run("with an empty id", func(t *testing.T) {
		t.Parallel()
		if _, err := client.New("http://127.0.0.1:1", "").Wait(t.Context(), ""); !errors.Is(err, wire.ErrInvalidRequest) {
			t.Errorf("Wait(\"\") = %v, want ErrInvalidRequest", err)
		}
	})
}
