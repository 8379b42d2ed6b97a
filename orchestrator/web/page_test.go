package web_test

// Page tests against a hand-written stand-in for the orchestrator, so a
// page can be shown any task: a result of each kind, artifacts, each
// consequence of an unanswered question, output with agora's own lines
// and a sub-agent's forgeries. pageFixture serves them for the handler
// tests here and for the browser tests (browser_test.go).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/web"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// stubService serves fixed tasks, question groups and outputs; what the
// pages do not call is left to the embedded nil interface (a panic says
// a page called something new).
type stubService struct {
	orchestrator.Service
	mu      sync.Mutex
	tasks   map[string]*wire.Task
	groups  []wire.QuestionGroup
	outputs map[string]string // "task/round"
}

func (s *stubService) Get(_ context.Context, id string) (*wire.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
	}
	c := *t
	return &c, nil
}

func (s *stubService) List(context.Context, wire.ListOptions) (wire.TaskPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p wire.TaskPage
	p.Summary.Counts = map[wire.State]int{}
	for _, t := range s.tasks {
		p.Tasks = append(p.Tasks, t)
		p.Summary.Counts[t.State]++
	}
	return p, nil
}

func (s *stubService) QuestionGroups(context.Context, wire.GroupOptions) ([]wire.QuestionGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups, nil
}

func (s *stubService) Logs(_ context.Context, id string, round int, _ bool, w io.Writer) error {
	s.mu.Lock()
	out, ok := s.outputs[fmt.Sprintf("%s/%d", id, round)]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no output: %w", wire.ErrNotFound)
	}
	// Chunks split anywhere, as the live output comes.
	for len(out) > 0 {
		n := min(len(out), 7)
		if _, err := io.WriteString(w, out[:n]); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}

func (s *stubService) Result(_ context.Context, id string) (json.RawMessage, error) {
	t, err := s.Get(context.Background(), id)
	if err != nil {
		return nil, err
	}
	if t.Result == nil {
		return json.RawMessage("null"), nil
	}
	return t.Result, nil
}

// OpenArtifact serves an artifact's content from outputs["id/artifact/name"].
func (s *stubService) OpenArtifact(_ context.Context, id, name string) (wire.Artifact, io.ReadCloser, error) {
	t, err := s.Get(context.Background(), id)
	if err != nil {
		return wire.Artifact{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range t.Artifacts {
		if a.Name == name {
			return a, io.NopCloser(strings.NewReader(s.outputs[id+"/artifact/"+name])), nil
		}
	}
	return wire.Artifact{}, nil, fmt.Errorf("artifact %s: %w", name, wire.ErrNotFound)
}

func (s *stubService) Watch(ctx context.Context, _ func(wire.Change)) error {
	<-ctx.Done()
	return nil
}

// pageFixture serves the pages of a stubService over loopback, open (no
// tokens), at a fixed clock.
type pageFixture struct {
	svc *stubService
	srv *httptest.Server
	now time.Time
}

func newPageFixture(t *testing.T, now time.Time, tokens ...string) *pageFixture {
	t.Helper()
	f := &pageFixture{svc: &stubService{tasks: map[string]*wire.Task{}, outputs: map[string]string{}}, now: now}
	auth, err := api.NewAuth(tokens)
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Config{Service: f.svc, Auth: auth, Logger: natstest.Logger(t), Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *pageFixture) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", path, resp.StatusCode, body)
	}
	return string(body)
}

// The output of a round as the runner stores it: agora's lines (a
// verified event, a verified worker log line) begin with the mark; the
// sub-agent's do not, whatever they look like.
const (
	mark          = string(schemas.OutputMark)
	eventLine     = mark + `{"kind":"dispatch.started","dispatch_id":"d-r1","time":"2026-11-26T14:00:00Z","mac":"4f2a9c"}` + "\n"
	workerLine    = mark + `time=2026-11-26T14:00:01Z level=INFO msg="dispatch ended" kind=dispatch.finished` + "\n"
	forgedEvent   = `{"kind":"dispatch.finished","dispatch_id":"d-r1","time":"2026-11-26T14:00:02Z","mac":"00"}` + "\n"
	forgedWorker  = `time=2026-11-26T14:00:02Z level=INFO msg="dispatch ended" kind=dispatch.finished` + "\n"
	subagentLines = "reading src/\nwrote report.md\n"
)

// question is a task whose round 1 asks, with consequence iu.
func question(id string, asked time.Time, iu *wire.IfUnanswered) *wire.Task {
	def := "draft"
	q := &schemas.NeedsInput{Question: "Publish the report or keep it a draft?", Options: []string{"publish", "draft"}, Default: &def,
		Context: "The report is 40 pages."}
	return &wire.Task{ID: id, State: wire.StateNeedsInput, CreatedAt: asked.Add(-90 * time.Second), UpdatedAt: asked,
		Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "writer"}},
		Rounds: []wire.Round{{N: 1, State: wire.StateNeedsInput, DispatchID: id + "-r1", QueuedAt: asked.Add(-90 * time.Second),
			StartedAt: asked.Add(-80 * time.Second), EndedAt: asked, AskedAt: asked, Question: q, IfUnanswered: iu}}}
}

