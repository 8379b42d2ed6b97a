package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

// replay starts a replay of the page's finished task and shows it.
func (h *handler) replay(w http.ResponseWriter, r *http.Request, s api.Session) {
	id := r.PathValue("id")
	back := "/tasks/" + url.PathEscape(id)
	t, err := h.svc.Replay(r.Context(), id, wire.ReplayRequest{})
	if err != nil {
		h.answerFailed(w, r, s, back, err)
		return
	}
	h.log.Info("replay started on the web", "task_id", id, "replay", t.ID, "by", who(s))
	http.Redirect(w, r, "/tasks/"+url.PathEscape(t.ID), http.StatusSeeOther)
}

// fork answers one of the page's answered rounds differently, in a new
// task, and shows it.
func (h *handler) fork(w http.ResponseWriter, r *http.Request, s api.Session) {
	id := r.PathValue("id")
	back := "/tasks/" + url.PathEscape(id)
	round, err := strconv.Atoi(r.PostFormValue("round"))
	if err != nil || round < 1 {
		h.answerFailed(w, r, s, back, fmt.Errorf("round %q: want the number of the round to answer differently: %w", r.PostFormValue("round"), wire.ErrInvalidRequest))
		return
	}
	value := answerValue(r)
	if strings.TrimSpace(value) == "" {
		h.answerFailed(w, r, s, back, fmt.Errorf("the answer is empty: press an option or type one: %w", wire.ErrInvalidAnswer))
		return
	}
	t, err := h.svc.Fork(r.Context(), id, wire.ForkRequest{Round: round, Answer: value, By: who(s)})
	if err != nil {
		h.answerFailed(w, r, s, back, err)
		return
	}
	h.log.Info("fork started on the web", "task_id", id, "round", round, "fork", t.ID, "by", who(s))
	http.Redirect(w, r, "/tasks/"+url.PathEscape(t.ID), http.StatusSeeOther)
}
