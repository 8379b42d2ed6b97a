package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// fragmentHeader asks for a page's content alone: the script swaps it in
// when the event stream says something changed.
const fragmentHeader = "X-Agora-Fragment"

// page is what every page's layout shows.
type page struct {
	Title string
	// User is the signed-in name; empty on the sign-in page.
	User string
	// SignedIn: a session cookie, so a sign-out button.
	SignedIn bool
	CSRF     string
	// Stream is the event stream the page follows; empty for none.
	Stream  string
	Notice  string
	Error   string
	Summary *wire.Summary
	Now     time.Time
}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"since":         since,
		"between":       between,
		"ms":            func(ms int64) string { return human(time.Duration(ms) * time.Millisecond) },
		"clock":         clock,
		"isDefault":     isDefault,
		"bytes":         units.Bytes,
		"short":         func(s string) string { return s[:min(len(s), 12)] },
		"artifactPath":  artifactPath,
		"consequence":   consequence,
		"stateText":     func(s wire.State) string { return strings.ReplaceAll(string(s), "_", " ") },
		"countOf":       func(s *wire.Summary, st string) int { return s.Counts[wire.State(st)] },
		"batchOf":       func(t *wire.Task) string { return t.Request.Labels[wire.BatchLabel] },
		"statsLink":     statsLink,
		"percent":       percent,
		"durationsText": durationsText,
		"subagentRows": func(st wire.Stats) []wire.SubagentStats {
			return append([]wire.SubagentStats{st.Total}, st.Subagents...)
		},
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"inbox", "task", "login", "error", "stats"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse the %s page: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes page name with data: the whole page, or its content alone
// for the script's refresh.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	root := "layout"
	if r.Header.Get(fragmentHeader) != "" {
		root = "content"
	}
	var buf bytes.Buffer
	if ref, ok := r.Context().Value(refusalKey{}).(refusal); ok {
		status = ref.status
	}
	if err := h.pages[name].ExecuteTemplate(&buf, root, data); err != nil {
		h.log.Error("web: render a page", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage shows msg with status.
func (h *handler) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if isStream(r) || r.Header.Get(fragmentHeader) != "" {
		http.Error(w, msg, status)
		return
	}
	h.render(w, r, status, "error", page{Title: http.StatusText(status), Error: msg, Now: h.now()})
}

// basePage is the layout's data for session s.
func (h *handler) basePage(r *http.Request, s api.Session, title, stream string) page {
	p := page{Title: title, User: who(s), SignedIn: s.Value != "bearer" && s.Value != "loopback", CSRF: s.CSRF(),
		Stream: stream, Now: h.now()}
	if ref, ok := r.Context().Value(refusalKey{}).(refusal); ok {
		p.Error = ref.msg
	}
	if id := r.URL.Query().Get("answered"); id != "" && wire.CheckTaskID(id) == nil {
		p.Notice = "Answered: " + id + " resumes."
	}
	if n := r.URL.Query().Get("group"); n != "" {
		if c, err := strconv.Atoi(n); err == nil {
			p.Notice = fmt.Sprintf("Answered %d questions at once.", c)
		}
	}
	return p
}

// groupView is one question group of the inbox.
type groupView struct {
	wire.QuestionGroup
	Form answerForm
}

// answerForm is the form that answers one question, or a group's at once:
// a button per option (the default marked), or a text field when the
// question has no options.
type answerForm struct {
	Action, CSRF, Back string
	Task               string
	Round              int
	Options            []string
	Default            *string
	// Many counts the questions one answer answers, when more than one.
	Many int
	// Remember, for one question, names its sub-agent: the form offers to
	// make the answer a rule for that sub-agent's questions like it.
	Remember string
}

type inboxData struct {
	page
	Groups []groupView
	// Waiting counts the tasks the questions block.
	Waiting int
	Recent  []*wire.Task
}

// inbox serves the open questions, oldest first, and the latest tasks.
func (h *handler) inbox(w http.ResponseWriter, r *http.Request, s api.Session) {
	ctx := r.Context()
	groups, err := h.svc.QuestionGroups(ctx, wire.GroupOptions{Batch: r.URL.Query().Get("batch")})
	if err != nil {
		h.fail(w, r, "list the open questions", err)
		return
	}
	list, err := h.svc.List(ctx, wire.ListOptions{Limit: 20})
	if err != nil {
		h.fail(w, r, "list the tasks", err)
		return
	}
	d := inboxData{page: h.basePage(r, s, "Inbox", "/ui/events"), Recent: list.Tasks}
	d.Summary = &list.Summary
	slices.SortStableFunc(groups, func(a, b wire.QuestionGroup) int { return a.AskedAt.Compare(b.AskedAt) })
	for _, g := range groups {
		form := answerForm{Action: "/ui/groups/" + g.ID + "/answer", CSRF: d.CSRF, Back: "/", Options: g.Options,
			Default: g.Default, Many: g.Count}
		if g.Count == 1 {
			form.Action, form.Task, form.Round, form.Many = "/ui/answer", g.Questions[0].TaskID, g.Questions[0].Round, 0
			form.Remember = g.Questions[0].Subagent
		}
		d.Groups = append(d.Groups, groupView{QuestionGroup: g, Form: form})
		d.Waiting += g.Count
	}
	if len(groups) > 0 {
		d.Title = fmt.Sprintf("(%d) Inbox", len(groups))
	}
	h.render(w, r, http.StatusOK, "inbox", d)
}

// roundView is one round of a task page.
type roundView struct {
	wire.Round
	// Output is the round's stored output (the last maxLogBytes of it);
	// Live: the round runs, the script follows its output.
	Output    outputView
	Truncated bool
	Live      bool
	// Linked: the output is not shown, a link to it is.
	Linked bool
	// Fork, on a round whose question was answered, is the form that
	// answers it differently in a new task (replay.go).
	Fork *answerForm
}

// shownOutputs is how many of the latest rounds a task page shows the
// output of; older rounds link to theirs.
const shownOutputs = 3

type taskData struct {
	page
	Task *wire.Task
	// All: agora's own lines of the output (events, the worker's log) are
	// shown too (?lines=all).
	All    bool
	Result *resultView
	// Open is the round whose question waits, if one does, and Form its
	// answer form.
	Open   *wire.Round
	Form   answerForm
	Rounds []roundView
}

// task serves a task's page.
func (h *handler) task(w http.ResponseWriter, r *http.Request, s api.Session) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := wire.CheckTaskID(id); err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Task id: "+err.Error())
		return
	}
	t, err := h.svc.Get(ctx, id)
	if err != nil {
		h.fail(w, r, "read task "+id, err)
		return
	}
	d := taskData{page: h.basePage(r, s, "Task "+t.ID, "/ui/events?task="+t.ID), Task: t, All: r.URL.Query().Get("lines") == "all",
		Result: resultOf(t)}
	for i := len(t.Rounds) - 1; i >= 0; i-- { // newest first
		rv := roundView{Round: t.Rounds[i]}
		if q := rv.Question; q != nil && rv.Answer != nil {
			rv.Fork = &answerForm{Action: "/ui/tasks/" + t.ID + "/fork", CSRF: d.CSRF, Back: "/tasks/" + t.ID, Task: t.ID, Round: rv.N,
				Options: q.Options}
		}
		switch {
		case rv.State == wire.StateRunning:
			rv.Live = true
		case rv.StartedAt.IsZero():
		case len(t.Rounds)-i > shownOutputs:
			rv.Linked = true // older rounds' output is a link: each is a storage read
		default:
			var out []byte
			out, rv.Truncated = h.output(r, t.ID, rv.N)
			rv.Output = splitOutput(out, d.All)
		}
		d.Rounds = append(d.Rounds, rv)
	}
	if n := len(t.Rounds); n > 0 && t.State == wire.StateNeedsInput {
		if cur := &t.Rounds[n-1]; cur.Question != nil && cur.Answer == nil {
			d.Open = cur
			d.Form = answerForm{Action: "/ui/answer", CSRF: d.CSRF, Back: "/tasks/" + t.ID, Task: t.ID, Round: cur.N,
				Options: cur.Question.Options, Default: cur.Question.Default, Remember: t.Request.Subagent.Name}
		}
	}
	h.render(w, r, http.StatusOK, "task", d)
}