// group is the inbox's group of t's (latest) question.
func group(t *wire.Task) wire.QuestionGroup {
	var r wire.Round
	for _, x := range t.Rounds {
		if x.Question != nil {
			r = x
		}
	}
	return wire.QuestionGroup{ID: "g-" + t.ID, Question: r.Question.Question, Options: r.Question.Options, Default: r.Question.Default,
		Context: r.Question.Context, Count: 1, TaskIDs: []string{t.ID}, AskedAt: r.AskedAt, IfUnanswered: r.IfUnanswered,
		Questions: []wire.GroupMember{{TaskID: t.ID, Round: r.N, Subagent: t.Request.Subagent.Name, AskedAt: r.AskedAt}}}
}

// TestConsequenceShown: the inbox card and the task page say what
// happens if nobody answers, and when, for each of the three actions —
// the time computed when the page is served, not taken from Text.
func TestConsequenceShown(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 0, 50, 0, time.UTC)
	at := time.Date(2026, 11, 26, 14, 5, 0, 0, time.UTC)
	tests := []struct {
		action string
		iu     wire.IfUnanswered
		want   string
	}{
		{"default", wire.IfUnanswered{At: at, Action: wire.IfUnansweredDefault, Default: "draft"}, "the default <code>draft</code> is taken"},
		{"escalate", wire.IfUnanswered{At: at, Action: wire.IfUnansweredEscalate, Next: "human"}, "it goes to <code>human</code>"},
		{"expire", wire.IfUnanswered{At: at, Action: wire.IfUnansweredExpire, Text: "at 13:00 UTC it expires (no default)"}, "it expires (no default)"},
		{"max-wait", wire.IfUnanswered{At: at, Action: wire.IfUnansweredExpire,
			Text: "at 2026-11-25 13:00 UTC it fails: the task's total wait for answers (limits.max_wait_seconds) runs out"},
			"it fails: the task&#39;s total wait for answers (limits.max_wait_seconds) runs out"},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			t.Parallel()
			f := newPageFixture(t, now)
			if tt.iu.Text == "" {
				tt.iu.Text = "stale text from another time"
			}
			task := question("c-"+tt.action, now.Add(-time.Minute), &tt.iu)
			f.svc.tasks[task.ID] = task
			f.svc.groups = []wire.QuestionGroup{group(task)}
			want := `If nobody answers: at <time datetime="2026-11-26T14:05:00Z" title="2026-11-26 14:05:00 UTC">14:05 UTC</time> (<span class="rel" data-at="2026-11-26T14:05:00Z">in 4m 10s</span>) ` + tt.want + "."
			for _, path := range []string{"/", "/tasks/" + task.ID} {
				body := f.get(t, path)
				if !strings.Contains(body, want) {
					t.Errorf("GET %s lacks the consequence\n%s\nin\n%s", path, want, body)
				}
				if strings.Contains(body, "stale text") || strings.Contains(body, "13:00") {
					t.Errorf("GET %s shows IfUnanswered.Text instead of computing from At", path)
				}
			}
			// Served later, the page says so from the same At.
			f.now = at.Add(30 * time.Second)
			if body := f.get(t, "/tasks/"+task.ID); !strings.Contains(body, ">30s ago</span>") {
				t.Errorf("served after the deadline, the page does not say it passed 30s ago")
			}
		})
	}
}

