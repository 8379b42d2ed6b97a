package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// scopeServer is the API in front of a real orchestrator (embedded NATS,
// file storage, a registry, no runner: rounds stay queued unless the test
// publishes their events) with the tokens of issue 10's finding 4.
type scopeServer struct {
	srv   *httptest.Server
	bus   *bus.Bus
	reg   *registry.Registry
	orch  *orchestrator.Orchestrator
	store storage.Store
}

// withConfig serves the same orchestrator and registry under another
// token configuration, as a restarted serve with changed flags would.
func (s *scopeServer) withConfig(t *testing.T, cfg api.Config) *scopeServer {
	t.Helper()
	cfg.Service, cfg.Registry, cfg.Logger = s.orch, s.reg, natstest.Logger(t)
	h, err := api.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(checked(t, h))
	t.Cleanup(srv.Close)
	return &scopeServer{srv: srv, bus: s.bus, reg: s.reg, orch: s.orch, store: s.store}
}

func newScopeServer(t *testing.T, cfg api.Config) *scopeServer {
	t.Helper()
	ctx := t.Context()
	b, store := bustest.Bus(t), storagetest.FileStore(t)
	reg, err := registry.Open(ctx, b, store)
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Store: store, Registry: reg, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	cfg.Service, cfg.Registry, cfg.Logger = o, reg, natstest.Logger(t)
	h, err := api.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(checked(t, h))
	t.Cleanup(srv.Close)
	return &scopeServer{srv: srv, bus: b, reg: reg, orch: o, store: store}
}

// call sends method path with body as the holder of token and returns the
// status and the body decoded as JSON (nil when empty).
func (s *scopeServer) call(t *testing.T, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(bytes.TrimSpace(data)) > 0 {
		_ = json.Unmarshal(data, &out)
	}
	return resp.StatusCode, out
}

// items is the list body[key], nil when it is none.
func items(body map[string]any, key string) []any {
	l, _ := body[key].([]any)
	return l
}

// stream opens GET /v1/events as the holder of token and sends the id
// and state of every task change on the channel it returns.
func (s *scopeServer) stream(t *testing.T, token string) <-chan [2]string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events = %d", resp.StatusCode)
	}
	out := make(chan [2]string, 64)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var c wire.Change
			if json.Unmarshal([]byte(data), &c) != nil {
				continue
			}
			state := "removed"
			if c.Task != nil {
				state = string(c.Task.State)
			}
			select {
			case out <- [2]string{c.TaskID, state}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// ask plays round 1 of task id: started, then a question.
func (s *scopeServer) ask(t *testing.T, token, id string) {
	t.Helper()
	if err := s.publishAsk(t, id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "task "+id+" to ask its question", func() bool {
		_, task := s.call(t, token, "GET", "/v1/tasks/"+id, "")
		return task["state"] == "needs_input"
	})
}

// publishAsk publishes round 1 of task id's events: started, then the
// question "Rewrite A or B?".
func (s *scopeServer) publishAsk(t *testing.T, id string) error {
	t.Helper()
	dispatch := id + "-r1"
	zero, ms := 0, int64(10)
	for _, ev := range []schemas.Event{
		{Kind: schemas.KindStarted, DispatchID: dispatch, Time: time.Now().UTC()},
		{Kind: schemas.KindNeedsInput, DispatchID: dispatch, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms,
			NeedsInput: &schemas.NeedsInput{Question: "Rewrite A or B?", Options: []string{"A", "B"}}},
	} {
		if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
			return fmt.Errorf("publish %s of %s: %w", ev.Kind, dispatch, err)
		}
	}
	return nil
}

func submitOf(id string) string {
	return fmt.Sprintf(`{"task_id":%q,"subagent":{"name":"s","runtime":"exec","command":["true"]}}`, id)
}

