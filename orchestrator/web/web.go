// Package web is the inbox people answer in: server-rendered pages on the
// API's listener, behind the API's tokens. The inbox lists the open
// questions oldest first (identical questions of a batch as one, answered
// at once) with how long each has waited and what it blocks; a task's page
// shows its timeline, each round's output (live while it runs) and the
// open question. Answering works with plain HTML forms; a little embedded
// JavaScript keeps the pages current from a server-sent event stream that
// catches up after a reconnect.
//
// A person signs in with the token the API takes (its secret, once); the
// browser then carries a signed session cookie (api.Auth.Login). An API
// without tokens serves loopback only and its inbox needs no sign-in.
// Forms carry a CSRF token tied to the session, and cross-origin
// requests are refused besides.
//
// docs/web.md describes the pages; what the package may import,
// docs/architecture.md.
package web

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
)

// Patterns are the paths the inbox serves, for the mux it shares with the
// API: the inbox at /, task pages at /tasks/ID (the address Slack messages
// link to), and everything else under /ui/.
var Patterns = []string{"GET /{$}", "/tasks/", "/ui/"}

// Defaults.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultHeartbeat  = 15 * time.Second
	// sessionCookie is the session's cookie name.
	sessionCookie = "agora_session"
	// Channel is how an answer given on these pages is recorded.
	Channel = "web"
	// maxLogBytes bounds a round's output shown on a task page; the whole
	// of it is a link away.
	maxLogBytes = 64 << 10
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config is what New serves.
type Config struct {
	// Service is the orchestrator. Required.
	Service orchestrator.Service
	// Auth is the API's rule for who may call it. Required.
	Auth *api.Auth
	// Logger gets a line per refused request and per failure; nil discards.
	Logger *slog.Logger
	// SessionTTL is how long a sign-in lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// Heartbeat is how often an idle event stream gets a comment line.
	Heartbeat time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// handler serves the pages.
type handler struct {
	svc       orchestrator.Service
	auth      *api.Auth
	log       *slog.Logger
	ttl       time.Duration
	heartbeat time.Duration
	now       func() time.Time
	pages     map[string]*template.Template
	static    http.Handler
	mux       *http.ServeMux
	csrf      *http.CrossOriginProtection
	signIns   *signInGuard
}

// New returns the inbox's handler; mount it at Patterns.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.Auth == nil {
		return nil, errors.New("web: Config.Service and Config.Auth are required")
	}
	h := &handler{svc: cfg.Service, auth: cfg.Auth, log: cfg.Logger, ttl: cmp.Or(cfg.SessionTTL, DefaultSessionTTL),
		heartbeat: cmp.Or(cfg.Heartbeat, DefaultHeartbeat), now: cfg.Now, mux: http.NewServeMux(),
		csrf: http.NewCrossOriginProtection(), signIns: newSignInGuard()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	var err error
	if h.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("web: static assets: %w", err)
	}
	h.static = http.StripPrefix("/ui/static/", http.FileServerFS(static))
	h.routes()
	return h, nil
}

func (h *handler) routes() {
	h.mux.HandleFunc("GET /{$}", h.signedIn(h.inbox))
	h.mux.HandleFunc("GET /tasks/{id}", h.signedIn(h.task))
	h.mux.HandleFunc("GET /stats", h.signedIn(h.stats))
	h.mux.HandleFunc("GET /ui/tasks/{id}/logs", h.signedIn(h.logs))
	h.mux.HandleFunc("GET /ui/tasks/{id}/result", h.signedIn(h.result))
	h.mux.HandleFunc("GET /ui/tasks/{id}/artifacts/{name...}", h.signedIn(h.artifact))
	h.mux.HandleFunc("GET /ui/events", h.signedIn(h.events))
	h.mux.HandleFunc("POST /ui/answer", h.signedIn(h.answer))
	h.mux.HandleFunc("POST /ui/tasks/{id}/replay", h.signedIn(h.replay))
	h.mux.HandleFunc("POST /ui/tasks/{id}/fork", h.signedIn(h.fork))
	h.mux.HandleFunc("POST /ui/groups/{group}/answer", h.signedIn(h.answerGroup))
	h.mux.HandleFunc("GET /ui/login", h.loginPage)
	h.mux.HandleFunc("POST /ui/login", h.login)
	h.mux.HandleFunc("POST /ui/logout", h.logout)
	h.mux.Handle("GET /ui/static/", h.static)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, http.StatusNotFound, "There is no page "+r.URL.Path+".")
	})
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Pages are not to be framed by other sites (clickjacking an answer
	// button), nor to run scripts from anywhere but here.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	if err := h.csrf.Check(r); err != nil {
		h.log.Warn("web request refused", "method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr,
			"origin", r.Header.Get("Origin"), "error", err)
		h.errorPage(w, r, http.StatusForbidden, "Cross-origin requests are refused: "+err.Error())
		return
	}
	h.mux.ServeHTTP(w, r)
}

// signedIn serves next to a request with a valid session (its identity in
// the context, as the API puts it); a page request without one goes to
// the sign-in page, anything else gets 401. A state-changing request must
// also carry the session's CSRF token.
func (h *handler) signedIn(next func(http.ResponseWriter, *http.Request, api.Session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := h.auth.SessionOf(r, sessionCookie, h.now())
		if err != nil {
			status, msg := api.RequestErrorStatus(err)
			h.log.Debug("web request not signed in", "method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr, "error", err)
			if status == http.StatusUnauthorized && r.Method == http.MethodGet && !isStream(r) {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.errorPage(w, r, status, msg)
			return
		}
		if r.Method == http.MethodPost {
			if !s.CheckCSRF(r.PostFormValue("csrf")) {
				h.log.Warn("web request refused: bad CSRF token", "path", r.URL.Path, "remote_addr", r.RemoteAddr)
				h.errorPage(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the page and try again.")
				return
			}
		}
		r = r.WithContext(orchestrator.WithIdentity(r.Context(), s.Identity))
		next(w, r, s)
	}
}

// isStream: the event stream and logs are fetched by script, which wants
// a status, not a sign-in page.
func isStream(r *http.Request) bool {
	return r.URL.Path == "/ui/events" || strings.HasSuffix(r.URL.Path, "/logs")
}

// who is how an answer given by s is recorded: the signed-in token's name.
func who(s api.Session) string {
	return cmp.Or(s.Identity.Name, orchestrator.OperatorName)
}

// localPath returns p as a path of this site, else "/": a sign-in or an
// answer never redirects elsewhere. p is parsed as a URL and rebuilt from
// its path (dot segments and repeated slashes removed) and query, because
// browsers drop tabs and newlines and read a backslash as a slash before
// they resolve a Location: "/\t/evil.example" would go to //evil.example.
func localPath(p string) string {
	const home = "/"
	if strings.ContainsFunc(p, func(r rune) bool { return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return home
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Opaque != "" || u.User != nil || u.Host != "" || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	if strings.HasPrefix(clean, "//") {
		return home
	}
	return (&url.URL{Path: clean, RawQuery: u.RawQuery}).String()
}
