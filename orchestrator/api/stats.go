package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// statsParams are the query parameters GET /v1/stats takes.
var statsParams = []string{"subagent", "label", "batch", "since", "limit"}

// stats serves GET /v1/stats[?subagent=NAME][&label=k=v|&batch=ID][&since=T][&limit=N].
func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	opts, err := statsOptions(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, err := h.svc.Stats(r.Context(), opts)
	if err != nil {
		h.fail(w, r, pageError(err))
		return
	}
	if st.Subagents == nil {
		st.Subagents = []wire.SubagentStats{}
	}
	h.write(w, r, http.StatusOK, st)
}

// statsOptions reads the query of GET /v1/stats: each parameter at most
// once, batch=ID standing for label=agora.batch=ID, since an RFC 3339 time.
func statsOptions(q url.Values) (wire.StatsOptions, error) {
	for k := range q {
		if !slices.Contains(statsParams, k) {
			return wire.StatsOptions{}, invalid(fmt.Sprintf("query: unknown parameter %q; stats take %s", k, strings.Join(statsParams, ", ")))
		}
	}
	page, err := pageOptions(q, statsParams...)
	if err != nil {
		return wire.StatsOptions{}, err
	}
	opts := wire.StatsOptions{Subagent: q.Get("subagent"), Label: q.Get("label"), Limit: page.Limit}
	if b, ok := q["batch"]; ok {
		if opts.Label != "" {
			return opts, invalid("query: batch and label both given; batch=ID is label=" + wire.BatchLabel + "=ID, give one")
		}
		if b[0] == "" {
			return opts, invalid("query: batch is empty; give a batch id (agora batch list shows them)")
		}
		opts.Label = wire.BatchLabel + "=" + b[0]
	}
	if k, _, ok := strings.Cut(opts.Label, "="); opts.Label != "" && (!ok || k == "") {
		return opts, invalid(fmt.Sprintf("query: label %q; want key=value", opts.Label))
	}
	if s, ok := q["since"]; ok {
		t, err := time.Parse(time.RFC3339Nano, s[0])
		if err != nil {
			return opts, invalid(fmt.Sprintf("query: since %q: want an RFC 3339 time, e.g. 2026-11-19T00:00:00Z", s[0]))
		}
		opts.Since = t
	}
	return opts, nil
}
