package api

import (
	"net/http"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// The remembered-answer rules: GET /v1/rules, GET and DELETE
// /v1/rules/{rule}. They are made by answering with "remember"; a service
// without the orchestrator.Rules capability answers no_route.

func (h *handler) ruleRoutes() []endpoint {
	return []endpoint{
		{http.MethodGet, "/v1/rules", h.listRules},
		{http.MethodGet, "/v1/rules/{rule}", h.getRule},
		{http.MethodDelete, "/v1/rules/{rule}", h.removeRule},
	}
}

func (h *handler) rulesOr(w http.ResponseWriter, r *http.Request) (orchestrator.Rules, bool) {
	rs, ok := h.svc.(orchestrator.Rules)
	if !ok {
		h.fail(w, r, &requestError{http.StatusNotFound, wire.CodeNoRoute, "this server keeps no remembered rules"})
		return nil, false
	}
	return rs, true
}

func (h *handler) listRules(w http.ResponseWriter, r *http.Request) {
	rs, ok := h.rulesOr(w, r)
	if !ok {
		return
	}
	opts, err := pageOptions(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list, err := rs.Rules(r.Context(), opts)
	if err != nil {
		h.fail(w, r, pageError(err))
		return
	}
	h.write(w, r, http.StatusOK, list)
}

func (h *handler) getRule(w http.ResponseWriter, r *http.Request) {
	rs, ok := h.rulesOr(w, r)
	if !ok {
		return
	}
	rule, err := rs.Rule(r.Context(), r.PathValue("rule"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, rule)
}

func (h *handler) removeRule(w http.ResponseWriter, r *http.Request) {
	rs, ok := h.rulesOr(w, r)
	if !ok {
		return
	}
	if err := rs.RemoveRule(r.Context(), r.PathValue("rule")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
