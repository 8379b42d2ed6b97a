package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agoradev/agora/internal/httplimit"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

type loginData struct {
	page
	Next string
}

// loginPage asks for a token. With no tokens configured there is nothing
// to sign in to: it sends the person on.
func (h *handler) loginPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if h.auth.Open() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "login", loginData{page: page{Title: "Sign in", Now: h.now()}, Next: next})
}

// login checks the token and sets the session cookie. Everything before
// the check is bounded: the form's size, the sign-ins handled at once and,
// per client, the failed attempts (api.Auth counts them with wrong bearer
// tokens: 429 with Retry-After).
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if !h.signIns.enter() {
		h.log.Warn("web sign-in refused: too many at once", "remote_addr", r.RemoteAddr)
		w.Header().Set("Retry-After", "1")
		h.errorPage(w, r, http.StatusServiceUnavailable, "Too many sign-ins at once: try again in a second.")
		return
	}
	defer h.signIns.leave()
	client, now := api.ClientOf(r), h.now()
	httplimit.MaxBytes(w, r, maxSignInBytes)
	if err := r.ParseForm(); err != nil {
		status, msg := http.StatusBadRequest, "The sign-in form could not be read: "+err.Error()+"."
		if httplimit.TooLarge(err) {
			status, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("The sign-in form is over %d bytes: send the token alone.", maxSignInBytes)
		}
		h.log.Warn("web sign-in refused: unreadable form", "remote_addr", r.RemoteAddr, "error", err)
		h.errorPage(w, r, status, msg)
		return
	}
	next := localPath(r.PostFormValue("next"))
	s, err := h.auth.Login(client, r.PostFormValue("token"), now, h.ttl)
	if after, limited := api.RateLimited(err); limited {
		h.log.Warn("web sign-in refused: too many failed attempts", "remote_addr", r.RemoteAddr, "error", err)
		w.Header().Set("Retry-After", after)
		h.errorPage(w, r, http.StatusTooManyRequests, "Not signed in: "+err.Error()+".")
		return
	}
	if err != nil {
		h.log.Warn("web sign-in refused", "remote_addr", r.RemoteAddr, "error", err)
		d := loginData{page: page{Title: "Sign in", Now: now, Error: "Not signed in: " + err.Error() + "."}, Next: next}
		h.render(w, r, http.StatusUnauthorized, "login", d)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.Value, Path: "/", Expires: s.Expires,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
	h.log.Info("web sign-in", "name", who(s), "remote_addr", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session on every replica (the session store shared
// through NATS) and clears the cookie; with everywhere=1 it ends every
// session of the same token, in every browser.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	s, err := h.auth.SessionOf(r, sessionCookie, h.now())
	if err == nil && !s.CheckCSRF(r.PostFormValue("csrf")) {
		h.errorPage(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the page and try again.")
		return
	}
	if err == nil {
		everywhere := r.PostFormValue("everywhere") == "1"
		end := h.auth.EndSession(r.Context(), s)
		if everywhere {
			end = h.auth.EndSessionsOf(r.Context(), s, h.now())
		}
		if end != nil {
			h.log.Warn("web sign-out not recorded", "name", who(s), "everywhere", everywhere, "error", end)
			h.errorPage(w, r, http.StatusServiceUnavailable, "Not signed out: "+end.Error()+". Try again.")
			return
		}
		h.log.Info("web sign-out", "name", who(s), "everywhere", everywhere, "remote_addr", r.RemoteAddr)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// secure: the page was reached over HTTPS, directly or through a proxy
// that says so; the cookie is then never sent in the clear.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// answerValue is the answer a form gives: the option button pressed, or
// the free text typed.
func answerValue(r *http.Request) string {
	if v := r.PostFormValue("option"); v != "" {
		return v
	}
	return r.PostFormValue("text")
}

// answer answers one task's open question (a form of the inbox or of the
// task's page) and goes back to the page it came from.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, s api.Session) {
	taskID := r.PostFormValue("task")
	back := localPath(r.PostFormValue("back"))
	round := 0 // none: whichever round's question is open
	if v := r.PostFormValue("round"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			h.answerFailed(w, r, s, back, fmt.Errorf("round %q: want the number of the round that asked, e.g. 1: %w", v, wire.ErrInvalidRequest))
			return
		}
		round = n
	}
	value := answerValue(r)
	if strings.TrimSpace(value) == "" {
		h.answerFailed(w, r, s, back, fmt.Errorf("the answer is empty: press an option or type one: %w", wire.ErrInvalidAnswer))
		return
	}
	// The checkbox makes the answer a rule for the sub-agent's questions
	// like it, for the default time (wire.DefaultRuleTTL).
	var remember *wire.Remember
	if r.PostFormValue("remember") != "" {
		remember = &wire.Remember{Scope: wire.RuleScopeSubagent}
	}
	_, err := h.svc.Answer(r.Context(), wire.AnswerRequest{TaskID: taskID, Round: round, Answer: value, By: who(s), Channel: Channel, Remember: remember})
	if err != nil {
		h.answerFailed(w, r, s, back, h.explain(r, taskID, err))
		return
	}
	h.log.Info("answered on the web", "task_id", taskID, "round", round, "by", who(s), "remember", remember != nil)
	http.Redirect(w, r, withQuery(back, "answered", taskID), http.StatusSeeOther)
}

// answerGroup answers every open question of a group at once.
func (h *handler) answerGroup(w http.ResponseWriter, r *http.Request, s api.Session) {
	back := localPath(r.PostFormValue("back"))
	id := r.PathValue("group")
	groups, err := h.svc.QuestionGroups(r.Context(), wire.GroupOptions{})
	if err != nil {
		h.fail(w, r, "list the open questions", err)
		return
	}
	i := slices.IndexFunc(groups, func(g wire.QuestionGroup) bool { return g.ID == id })
	if i < 0 {
		h.answerFailed(w, r, s, back, fmt.Errorf("these questions were all answered meanwhile: %w", wire.ErrNoQuestion))
		return
	}
	res, err := api.AnswerGroup(r.Context(), h.svc, groups[i], "", wire.AnswerRequest{Answer: answerValue(r), By: who(s), Channel: Channel})
	if err != nil {
		h.answerFailed(w, r, s, back, err)
		return
	}
	h.log.Info("answered a question group on the web", "group", id, "answered", res.Answered, "by", who(s))
	http.Redirect(w, r, withQuery(back, "group", strconv.Itoa(res.Answered)), http.StatusSeeOther)
}

// explain adds to an already-answered error who answered and when.
func (h *handler) explain(r *http.Request, taskID string, err error) error {
	if !errors.Is(err, wire.ErrAlreadyAnswered) && !errors.Is(err, wire.ErrNoQuestion) {
		return err
	}
	t, gerr := h.svc.Get(r.Context(), taskID)
	if gerr != nil {
		return err
	}
	for i := len(t.Rounds) - 1; i >= 0; i-- {
		if a := t.Rounds[i].Answer; a != nil {
			return fmt.Errorf("already answered %q by %s (%s) at %s: %w", a.Value, a.By, a.Channel, clock(a.At), wire.ErrAlreadyAnswered)
		}
	}
	return err
}

// answerFailed shows the page the form came from again, with why.
func (h *handler) answerFailed(w http.ResponseWriter, r *http.Request, s api.Session, back string, err error) {
	status, msg := statusOf(err)
	if status >= 500 {
		h.fail(w, r, "answer", err)
		return
	}
	h.log.Info("web answer refused", "by", who(s), "error", err)
	u, perr := url.Parse(back)
	if perr != nil {
		u = &url.URL{Path: "/"}
	}
	// The page the form was on, again, with the error on top.
	r2 := r.Clone(context.WithValue(r.Context(), refusalKey{}, refusal{status: status, msg: msg}))
	r2.Method, r2.URL, r2.RequestURI = http.MethodGet, u, u.RequestURI()
	r2.Header.Del(fragmentHeader)
	h.mux.ServeHTTP(w, r2)
}

// refusalKey carries a refused answer to the page shown again.
type refusalKey struct{}

type refusal struct {
	status int
	msg    string
}

// withQuery adds key=value to path p's query.
func withQuery(p, key, value string) string {
	u, err := url.Parse(p)
	if err != nil {
		return "/"
	}
	q := u.Query()
	q.Del("answered")
	q.Del("group")
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