// output reads a round's stored output, the last maxLogBytes of it
// from the start of a line.
func (h *handler) output(r *http.Request, id string, round int) ([]byte, bool) {
	var tail tailBuffer
	if err := h.svc.Logs(r.Context(), id, round, false, &tail); err != nil {
		h.log.Debug("web: no output for a round", "task_id", id, "round", round, "error", err)
		return nil, false
	}
	if tail.cut {
		if i := bytes.IndexByte(tail.buf, '\n'); i >= 0 {
			tail.buf = tail.buf[i+1:]
		}
	}
	return tail.buf, tail.cut
}

// resultView is a task's result as its page shows it.
type resultView struct {
	// Text is a string result's text; JSON any other value, indented.
	Text, JSON string
	// Ref: the result is too large to carry; the API serves it.
	Ref *schemas.ObjectRef
}

// resultOf is t's result, nil when it has none.
func resultOf(t *wire.Task) *resultView {
	switch {
	case t.ResultRef != nil:
		return &resultView{Ref: t.ResultRef}
	case len(t.Result) == 0, string(t.Result) == "null":
		return nil
	}
	var s string
	if json.Unmarshal(t.Result, &s) == nil {
		return &resultView{Text: s}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, t.Result, "", "  ") != nil {
		return &resultView{JSON: string(t.Result)}
	}
	return &resultView{JSON: buf.String()}
}