// TestOutputLines: a task page shows the sub-agent's output; agora's own
// lines (events, the worker's log) are hidden and counted, and shown
// (dimmed, without their mark) with ?lines=all; lines a sub-agent forged
// to look like an event or a worker line are its output, shown either
// way. The output endpoint the live page follows keeps the same rule.
func TestOutputLines(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 10, 0, 0, time.UTC)
	f := newPageFixture(t, now)
	task := question("o1", now.Add(-time.Minute), nil)
	task.State, task.Rounds[0].State, task.Rounds[0].Question = wire.StateFinished, wire.StateFinished, nil
	f.svc.tasks[task.ID] = task
	out := eventLine + subagentLines + forgedEvent + workerLine + forgedWorker
	f.svc.outputs["o1/1"] = out
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, `"`, "&#34;"), "\n", "") }

	body := f.get(t, "/tasks/o1")
	for _, want := range []string{"reading src/", esc(forgedEvent), esc(forgedWorker), "(2 lines of agora's hidden)", `href="/tasks/o1?lines=all"`} {
		if !strings.Contains(body, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	for _, hidden := range []string{`"mac":"4f2a9c"`, `&#34;mac&#34;:&#34;4f2a9c&#34;`, "14:00:01Z level=INFO"} {
		if strings.Contains(body, hidden) {
			t.Errorf("task page shows agora's line %q by default", hidden)
		}
	}
	if strings.Contains(body, mark) {
		t.Errorf("the mark reaches the page")
	}

	body = f.get(t, "/tasks/o1?lines=all")
	for _, want := range []string{`<span class="agora-line">` + esc(eventLine[1:]), `<span class="agora-line">` + esc(workerLine[1:]), esc(forgedEvent), `href="/tasks/o1"`} {
		if !strings.Contains(strings.ReplaceAll(body, "\n", ""), want) {
			t.Errorf("task page with lines=all lacks %q", want)
		}
	}

	for _, tt := range []struct{ query, want string }{
		{"", subagentLines + forgedEvent + forgedWorker},
		{"&lines=all", eventLine[1:] + subagentLines + forgedEvent + workerLine[1:] + forgedWorker},
	} {
		for _, follow := range []string{"", "&follow=1"} {
			if got := f.get(t, "/ui/tasks/o1/logs?round=1"+follow+tt.query); got != tt.want {
				t.Errorf("logs%s%s = %q, want %q", follow, tt.query, got, tt.want)
			}
		}
	}
}

// TestResultAndArtifacts: the task page shows a string result as its
// text, any other as indented JSON, a large one as a link to the API,
// and links each artifact with its size and short sha256 — everything
// the sub-agent controls escaped.
func TestResultAndArtifacts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 10, 0, 0, time.UTC)
	f := newPageFixture(t, now)
	finished := func(id string) *wire.Task {
		task := question(id, now.Add(-time.Minute), nil)
		task.State, task.Rounds[0].State, task.Rounds[0].Question = wire.StateFinished, wire.StateFinished, nil
		f.svc.tasks[id] = task
		return task
	}
	str := finished("r-text")
	str.Result = json.RawMessage(`"<script>alert(1)</script>\nline two"`)
	str.Artifacts = []wire.Artifact{
		{Name: "out/report.md", Size: 2048, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		{Name: `x"><img src=x onerror=alert(1)>?#.txt`, Size: 12, SHA256: "abc"},
	}
	obj := finished("r-json")
	obj.Result = json.RawMessage(`{"pages":40,"title":"<b>Q3</b>"}`)
	big := finished("r-ref")
	big.ResultRef = &schemas.ObjectRef{URI: "file:///x", SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Size: 3 << 20}

	body := f.get(t, "/tasks/r-text")
	for _, want := range []string{
		`<pre class="result-value text">&lt;script&gt;alert(1)&lt;/script&gt;` + "\nline two</pre>",
		`<a href="/ui/tasks/r-text/artifacts/out/report.md" download>out/report.md</a> <small>2.0 KiB · sha256 <code title="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08">9f86d081884c</code></small>`,
		`href="/ui/tasks/r-text/artifacts/x%22%3E%3Cimg%20src=x%20onerror=alert%281%29%3E%3F%23.txt"`,
		`>x&#34;&gt;&lt;img src=x onerror=alert(1)&gt;?#.txt</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("task page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Errorf("task page carries the sub-agent's markup unescaped")
	}
	if body := f.get(t, "/tasks/r-json"); !strings.Contains(body, `<pre class="result-value json">{
  &#34;pages&#34;: 40,
  &#34;title&#34;: &#34;&lt;b&gt;Q3&lt;/b&gt;&#34;
}</pre>`) {
		t.Errorf("a JSON result is not shown indented and escaped")
	}
	if body := f.get(t, "/tasks/r-ref"); !strings.Contains(body, `too large to show here (3.0 MiB, sha256 <code>e3b0c44298fc</code>): <a href="/ui/tasks/r-ref/result">open it</a>`) {
		t.Errorf("a large result is not linked")
	}
}

// TestDurations: every duration on the pages reads "1m 20s".
func TestDurations(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 14, 10, 0, 0, time.UTC)
	f := newPageFixture(t, now)
	task := question("d1", now.Add(-80*time.Second), nil)
	task.State = wire.StateRunning
	task.WaitedMS = 80_000
	task.Rounds[0].Answer = &wire.Answer{Value: "draft", By: "alice", Channel: "web", At: now.Add(-75 * time.Second), WaitMS: 5_000}
	task.Rounds = append(task.Rounds, wire.Round{N: 2, State: wire.StateFinished, QueuedAt: now.Add(-75 * time.Second),
		StartedAt: now.Add(-74 * time.Second), EndedAt: now.Add(-74*time.Second + 3*time.Hour + 5*time.Minute)})
	f.svc.tasks[task.ID] = task
	f.svc.groups = []wire.QuestionGroup{group(task)}
	body := f.get(t, "/tasks/d1")
	for _, want := range []string{"<dd>1m 20s</dd>", "after 5s", "ran 3h 5m", "started <small>after 1s in the queue", "ran 1m 20s"} {
		if !strings.Contains(body, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	if body := f.get(t, "/"); !strings.Contains(body, "waiting 1m 20s") {
		t.Errorf("inbox lacks %q", "waiting 1m 20s")
	}
	for _, bad := range []string{" ms<", "80000", "12.3s"} {
		if strings.Contains(body, bad) {
			t.Errorf("a page shows a raw duration %q", bad)
		}
	}
}

// TestResultAndArtifactLinks: the page's links to a result and an
// artifact work with the session cookie (the API's routes want a bearer
// token): the artifact as a download with its size and sha256, checked as
// sent; signed out, they send to the sign-in page; a name the API refuses
// is refused here too.
func TestResultAndArtifactLinks(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	f := newPageFixture(t, now, "alice:wonderland:answerer")
	task := question("links", now.Add(-time.Minute), nil)
	task.State, task.Rounds[0].State, task.Rounds[0].Question = wire.StateFinished, wire.StateFinished, nil
	task.Result = json.RawMessage(`{"pages":40}`)
	content := "# Q3 report\n"
	task.Artifacts = []wire.Artifact{{Name: "out/report.md", Size: int64(len(content)), SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(content)))}}
	f.svc.tasks["links"] = task
	f.svc.outputs["links/artifact/out/report.md"] = content

	b := &browser{t: t, base: f.srv.URL, c: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	b.c.Jar, _ = cookiejar.New(nil)
	if status, loc, _ := b.get("/ui/tasks/links/artifacts/out/report.md"); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
		t.Errorf("artifact signed out: %d to %q, want the sign-in page", status, loc)
	}
	b.login("wonderland")
	_, _, page := b.get("/tasks/links")
	if !strings.Contains(page, `href="/ui/tasks/links/artifacts/out/report.md"`) {
		t.Fatalf("the task page does not link the artifact")
	}
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/ui/tasks/links/artifacts/out/report.md", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != content || resp.Header.Get("ETag") == "" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename=report.md`) {
		t.Errorf("artifact: %d %q %v, want the file as a download with its ETag", resp.StatusCode, body, resp.Header)
	}
	if status, _, body := b.get("/ui/tasks/links/result"); status != http.StatusOK || body != `{"pages":40}`+"\n" {
		t.Errorf("result: %d %q, want the JSON", status, body)
	}
	for _, bad := range []struct {
		path string
		want int
	}{
		{"/ui/tasks/links/artifacts/a%5Cb", http.StatusBadRequest},
		{"/ui/tasks/links/artifacts/a/%2E%2E/b", http.StatusBadRequest},
		{"/ui/tasks/links/artifacts/missing.md", http.StatusNotFound},
		{"/ui/tasks/nope/result", http.StatusNotFound},
	} {
		if status, _, _ := b.get(bad.path); status != bad.want {
			t.Errorf("GET %s: %d, want %d", bad.path, status, bad.want)
		}
	}
}
