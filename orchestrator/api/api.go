// Package api serves an orchestrator.Service as JSON over HTTP: submit,
// get and list tasks, list and answer open questions, cancel, respawn,
// continue and remove tasks, stream a round's output, and a server-sent
// event stream of task changes.
// Every endpoint but /healthz and /v1/openapi.json takes a bearer token (the
// OpenAPI document, openapi.json, describes them all); an API without tokens
// serves loopback clients only, and CheckBind refuses to put it on the
// network. docs/api.md describes the wire format; package client speaks it.
//
// The registry endpoints (/v1/subagents, /v1/capabilities, /v1/envs) serve
// an orchestrator/registry.Registry.
//
// What it may import: docs/architecture.md.
package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// MaxBodyBytes caps a request body.
const MaxBodyBytes = 1 << 20

// DefaultHeartbeat is how often an idle event stream gets a comment line.
const DefaultHeartbeat = 15 * time.Second

// DefaultStreamPace is the least time between two writes of changes to one
// event stream: the changes that come meanwhile go out together in the
// next write. A stream that was quiet writes at once. A write to a stream
// costs serve some 60–130 µs of CPU whatever it holds (a wake-up, the
// deadline, the system call, loopback's TCP for both ends): at 200
// submits a second with 200 streams open, 100 ms bounds them to 2,000 a
// second (docs/capacity.md, "The API under load").
const DefaultStreamPace = 100 * time.Millisecond

// Config is what NewHandler serves.
type Config struct {
	// Service is the orchestrator the API fronts. Required.
	Service orchestrator.Service
	// Tokens are the accepted bearer tokens, each SECRET, NAME:SECRET or
	// NAME:SECRET:ROLE[,ROLE] (roles admin, answerer, submitter; a bare
	// secret must not contain ':'). A named token without a role sees and
	// acts on the tasks it submitted; its name is recorded as the task's
	// owner and as who answered or continued. An unnamed token is an admin.
	// Empty means no authentication, which the handler allows for loopback
	// clients only (as the operator, an admin): run CheckBind before
	// listening.
	Tokens []string
	// LocalSecrets grant token names the local: secrets their env bundles
	// may name, each NAME=SECRET[,SECRET] or NAME=*. An admin may use every
	// one; any other token none unless granted here.
	LocalSecrets []string
	// Auth, when set, is the token rule to use instead of one built from
	// Tokens and LocalSecrets: a process that serves more beside the API
	// (/metrics, the web inbox) builds it once for all of them.
	Auth *Auth
	// Logger gets a debug line per request and an error line per internal
	// error; nil discards.
	Logger *slog.Logger
	// Heartbeat is how often an idle event stream gets a comment line, so
	// proxies and clients see it alive; zero means DefaultHeartbeat.
	Heartbeat time.Duration
	// StreamPace is the least time between two writes of changes to one
	// event stream (the changes that come meanwhile go out together);
	// zero means DefaultStreamPace, a negative value no pace.
	StreamPace time.Duration
	// Registry serves /v1/subagents, /v1/capabilities and /v1/envs; nil
	// answers them with no_route.
	Registry Registry
}

// handler is the API: authentication in front of a ServeMux.
type handler struct {
	svc       orchestrator.Service
	reg       Registry
	auth      *Auth
	log       *slog.Logger
	heartbeat time.Duration
	pace      time.Duration
	mux       *http.ServeMux
	// csrf refuses state-changing requests a browser sends from another
	// origin: a web page must not drive a loopback API without tokens.
	csrf *http.CrossOriginProtection
}

// NewHandler returns the API's handler. Event streams last as long as
// their clients: http.Server.Shutdown waits for them, so give the server a
// BaseContext that is cancelled when shutting down (or call Close after a
// grace period) to end them.
func NewHandler(cfg Config) (http.Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("api: Config.Service is nil")
	}
	auth := cfg.Auth
	if auth == nil {
		var err error
		if auth, err = NewAuthLocal(cfg.Tokens, cfg.LocalSecrets); err != nil {
			return nil, err
		}
	}
	h := &handler{svc: cfg.Service, reg: cfg.Registry, auth: auth, log: cfg.Logger, heartbeat: cfg.Heartbeat,
		pace: cfg.StreamPace, mux: http.NewServeMux(), csrf: http.NewCrossOriginProtection()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.heartbeat <= 0 {
		h.heartbeat = DefaultHeartbeat
	}
	if h.pace == 0 {
		h.pace = DefaultStreamPace
	}
	h.routes()
	return h, nil
}