// TestTokensScoped is issue 10's finding 4: with --token alice:… --token
// bob:…, bob read, answered (as anybody he liked), continued, cancelled
// and deleted alice's tasks. Now a named token sees and acts on the tasks
// it submitted only; another's task is not_found, as if it did not exist;
// by is the token's own name unless the token is an answering service or
// an admin, and then both are recorded; every action is in the task's
// history.
func TestTokensScoped(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce", "bob:b0b", "slack:sl4ck:answerer", "root:r00t:admin"}})
	const alice, bob, slack, root = "al1ce", "b0b", "sl4ck", "r00t"
	if code, body := s.call(t, alice, "POST", "/v1/tasks", submitOf("ta")); code != 201 {
		t.Fatalf("alice submits = %d %v", code, body)
	}
	if code, body := s.call(t, bob, "POST", "/v1/tasks", submitOf("tb")); code != 201 {
		t.Fatalf("bob submits = %d %v", code, body)
	}
	s.ask(t, alice, "ta")

	// Bob reaches nothing of alice's task.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/tasks/ta", ""},
		{"GET", "/v1/tasks/ta/logs", ""},
		{"POST", "/v1/tasks/ta/answer", `{"answer":"A","by":"alice"}`},
		{"POST", "/v1/tasks/ta/answer", `{"answer":"A"}`},
		{"POST", "/v1/tasks/ta/answer-all-like", `{"answer":"A"}`},
		{"POST", "/v1/tasks/ta/continue", `{"message":"more"}`},
		{"POST", "/v1/tasks/ta/cancel", ""},
		{"POST", "/v1/tasks/ta/respawn", ""},
		{"DELETE", "/v1/tasks/ta", ""},
	} {
		code, body := s.call(t, bob, c.method, c.path, c.body)
		if c.body != "" && strings.Contains(c.body, `"by"`) {
			// Refused before the task is looked at: bob is no answerer.
			if code != 403 {
				t.Errorf("bob: %s %s %s = %d %v; want 403", c.method, c.path, c.body, code, body)
			}
			continue
		}
		if code != 404 || body["code"] != "not_found" {
			t.Errorf("bob: %s %s %s = %d %v; want 404 not_found", c.method, c.path, c.body, code, body)
		}
	}
	if _, list := s.call(t, bob, "GET", "/v1/tasks", ""); len(items(list, "tasks")) != 1 || items(list, "tasks")[0].(map[string]any)["id"] != "tb" {
		t.Errorf("bob lists %v; want only tb", list["tasks"])
	} else if sum, _ := list["summary"].(map[string]any); sum["text"] != "1 queued" {
		t.Errorf("bob's summary = %v; want his own task counted only: 1 queued", sum)
	}
	if _, qs := s.call(t, bob, "GET", "/v1/questions", ""); len(items(qs, "questions")) != 0 {
		t.Errorf("bob's questions = %v; want none (the only one is alice's)", qs["questions"])
	}
	if _, gs := s.call(t, bob, "GET", "/v1/question-groups", ""); len(items(gs, "groups")) != 0 {
		t.Errorf("bob's question groups = %v; want none", gs["groups"])
	}
	if code, body := s.call(t, bob, "GET", "/v1/parked-events", ""); code != 403 {
		t.Errorf("bob: GET /v1/parked-events = %d %v; want 403 (every task's events)", code, body)
	}
	// Submitting under alice's task id does not hand bob her task, nor
	// tell him what her request holds; alice is told what differs.
	if code, body := s.call(t, bob, "POST", "/v1/tasks", submitOf("ta")); code != 409 || body["differences"] != nil {
		t.Errorf("bob resubmits alice's id = %d %v; want 409 without differences", code, body)
	}
	other := `{"task_id":"ta","subagent":{"name":"s","runtime":"exec","command":["true"]},"route":"memory"}`
	if code, body := s.call(t, bob, "POST", "/v1/tasks", other); code != 409 || body["differences"] != nil || strings.Contains(fmt.Sprint(body), "route") {
		t.Errorf("bob submits another request under alice's id = %d %v; want 409 naming nothing of hers", code, body)
	}
	if code, body := s.call(t, alice, "POST", "/v1/tasks", other); code != 409 || len(items(body, "differences")) != 1 {
		t.Errorf("alice submits another request under her id = %d %v; want 409 with the route's difference", code, body)
	}
	// Alice answers as herself only.
	if code, body := s.call(t, alice, "POST", "/v1/tasks/ta/answer", `{"answer":"A","by":"carol"}`); code != 403 {
		t.Errorf("alice answers as carol = %d %v; want 403", code, body)
	}

	bobsEvents := s.stream(t, bob)

	// The answering service sees every question and answers for a person:
	// both are recorded.
	if _, qs := s.call(t, slack, "GET", "/v1/questions", ""); len(items(qs, "questions")) != 1 {
		t.Errorf("slack's questions = %v; want alice's", qs["questions"])
	}
	code, task := s.call(t, slack, "POST", "/v1/tasks/ta/answer", `{"answer":"B","by":"carol","channel":"slack"}`)
	if code != 200 {
		t.Fatalf("slack answers for carol = %d %v", code, task)
	}
	a, _ := items(task, "rounds")[0].(map[string]any)["answer"].(map[string]any)
	if a["by"] != "carol" || a["via"] != "slack" || a["channel"] != "slack" {
		t.Errorf("answer = %v; want by carol via slack through slack", a)
	}
	// ... and acts on nothing else of alice's.
	if code, body := s.call(t, slack, "POST", "/v1/tasks/ta/cancel", ""); code != 404 {
		t.Errorf("slack cancels alice's task = %d %v; want 404", code, body)
	}

	code, task = s.call(t, alice, "POST", "/v1/tasks/ta/cancel", "")
	if code != 200 || task["owner"] != "alice" {
		t.Fatalf("alice cancels her task = %d %v", code, task)
	}
	var got []string
	for _, e := range items(task, "history") {
		e := e.(map[string]any)
		line := e["action"].(string) + " by " + e["by"].(string)
		if via, _ := e["via"].(string); via != "" {
			line += " via " + via
		}
		if at, _ := e["at"].(string); at == "" {
			t.Errorf("history entry %v has no time", e)
		}
		got = append(got, line)
	}
	if want := []string{"submit by alice", "answer by carol via slack", "cancel by alice"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("history = %q; want %q", got, want)
	}

	// Bob's event stream carried none of that: his own cancel is the
	// first change after alice's that he sees.
	if code, body := s.call(t, bob, "POST", "/v1/tasks/tb/cancel", ""); code != 200 {
		t.Fatalf("bob cancels his task = %d %v", code, body)
	}
	for done := false; !done; {
		select {
		case c := <-bobsEvents:
			if c[0] != "tb" {
				t.Errorf("bob's event stream carried a change of %s (%s)", c[0], c[1])
			}
			done = c == [2]string{"tb", "cancelled"}
		case <-time.After(30 * time.Second):
			t.Fatal("bob's event stream never carried his own cancel")
		}
	}

	// The admin sees and removes anybody's task.
	if code, body := s.call(t, root, "GET", "/v1/tasks/tb", ""); code != 200 {
		t.Errorf("root reads bob's task = %d %v", code, body)
	}
	if code, body := s.call(t, root, "DELETE", "/v1/tasks/tb", ""); code != 204 {
		t.Errorf("root removes bob's task = %d %v", code, body)
	}
}

