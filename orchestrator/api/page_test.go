package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

// TestHandler_PageQuery: limit and cursor reach the service as given, the
// next page's cursor comes back as next_cursor, and a limit or cursor
// that cannot be taken is a 400 naming the parameter (and the maximum).
func TestHandler_PageQuery(t *testing.T) {
	t.Parallel()
	var gotList wire.ListOptions
	var gotQuestions wire.PageOptions
	svc := &apitest.Service{
		ListFunc: func(_ context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
			if opts.Cursor == "refused" {
				return wire.TaskPage{}, &wire.PageError{Param: "cursor", Reason: `"refused" is not a cursor of this list`}
			}
			gotList = opts
			return wire.TaskPage{Tasks: []*wire.Task{task("t-9", wire.StateQueued)}, NextCursor: "next-9"}, nil
		},
		QuestionsFunc: func(_ context.Context, opts wire.PageOptions) (wire.QuestionPage, error) {
			gotQuestions = opts
			return wire.QuestionPage{}, nil
		},
	}
	h := newHandler(t, svc)

	rec := serve(h, "GET", "/v1/tasks?state=queued&limit=7&cursor=abc", "")
	want := wire.ListOptions{State: wire.StateQueued, Limit: 7, Cursor: "abc"}
	if rec.Code != http.StatusOK || gotList != want {
		t.Errorf("GET /v1/tasks?state=queued&limit=7&cursor=abc = %d, List(%+v); want 200, List(%+v)", rec.Code, gotList, want)
	}
	checkBody(t, rec.Body.String(), []string{`"tasks":[{"id":"t-9"`, `"next_cursor":"next-9"`})
	rec = serve(h, "GET", "/v1/questions?limit=1000", "")
	if rec.Code != http.StatusOK || gotQuestions != (wire.PageOptions{Limit: 1000}) {
		t.Errorf("GET /v1/questions?limit=1000 = %d, Questions(%+v)", rec.Code, gotQuestions)
	}
	checkBody(t, rec.Body.String(), []string{`"questions":[]`})
	if strings.Contains(rec.Body.String(), "next_cursor") {
		t.Errorf("the last page has a next_cursor: %s", rec.Body)
	}

	for _, tt := range []struct{ target, want string }{
		{"/v1/tasks?limit=0", `query: limit \"0\": want a whole number from 1 to 1000 (default 100)`},
		{"/v1/tasks?limit=1001", `query: limit \"1001\": want a whole number from 1 to 1000`},
		{"/v1/tasks?limit=-3", `query: limit \"-3\"`},
		{"/v1/tasks?limit=ten", `query: limit \"ten\"`},
		{"/v1/tasks?limit=", `query: limit \"\"`},
		{"/v1/questions?limit=5000", `query: limit \"5000\": want a whole number from 1 to 1000`},
		{"/v1/tasks?limit=1&limit=2", `query: limit given 2 times`},
		{"/v1/tasks?cursor=", `query: cursor is empty`},
		{"/v1/tasks?cursor=refused", `query: cursor: \"refused\" is not a cursor of this list`},
	} {
		rec := serve(h, "GET", tt.target, "")
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tt.want) || !strings.Contains(rec.Body.String(), `"code":"invalid"`) {
			t.Errorf("GET %s = %d %s; want 400 invalid with %s", tt.target, rec.Code, rec.Body, tt.want)
		}
	}
}

// TestRegistryPages: the registry lists page by name and by version; a
// walk with registrations between pages lists each entry once.
func TestRegistryPages(t *testing.T) {
	t.Parallel()
	srv := registryServer(t)
	get := func(path string) (int, wire.EntryList, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&raw)
		var list wire.EntryList
		_ = json.Unmarshal(raw, &list)
		return resp.StatusCode, list, string(raw)
	}
	register := func(name string, n int) {
		t.Helper()
		body := fmt.Sprintf(`{"name":%q,"values":{"N":"%d"}}`, name, n)
		resp, err := http.Post(srv.URL+"/v1/envs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("register env %s #%d = %d", name, n, resp.StatusCode)
		}
	}
	for _, name := range []string{"b", "d", "f", "h", "j"} {
		register(name, 1)
	}
	for n := 2; n <= 5; n++ {
		register("b", n)
	}

	walk := func(path string, between func(page int), key func(*wire.Entry) string) []string {
		t.Helper()
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			q := path + "?limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			status, list, raw := get(q)
			if status != http.StatusOK || len(list.Entries) > 2 {
				t.Fatalf("GET %s = %d %s", q, status, raw)
			}
			for _, e := range list.Entries {
				got = append(got, key(e))
			}
			between(page)
			if list.NextCursor == "" {
				return got
			}
			cursor = list.NextCursor
		}
	}
	// A name registered behind the walk is not listed; one ahead of it is.
	names := walk("/v1/envs", func(page int) {
		if page == 0 {
			register("a", 1)
			register("g", 1)
		}
	}, func(e *wire.Entry) string { return e.Name })
	if strings.Join(names, ",") != "b,d,f,g,h,j" {
		t.Errorf("walk of /v1/envs = %v, want b,d,f,g,h,j (a was registered behind the walk)", names)
	}
	versions := walk("/v1/envs/b/versions", func(page int) {
		if page == 1 {
			register("b", 6)
		}
	}, func(e *wire.Entry) string { return fmt.Sprint(e.Seq) })
	if strings.Join(versions, ",") != "1,2,3,4,5,6" {
		t.Errorf("walk of /v1/envs/b/versions = %v, want 1,…,6", versions)
	}

	for _, path := range []string{"/v1/envs?limit=1001", "/v1/envs/b/versions?limit=0", "/v1/subagents?cursor=xyz",
		"/v1/envs/b/versions?cursor=" + firstCursor(t, get, "/v1/envs?limit=1")} {
		if status, _, raw := get(path); status != http.StatusBadRequest || !strings.Contains(raw, `"code":"invalid"`) {
			t.Errorf("GET %s = %d %s; want 400 invalid", path, status, raw)
		}
	}
}

// firstCursor is the next_cursor of the first page of path.
func firstCursor(t *testing.T, get func(string) (int, wire.EntryList, string), path string) string {
	t.Helper()
	_, list, raw := get(path)
	if list.NextCursor == "" {
		t.Fatalf("GET %s has no next page: %s", path, raw)
	}
	return list.NextCursor
}