// endpoint is one method on one path.
type endpoint struct {
	method, path string
	serve        http.HandlerFunc
}

// endpoints are every method on every path the API serves; openapi.json
// describes each (a test keeps the two the same).
func (h *handler) endpoints() []endpoint {
	endpoints := []endpoint{
		{http.MethodGet, "/healthz", h.health},
		{http.MethodGet, OpenAPIPath, h.openAPI},
		{http.MethodPost, "/v1/tasks", h.submit},
		{http.MethodGet, "/v1/tasks", h.list},
		{http.MethodGet, "/v1/tasks/{id}", h.get},
		{http.MethodDelete, "/v1/tasks/{id}", h.remove},
		{http.MethodPost, "/v1/tasks/{id}/answer", h.answer},
		{http.MethodPost, "/v1/tasks/{id}/cancel", h.cancel},
		{http.MethodPost, "/v1/tasks/{id}/respawn", h.respawn},
		{http.MethodPost, "/v1/tasks/{id}/continue", h.continueTask},
		{http.MethodPost, "/v1/tasks/{id}/replay", h.replay},
		{http.MethodPost, "/v1/tasks/{id}/fork", h.fork},
		{http.MethodPost, "/v1/batches/{batch}/replay", h.replayBatch},
		{http.MethodGet, "/v1/tasks/{id}/logs", h.logs},
		{http.MethodGet, "/v1/tasks/{id}/result", h.result},
		{http.MethodGet, "/v1/tasks/{id}/artifacts", h.artifacts},
		{http.MethodGet, "/v1/tasks/{id}/artifacts/{name...}", h.artifact},
		{http.MethodPost, "/v1/tasks/{id}/answer-all-like", h.answerAllLike},
		{http.MethodGet, "/v1/questions", h.questions},
		{http.MethodGet, "/v1/question-groups", h.questionGroups},
		{http.MethodGet, "/v1/stats", h.stats},
		{http.MethodPost, "/v1/question-groups/{group}/answer", h.answerGroup},
		{http.MethodGet, "/v1/events", h.events},
		{http.MethodGet, "/v1/parked-events", h.parkedEvents},
		{http.MethodPost, "/v1/parked-events/{seq}/retry", h.retryParked},
		{http.MethodDelete, "/v1/parked-events/{seq}", h.discardParked},
	}
	endpoints = append(endpoints, h.ruleRoutes()...)
	return append(endpoints, h.registryRoutes()...)
}

// routes registers every endpoint, a JSON 405 for the other methods of
// each path, and a JSON 404 for everything else.
func (h *handler) routes() {
	endpoints := h.endpoints()
	allowed := map[string][]string{}
	var paths []string
	for _, e := range endpoints {
		h.mux.HandleFunc(e.method+" "+e.path, h.checkPathIDs(e.path, e.serve))
		if allowed[e.path] == nil {
			paths = append(paths, e.path)
		}
		allowed[e.path] = append(allowed[e.path], e.method)
		if e.method == http.MethodGet {
			allowed[e.path] = append(allowed[e.path], http.MethodHead)
		}
	}
	for _, p := range paths {
		allow := strings.Join(allowed[p], ", ")
		h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			h.fail(w, r, &requestError{http.StatusMethodNotAllowed, wire.CodeNoRoute,
				fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, p, allow)})
		})
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, &requestError{http.StatusNotFound, wire.CodeNoRoute, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path)})
	})
}

// ServeHTTP refuses cross-origin browser requests, authenticates every
// request but /healthz and /v1/openapi.json (neither holds data), then
// routes it.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Duration("duration", time.Since(start))}
		if id := r.PathValue("id"); id != "" {
			attrs = append(attrs, slog.String("task_id", id))
		}
		h.log.LogAttrs(r.Context(), slog.LevelDebug, "api request", attrs...)
	}()
	if err := h.csrf.Check(r); err != nil {
		h.log.Warn("api request refused", "method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr,
			"origin", r.Header.Get("Origin"), "error", err)
		h.fail(sw, r, &requestError{http.StatusForbidden, wire.CodeUnauthorized, "cross-origin browser requests are refused: " + err.Error()})
		return
	}
	if r.URL.Path != "/healthz" && r.URL.Path != OpenAPIPath {
		id, err := h.auth.authenticate(r)
		if err != nil {
			if re, ok := errors.AsType[*requestError](err); ok && re.status == http.StatusUnauthorized {
				sw.Header().Set("WWW-Authenticate", `Bearer realm="agora"`)
			}
			if after, ok := RateLimited(err); ok {
				sw.Header().Set("Retry-After", after)
			}
			h.log.Warn("api request refused", "method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr, "error", err)
			h.fail(sw, r, err)
			return
		}
		r = r.WithContext(orchestrator.WithIdentity(r.Context(), id))
	}
	if err := checkDotSegments(r.URL.Path); err != nil {
		h.fail(sw, r, invalid(err.Error()))
		return
	}
	h.mux.ServeHTTP(sw, r)
}

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	h.write(w, r, http.StatusOK, wire.Health{Status: "ok"})
}