// tailBuffer keeps the last maxLogBytes written to it.
type tailBuffer struct {
	buf []byte
	cut bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - maxLogBytes; over > 0 {
		b.buf, b.cut = b.buf[over:], true
	}
	return len(p), nil
}

// logs serves a round's output as text: the stored output of an ended
// round, or with follow=1 a running round's output as it comes; the
// sub-agent's lines only, unless lines=all.
func (h *handler) logs(w http.ResponseWriter, r *http.Request, _ api.Session) {
	id := r.PathValue("id")
	round, err := strconv.Atoi(r.URL.Query().Get("round"))
	if err != nil || round < 0 {
		http.Error(w, "round: want the round's number, e.g. ?round=1", http.StatusBadRequest)
		return
	}
	if err := wire.CheckTaskID(id); err != nil {
		http.Error(w, "task id: "+err.Error(), http.StatusBadRequest)
		return
	}
	follow := r.URL.Query().Get("follow") == "1"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Accel-Buffering", "no")
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	lf := &schemas.OutputFilter{W: fw, All: r.URL.Query().Get("lines") == "all"}
	if err := h.svc.Logs(r.Context(), id, round, follow, lf); err != nil && !fw.wrote {
		status, msg := statusOf(err)
		http.Error(w, msg, status)
	}
}

// flushWriter flushes each write, so followed output reaches the page as
// it comes.
type flushWriter struct {
	w     io.Writer
	rc    *http.ResponseController
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	n, err := f.w.Write(p)
	if err == nil {
		_ = f.rc.Flush()
	}
	return n, err
}

// fail shows err of doing what, with the status it calls for.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, msg := statusOf(err)
	if status >= 500 {
		h.log.Error("web: "+what, "error", err)
		msg = "Something went wrong on the server while trying to " + what + "; the log has the details."
	}
	h.errorPage(w, r, status, msg)
}

// statusOf maps the orchestrator's errors to HTTP statuses.
func statusOf(err error) (int, string) {
	switch {
	case errors.Is(err, wire.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, wire.ErrAlreadyAnswered), errors.Is(err, wire.ErrNoQuestion), errors.Is(err, wire.ErrWrongState):
		return http.StatusConflict, err.Error()
	case errors.Is(err, wire.ErrInvalidAnswer), errors.Is(err, wire.ErrInvalidRequest):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

func isDefault(option string, def *string) bool { return def != nil && *def == option }