// TestLocalSecretsGranted is the second half of finding 4: any token could
// register an env bundle naming any local: secret (and have a sub-agent
// print it). Now who may use a local secret is the operator's
// --local-secrets; a bundle naming another one is refused at registration
// and, since a registered bundle can be named by anybody, at submit.
func TestLocalSecretsGranted(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce", "bob:b0b", "root:r00t:admin"},
		LocalSecrets: []string{"alice=github"}})
	const alice, bob, root = "al1ce", "b0b", "r00t"
	env := `{"name":"gh","secrets":{"GITHUB_TOKEN":"local:github"}}`
	code, body := s.call(t, bob, "POST", "/v1/envs", env)
	if code != 422 || !strings.Contains(body["error"].(string), "token bob may not use the local secret(s) local:github") {
		t.Errorf("bob registers a bundle naming local:github = %d %v; want 422 naming it", code, body)
	}
	if code, body := s.call(t, alice, "POST", "/v1/envs", `{"name":"deploy","secrets":{"KEY":"local:deploy-key"}}`); code != 422 {
		t.Errorf("alice registers a bundle naming local:deploy-key = %d %v; want 422 (granted github only)", code, body)
	}
	if code, body := s.call(t, alice, "POST", "/v1/envs", env); code != 201 {
		t.Fatalf("alice registers a bundle naming local:github = %d %v", code, body)
	}
	if _, err := s.reg.RegisterSubagent(t.Context(), wire.Subagent{Name: "printer", Runtime: "exec",
		Command: wire.Command{"/bin/sh", "-c", "echo $GITHUB_TOKEN | base64"}, Env: []string{"gh"}}); err != nil {
		t.Fatal(err)
	}
	code, body = s.call(t, bob, "POST", "/v1/tasks", `{"task_id":"leak","subagent_ref":"printer"}`)
	if code != 422 || !strings.Contains(body["error"].(string), "local:github (env bundle gh") {
		t.Errorf("bob submits a sub-agent whose bundle names local:github = %d %v; want 422 naming it", code, body)
	}
	if code, body := s.call(t, alice, "POST", "/v1/tasks", `{"task_id":"mine","subagent_ref":"printer"}`); code != 201 {
		t.Errorf("alice submits it = %d %v; want 201", code, body)
	}
	if code, body := s.call(t, root, "POST", "/v1/tasks", `{"task_id":"ops","subagent_ref":"printer"}`); code != 201 {
		t.Errorf("the admin submits it = %d %v; want 201", code, body)
	}

	// The grant is taken away (serve restarted without it): alice can no
	// longer run her task again, by respawn or by continue; the admin can.
	if code, body := s.call(t, alice, "POST", "/v1/tasks/mine/cancel", ""); code != 200 {
		t.Fatalf("alice cancels her task = %d %v", code, body)
	}
	if code, body := s.call(t, alice, "POST", "/v1/tasks", `{"task_id":"done","subagent_ref":"printer"}`); code != 201 {
		t.Fatalf("alice submits a second task = %d %v", code, body)
	}
	zero, ms := 0, int64(5)
	if _, err := s.bus.PublishEvent(t.Context(), schemas.Event{Kind: schemas.KindFinished, DispatchID: "done-r1", TaskID: "done", Round: 1,
		Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "task done finished", func() bool {
		task, err := s.orch.Get(orchestrator.WithIdentity(t.Context(), orchestrator.Identity{Admin: true}), "done")
		return err == nil && task.State == wire.StateFinished
	})
	revoked := s.withConfig(t, api.Config{Tokens: []string{"alice:al1ce", "bob:b0b", "root:r00t:admin"}})
	code, body = revoked.call(t, alice, "POST", "/v1/tasks/mine/respawn", "")
	if code != 422 || !strings.Contains(body["error"].(string), "local:github (env bundle gh") {
		t.Errorf("alice respawns after her grant was taken away = %d %v; want 422 naming local:github", code, body)
	}
	code, body = revoked.call(t, alice, "POST", "/v1/tasks/done/continue", `{"message":"again"}`)
	if code != 422 || !strings.Contains(body["error"].(string), "local:github (env bundle gh") {
		t.Errorf("alice continues after her grant was taken away = %d %v; want 422 naming local:github", code, body)
	}
	if code, body := revoked.call(t, root, "POST", "/v1/tasks/mine/respawn", ""); code != 200 {
		t.Errorf("the admin respawns it = %d %v; want 200", code, body)
	}
}