// submit answers 201 for a new task and 200 when a task with the request's
// task id existed already (an idempotent retry). The service does not say
// which, so the handler looks first: two first submits racing may both get
// 201, never a wrong task.
func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	var req wire.SubmitRequest
	if err := decode(w, r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if req.TaskID != "" {
		if _, err := h.svc.Get(r.Context(), req.TaskID); err == nil {
			status = http.StatusOK
		}
	}
	t, err := h.svc.Submit(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/tasks/"+url.PathEscape(t.ID))
	h.write(w, r, status, t)
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	t, err := h.svc.Get(r.Context(), r.PathValue("id"))
	h.reply(w, r, t, err)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	opts, err := listOptions(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, err := h.svc.List(r.Context(), opts)
	if err != nil {
		h.fail(w, r, pageError(err))
		return
	}
	if page.Tasks == nil {
		page.Tasks = []*wire.Task{}
	}
	h.write(w, r, http.StatusOK, page)
}

// listOptions reads ?state=…&label=key=value&limit=N&cursor=C.
func listOptions(q url.Values) (wire.ListOptions, error) {
	page, err := pageOptions(q, "state", "label")
	if err != nil {
		return wire.ListOptions{}, err
	}
	opts := wire.ListOptions{State: wire.State(q.Get("state")), Label: q.Get("label"),
		Limit: page.Limit, Cursor: page.Cursor}
	if opts.State != "" && !slices.Contains(wire.States, opts.State) {
		names := make([]string, len(wire.States))
		for i, s := range wire.States {
			names[i] = string(s)
		}
		return opts, invalid(fmt.Sprintf("query: unknown state %q; want one of %s", opts.State, strings.Join(names, ", ")))
	}
	if k, _, ok := strings.Cut(opts.Label, "="); opts.Label != "" && (!ok || k == "") {
		return opts, invalid(fmt.Sprintf("query: label %q; want key=value", opts.Label))
	}
	return opts, nil
}

// pageOptions reads ?limit=N&cursor=C, each at most once like the other
// parameters named: limit a whole number from 1 to MaxPageLimit (absent:
// the default), cursor the next_cursor of the previous page.
func pageOptions(q url.Values, others ...string) (wire.PageOptions, error) {
	for _, k := range append([]string{"limit", "cursor"}, others...) {
		if len(q[k]) > 1 {
			return wire.PageOptions{}, invalid(fmt.Sprintf("query: %s given %d times; give it once", k, len(q[k])))
		}
	}
	var p wire.PageOptions
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > wire.MaxPageLimit {
			return p, invalid(fmt.Sprintf("query: limit %q: want a whole number from 1 to %d (default %d)",
				s[0], wire.MaxPageLimit, wire.DefaultPageLimit))
		}
		p.Limit = n
	}
	if s, ok := q["cursor"]; ok {
		if s[0] == "" {
			return p, invalid("query: cursor is empty; leave it out for the first page, else pass the next_cursor of the previous page")
		}
		p.Cursor = s[0]
	}
	return p, nil
}

// pageError makes a limit or cursor the service refused a 400, like one
// the API refuses itself: it is a bad query, not a bad request body.
func pageError(err error) error {
	if pe, ok := errors.AsType[*wire.PageError](err); ok {
		return invalid("query: " + pe.Error())
	}
	return err
}

func (h *handler) questions(w http.ResponseWriter, r *http.Request) {
	opts, err := pageOptions(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page, err := h.svc.Questions(r.Context(), opts)
	if err != nil {
		h.fail(w, r, pageError(err))
		return
	}
	if page.Questions == nil {
		page.Questions = []wire.QuestionView{}
	}
	h.write(w, r, http.StatusOK, page)
}

func (h *handler) answer(w http.ResponseWriter, r *http.Request) {
	var body wire.AnswerBody
	if err := decode(w, r, &body); err != nil {
		h.fail(w, r, err)
		return
	}
	channel := body.Channel
	if channel == "" {
		channel = wire.DefaultChannel
	}
	who, via, err := by(r, body.By)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := h.svc.Answer(r.Context(), wire.AnswerRequest{TaskID: r.PathValue("id"), Round: body.Round,
		Answer: body.Answer, By: who, Via: via, Channel: channel, Remember: body.Remember})
	h.reply(w, r, t, err)
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	t, err := h.svc.Cancel(r.Context(), r.PathValue("id"))
	h.reply(w, r, t, err)
}

func (h *handler) respawn(w http.ResponseWriter, r *http.Request) {
	t, err := h.svc.Respawn(r.Context(), r.PathValue("id"))
	h.reply(w, r, t, err)
}

func (h *handler) continueTask(w http.ResponseWriter, r *http.Request) {
	var body wire.ContinueBody
	if err := decode(w, r, &body); err != nil {
		h.fail(w, r, err)
		return
	}
	who, _, err := by(r, body.By)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := h.svc.Continue(r.Context(), r.PathValue("id"), body.Message, who)
	h.reply(w, r, t, err)
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	if err := h.svc.Remove(r.Context(), r.PathValue("id")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// by is who acts and the token that vouches for them (via, when it is
// not the same). The body's by is taken only from an answerer or an
// admin, as the person it acts for; any other token acts as itself, and a
// by naming somebody else is refused. Without either: the token's name,
// else "api".
func by(r *http.Request, given string) (who, via string, err error) {
	id, _ := orchestrator.IdentityFrom(r.Context())
	if given == "" || given == id.Name {
		return cmp.Or(id.Name, wire.DefaultBy), "", nil
	}
	if !id.Admin && !id.Answerer {
		return "", "", &requestError{http.StatusForbidden, wire.CodeUnauthorized, fmt.Sprintf(
			"body: by %q: token %s acts as itself; only a token with the answerer or admin role answers for somebody else (leave by out)",
			given, id.Name)}
	}
	return given, id.Name, nil
}

// forbidden refuses what only an admin may do.
func forbidden(r *http.Request, what string) error {
	if id, _ := orchestrator.IdentityFrom(r.Context()); id.Admin {
		return nil
	}
	return &requestError{http.StatusForbidden, wire.CodeUnauthorized, what + " takes a token with the admin role"}
}

// reply writes t, or err.
func (h *handler) reply(w http.ResponseWriter, r *http.Request, t *wire.Task, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, t)
}

// fail writes err as an ErrorBody with its status; the message passes
// through as the service wrote it.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := classify(err)
	if status >= 500 && r.Context().Err() == nil {
		h.log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	}
	body := wire.ErrorBody{Error: err.Error(), Code: code}
	if ce, ok := errors.AsType[*wire.ConflictError](err); ok {
		body.Differences, body.MoreDifferences = ce.Differences, ce.More
	}
	h.write(w, r, status, body)
}

func (h *handler) write(w http.ResponseWriter, r *http.Request, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.log.Error("encode api response", "method", r.Method, "path", r.URL.Path, "error", err)
		status, data = http.StatusInternalServerError, []byte(`{"error":"encode response","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n')) // a client gone away is not the API's error
}

// decode reads r's JSON body into v: one object, no unknown fields, at most
// MaxBodyBytes, read as every outside document is (schemas.DecodeKnown:
// exact names, JSON Schema integers, no duplicate keys, schemas.MaxDepth).
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	data, err := io.ReadAll(r.Body)
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		return &requestError{http.StatusRequestEntityTooLarge, wire.CodeInvalid,
			fmt.Sprintf("request body is larger than %d bytes (1 MiB)", MaxBodyBytes)}
	}
	if err != nil {
		return invalid("read request body: " + err.Error())
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return invalid("request body is empty; want a JSON object")
	}
	if err := schemas.DecodeKnown("request body", data, v); err != nil {
		if ve, ok := errors.AsType[*schemas.ValidationError](err); ok {
			return invalid("request body: " + ve.Detail())
		}
		return invalid("request body: " + err.Error())
	}
	return nil
}

// statusWriter remembers the status for the request log; Unwrap lets
// http.ResponseController reach the connection (flush, write deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
