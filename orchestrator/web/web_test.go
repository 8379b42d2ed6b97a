package web_test

// Tests against the real orchestrator (embedded NATS, no runner: the test
// plays the rounds' events) with the pages served over loopback HTTP and
// driven as a browser without JavaScript drives them: forms, cookies,
// redirects. browser_test.go (package roles) drives them in Chromium.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/orchestrator/web"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).Start.func1"))
}

type fixture struct {
	t     *testing.T
	store storage.Store
	bus   *bus.Bus
	orch  *orchestrator.Orchestrator
	srv   *httptest.Server
}

var seq atomic.Int64

// newFixture serves the inbox (and the API, as agora serve does) of a real
// orchestrator with tokens; none means the loopback-only open mode.
func newFixture(t *testing.T, tokens ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, bus: bustest.Bus(t)}
	f.store = storagetest.FileStore(t)
	o, err := orchestrator.New(orchestrator.Config{Bus: f.bus, Store: f.store, Answerers: refusing(t), Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	f.orch = o
	auth, err := api.NewAuth(tokens)
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Config{Service: o, Auth: auth, Logger: natstest.Logger(t), Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	apiH, err := api.NewHandler(api.Config{Service: o, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	// The page's calls to the API must be what openapi.json says.
	mux.Handle("/", openapitest.Handler(t, apiH, openapitest.Lenient))
	for _, p := range web.Patterns {
		mux.Handle(p, h)
	}
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// ask submits a task and plays its round 1 asking q; it returns the task
// id once the question is open.
func (f *fixture) ask(labels map[string]string, q schemas.NeedsInput) string {
	f.t.Helper()
	id := f.submitAsking(labels, q)
	f.waitTask(id, "question open", func(t *wire.Task) bool { return t.State == wire.StateNeedsInput })
	return id
}

// submitAsking submits a task and publishes its round 1 asking q.
func (f *fixture) submitAsking(labels map[string]string, q schemas.NeedsInput) string {
	f.t.Helper()
	id := fmt.Sprintf("w%d", seq.Add(1))
	_, err := f.orch.Submit(f.t.Context(), wire.SubmitRequest{TaskID: id, Route: "human", Labels: labels,
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}})
	if err != nil {
		f.t.Fatalf("Submit: %v", err)
	}
	dispatch := id + "-r1"
	for _, ev := range []schemas.Event{{Kind: schemas.KindStarted, DispatchID: dispatch}, {Kind: schemas.KindNeedsInput, DispatchID: dispatch, NeedsInput: &q}} {
		ev.Time = time.Now().UTC()
		if ev.Kind.Terminal() {
			zero, ms := 0, int64(10)
			ev.ExitCode, ev.DurationMS = &zero, &ms
		}
		if _, err := f.bus.PublishEvent(f.t.Context(), ev); err != nil {
			f.t.Fatal(err)
		}
	}
	return id
}

// askQuietly is ask without waiting for the question to stay open (a
// rule may answer it at once).
func (f *fixture) askQuietly(labels map[string]string, q schemas.NeedsInput) string {
	f.t.Helper()
	return f.submitAsking(labels, q)
}

func (f *fixture) waitTask(id, what string, cond func(*wire.Task) bool) *wire.Task {
	f.t.Helper()
	var t *wire.Task
	testutil.Eventually(f.t, 20*time.Second, "task "+id+": "+what, func() bool {
		var err error
		t, err = f.orch.Get(f.t.Context(), id)
		return err == nil && cond(t)
	})
	return t
}

func ab() schemas.NeedsInput {
	def := "A"
	return schemas.NeedsInput{Question: "Rewrite A or B?", Options: []string{"A", "B"}, Default: &def, Context: "Both compile."}
}

// browser is a client that keeps cookies and does not follow redirects,
// as the tests check each.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: f.t, base: f.srv.URL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request the way a same-origin page does and returns the
// status, the Location and the body.
func (b *browser) do(method, path string, form url.Values, hdr ...string) (int, string, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(data)
}

func (b *browser) get(path string) (int, string, string) { return b.do(http.MethodGet, path, nil) }

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	_, _, body := b.get(path)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s: %s", path, body)
	}
	return m[1]
}

func (b *browser) login(token string) {
	b.t.Helper()
	status, loc, body := b.do(http.MethodPost, "/ui/login", url.Values{"token": {token}, "next": {"/"}})
	if status != http.StatusSeeOther || loc != "/" {
		b.t.Fatalf("sign in: %d to %q, want 303 to /: %s", status, loc, body)
	}
}

// TestSignIn: without a session the pages send to the sign-in page; a
// wrong token is refused and sets nothing; the right one signs in and the
// inbox shows the question under the token's name.
func TestSignIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	id := f.ask(nil, ab())
	b := f.browser()
	status, loc, _ := b.get("/tasks/" + id)
	if status != http.StatusSeeOther || loc != "/ui/login?next=%2Ftasks%2F"+id {
		t.Fatalf("GET /tasks/%s signed out: %d to %q, want 303 to the sign-in page", id, status, loc)
	}
	status, _, body := b.do(http.MethodPost, "/ui/login", url.Values{"token": {"guess"}, "next": {"/"}})
	if status != http.StatusUnauthorized || !strings.Contains(body, "not a token this agora accepts") {
		t.Errorf("sign in with a wrong token: %d, want 401 saying so: %s", status, body)
	}
	if u, _ := url.Parse(f.srv.URL); len(b.c.Jar.Cookies(u)) != 0 {
		t.Errorf("a refused sign-in set cookies: %v", b.c.Jar.Cookies(u))
	}
	b.login("wonderland")
	status, _, body = b.get("/")
	for _, want := range []string{"Rewrite A or B?", "Both compile.", `href="/tasks/` + id + `"`, "alice", "(default)", "1 need input"} {
		if !strings.Contains(body, want) {
			t.Errorf("inbox (status %d) lacks %q", status, want)
		}
	}
	// A redirect after sign-in never leaves the site.
	status, loc, _ = b.do(http.MethodPost, "/ui/login", url.Values{"token": {"wonderland"}, "next": {"//evil.example/"}})
	if status != http.StatusSeeOther || loc != "/" {
		t.Errorf("sign in with next=//evil.example/: %d to %q, want 303 to /", status, loc)
	}
}

// TestAnswerFromInbox: an option pressed answers the question as the
// signed-in person from the web; the same form again is refused with who
// answered and when; a form without its CSRF token, or from another site,
// is refused and changes nothing.
func TestAnswerFromInbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	id := f.ask(nil, ab())
	other := f.ask(nil, schemas.NeedsInput{Question: "Which branch?"})
	b := f.browser()
	b.login("wonderland")
	token := b.csrf("/")

	refused := []struct {
		name string
		form url.Values
		hdr  []string
		want int
	}{
		{"no CSRF token", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}}, nil, http.StatusForbidden},
		{"a wrong CSRF token", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}, "csrf": {"x" + token}}, nil, http.StatusForbidden},
		{"from another site", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}, "csrf": {token}}, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"not an option", url.Values{"task": {id}, "round": {"1"}, "option": {"C"}, "csrf": {token}, "back": {"/"}}, nil, http.StatusBadRequest},
		{"a round that is no number", url.Values{"task": {id}, "round": {"one"}, "option": {"B"}, "csrf": {token}, "back": {"/"}}, nil, http.StatusBadRequest},
	}
	for _, tt := range refused {
		status, _, body := b.do(http.MethodPost, "/ui/answer", tt.form, tt.hdr...)
		if status != tt.want {
			t.Errorf("answer %s: %d, want %d: %s", tt.name, status, tt.want, body)
		}
	}
	if task, _ := f.orch.Get(t.Context(), id); task.State != wire.StateNeedsInput {
		t.Fatalf("after refused answers the task is %s, want still needs_input", task.State)
	}

	status, loc, _ := b.do(http.MethodPost, "/ui/answer", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}, "csrf": {token}, "back": {"/tasks/" + id}})
	if status != http.StatusSeeOther || loc != "/tasks/"+id+"?answered="+id {
		t.Fatalf("answer B: %d to %q, want 303 back to the task page", status, loc)
	}
	task := f.waitTask(id, "round 2 queued", func(t *wire.Task) bool { return len(t.Rounds) == 2 })
	if a := task.Rounds[0].Answer; a == nil || a.Value != "B" || a.By != "alice" || a.Channel != web.Channel {
		t.Errorf("answer = %+v, want B by alice from web", a)
	}
	_, _, body := b.get(loc)
	for _, want := range []string{"Answered: " + id, "answered <strong class=\"answer-value\">B</strong> by <strong class=\"answer-by\">alice</strong>", "Round 2"} {
		if !strings.Contains(body, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	status, _, body = b.do(http.MethodPost, "/ui/answer", url.Values{"task": {id}, "round": {"1"}, "option": {"A"}, "csrf": {token}, "back": {"/"}})
	if status != http.StatusConflict || !strings.Contains(body, "already answered &#34;B&#34; by alice (web) at") {
		t.Errorf("answer again: %d, want 409 saying who answered: %s", status, body)
	}

	// Free text, for a question without options.
	status, _, _ = b.do(http.MethodPost, "/ui/answer", url.Values{"task": {other}, "round": {"1"}, "text": {" release-2 "}, "csrf": {token}, "back": {"/"}})
	if status != http.StatusSeeOther {
		t.Fatalf("free-text answer: %d, want 303", status)
	}
	task = f.waitTask(other, "answered", func(t *wire.Task) bool { return len(t.Rounds) == 2 })
	if a := task.Rounds[0].Answer; a.Value != "release-2" {
		t.Errorf("free-text answer = %q, want release-2", a.Value)
	}
}

// TestGroupAnsweredAtOnce: identical questions of one batch are one item
// of the inbox, and one answer answers them all.
func TestGroupAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "bob:builder:answerer")
	batch := map[string]string{wire.BatchLabel: fmt.Sprintf("b%d", seq.Add(1))}
	ids := []string{f.ask(batch, ab()), f.ask(batch, ab()), f.ask(batch, ab())}
	b := f.browser()
	b.login("builder")
	_, _, body := b.get("/")
	if n := strings.Count(body, "Rewrite A or B?"); n != 1 {
		t.Errorf("the batch's question shows %d times, want once", n)
	}
	if !strings.Contains(body, "3 tasks ask this") || !strings.Contains(body, "One answer answers all 3.") {
		t.Errorf("the group does not say it answers 3")
	}
	m := regexp.MustCompile(`action="(/ui/groups/[^"]+/answer)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no group form on the inbox")
	}
	status, loc, _ := b.do(http.MethodPost, m[1], url.Values{"option": {"A"}, "csrf": {b.csrf("/")}, "back": {"/"}})
	if status != http.StatusSeeOther || loc != "/?group=3" {
		t.Fatalf("answer the group: %d to %q, want 303 to /?group=3", status, loc)
	}
	for _, id := range ids {
		task := f.waitTask(id, "answered", func(t *wire.Task) bool { return len(t.Rounds) == 2 })
		if a := task.Rounds[0].Answer; a.Value != "A" || a.By != "bob" || a.Channel != web.Channel {
			t.Errorf("task %s answer = %+v, want A by bob from web", id, a)
		}
	}
}

// TestSessions: a forged, an expired or an unknown cookie is no session;
// sign-out clears the cookie.
func TestSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	b := f.browser()
	u, _ := url.Parse(f.srv.URL)
	for _, v := range []string{"v1.9999999999.forged", "v1.1.x", "garbage", ""} {
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "agora_session", Value: v, Path: "/"}})
		if status, loc, _ := b.get("/"); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
			t.Errorf("cookie %q: %d to %q, want the sign-in page", v, status, loc)
		}
	}
	b.login("wonderland")
	if status, _, _ := b.get("/"); status != http.StatusOK {
		t.Fatalf("signed in: %d", status)
	}
	status, loc, _ := b.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {b.csrf("/")}})
	if status != http.StatusSeeOther || loc != "/ui/login" {
		t.Errorf("sign out: %d to %q", status, loc)
	}
	if status, _, _ := b.get("/"); status != http.StatusSeeOther {
		t.Errorf("after sign-out GET / = %d, want 303 to sign in", status)
	}
	// A bearer token works too (a script), with no cookie at all.
	if status, _, _ := b.do(http.MethodGet, "/", nil, "Authorization", "Bearer wonderland"); status != http.StatusOK {
		t.Errorf("GET / with a bearer token: %d, want 200", status)
	}
}

// TestOpenLoopback: without tokens the inbox needs no sign-in on loopback,
// and refuses a request naming another host (DNS rebinding).
func TestOpenLoopback(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask(nil, ab())
	b := f.browser()
	status, _, body := b.get("/")
	if status != http.StatusOK || !strings.Contains(body, id) {
		t.Fatalf("GET / on loopback without tokens: %d, want the inbox with %s", status, id)
	}
	if status, loc, _ := b.get("/ui/login"); status != http.StatusSeeOther || loc != "/" {
		t.Errorf("sign-in page without tokens: %d to %q, want 303 to /", status, loc)
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET / for host attacker.example: %d, want 403", resp.StatusCode)
	}
	status, _, _ = b.do(http.MethodPost, "/ui/answer", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}, "csrf": {b.csrf("/")}, "back": {"/"}})
	if status != http.StatusSeeOther {
		t.Errorf("answer without tokens on loopback: %d, want 303", status)
	}
	f.waitTask(id, "answered", func(t *wire.Task) bool {
		return len(t.Rounds) == 2 && t.Rounds[0].Answer.By == orchestrator.OperatorName
	})
}

// TestEventStream: the stream starts with sync, then says which task
// changed, with its revision as the event id.
func TestEventStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	id := f.ask(nil, ab())
	b := f.browser()
	b.login("wonderland")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/ui/events?task="+id, nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), prefix) {
				return lines.Text()
			}
		}
		t.Fatalf("stream ended before %q: %v", prefix, lines.Err())
		return ""
	}
	next("event: sync")
	if _, err := f.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: id, Answer: "A", By: "carol", Channel: "slack"}); err != nil {
		t.Fatal(err)
	}
	if line := next("id: "); line == "id: 0" {
		t.Errorf("change without a revision: %q", line)
	}
	if line := next("data: "); !strings.Contains(line, `"task_id":"`+id+`"`) {
		t.Errorf("change = %q, want task %s", line, id)
	}
	// Signed out, the stream is refused, not redirected.
	status, _, _ := f.browser().get("/ui/events")
	if status != http.StatusUnauthorized {
		t.Errorf("stream signed out: %d, want 401", status)
	}
}

// TestScopedToken: a token without the answerer or admin role sees its
// own tasks only, on these pages as on the API.
func TestScopedToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "dave:secret")
	id := f.ask(nil, ab()) // the operator's task
	b := f.browser()
	b.login("secret")
	if _, _, body := b.get("/"); strings.Contains(body, id) || strings.Contains(body, "Rewrite A or B?") {
		t.Errorf("dave's inbox shows the operator's task %s", id)
	}
	if status, _, _ := b.get("/tasks/" + id); status != http.StatusNotFound {
		t.Errorf("dave GET /tasks/%s: %d, want 404", id, status)
	}
	status, _, _ := b.do(http.MethodPost, "/ui/answer", url.Values{"task": {id}, "round": {"1"}, "option": {"B"}, "csrf": {b.csrf("/")}, "back": {"/"}})
	if status != http.StatusNotFound {
		t.Errorf("dave answers the operator's task: %d, want 404", status)
	}
	if task, _ := f.orch.Get(t.Context(), id); task.State != wire.StateNeedsInput {
		t.Errorf("the task is %s after dave's refused answer, want needs_input", task.State)
	}
}

// TestConsequenceFromOrchestrator: with the real orchestrator, the inbox
// card and the task page say what happens if nobody answers: on the
// route's last step, the question's default is taken at its deadline.
func TestConsequenceFromOrchestrator(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	id := f.ask(nil, ab())
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	iu := task.Rounds[0].IfUnanswered
	if iu == nil || iu.Action != wire.IfUnansweredDefault {
		t.Fatalf("IfUnanswered = %+v, want the default taken", iu)
	}
	b := f.browser()
	b.login("wonderland")
	want := `If nobody answers: at <time datetime="` + iu.At.UTC().Format(time.RFC3339) + `"`
	for _, path := range []string{"/", "/tasks/" + id} {
		_, _, body := b.get(path)
		if !strings.Contains(body, want) || !strings.Contains(body, "the default <code>A</code> is taken.") {
			t.Errorf("GET %s lacks the consequence %q … the default A is taken", path, want)
		}
	}
}

// TestResultFromOrchestrator: with the real orchestrator, a round that
// finished with a result and an artifact shows both on the task page, and
// the artifact's link downloads it with the session cookie — for the
// owner's and an answerer's session, not for another submitter's.
func TestResultFromOrchestrator(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer", "dave:secret")
	id := fmt.Sprintf("w%d", seq.Add(1))
	if _, err := f.orch.Submit(f.t.Context(), wire.SubmitRequest{TaskID: id, Route: "human",
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	content := "<h1>report</h1>\n"
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(content)))
	if err := f.store.Put(t.Context(), storage.BlobKey(sum), strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	zero, ms := 0, int64(10)
	for _, ev := range []schemas.Event{{Kind: schemas.KindStarted, DispatchID: id + "-r1"},
		{Kind: schemas.KindFinished, DispatchID: id + "-r1", ExitCode: &zero, DurationMS: &ms, Result: json.RawMessage(`"all <b>done</b>"`),
			Artifacts: []schemas.Artifact{{Name: "out/report.html", Size: int64(len(content)), SHA256: sum}}}} {
		ev.Time = time.Now().UTC()
		if _, err := f.bus.PublishEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	f.waitTask(id, "finished", func(t *wire.Task) bool { return t.State == wire.StateFinished })
	b := f.browser()
	b.login("wonderland")
	_, _, page := b.get("/tasks/" + id)
	for _, want := range []string{`<pre class="result-value text">all &lt;b&gt;done&lt;/b&gt;</pre>`, `href="/ui/tasks/` + id + `/artifacts/out/report.html"`} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %s", want)
		}
	}
	if status, _, body := b.get("/ui/tasks/" + id + "/artifacts/out/report.html"); status != http.StatusOK || body != content {
		t.Errorf("artifact with alice's session: %d %q, want the file", status, body)
	}
	status, _, body := b.get("/ui/tasks/" + id + "/result")
	var result string
	if err := json.Unmarshal([]byte(body), &result); status != http.StatusOK || err != nil || result != "all <b>done</b>" {
		t.Errorf("result with alice's session: %d %q (%v), want the JSON string", status, body, err)
	}
	other := f.browser()
	other.login("secret")
	if status, _, _ := other.get("/ui/tasks/" + id + "/artifacts/out/report.html"); status != http.StatusNotFound {
		t.Errorf("artifact with dave's session: %d, want 404 (not his task)", status)
	}
}