// TestFailedTokensLimited: wrong bearer tokens from one client are
// limited — after ten, 429 with Retry-After, the right token included —
// while another client is not affected.
func TestFailedTokensLimited(t *testing.T) {
	t.Parallel()
	s := newScopeServer(t, api.Config{Tokens: []string{"alice:al1ce"}})
	for i := range 10 {
		if code, _ := s.call(t, fmt.Sprintf("guess-%d", i), "GET", "/v1/tasks", ""); code != 401 {
			t.Fatalf("wrong token %d: %d, want 401", i, code)
		}
	}
	req, _ := http.NewRequest("GET", s.srv.URL+"/v1/tasks", nil)
	req.Header.Set("Authorization", "Bearer al1ce")
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":"rate_limited"`) {
		t.Errorf("the right token after 10 wrong ones: %d, Retry-After %q, %s; want 429 rate_limited with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// Another client address (here: the same server reached through a
	// handler that sees another peer) is not limited by this one's failures.
	other := httptest.NewRequest("GET", "/v1/tasks", nil)
	other.RemoteAddr = "192.0.2.7:5555"
	other.Header.Set("Authorization", "Bearer al1ce")
	rec := httptest.NewRecorder()
	s.srv.Config.Handler.ServeHTTP(rec, other)
	if rec.Code != 200 {
		t.Errorf("the right token from another client: %d, want 200", rec.Code)
	}
}
