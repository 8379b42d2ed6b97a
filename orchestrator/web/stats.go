package web

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

// statsPeriods are the "since" choices of the stats page: the tasks
// created in the last day, week or month, or all of them ("").
var statsPeriods = []struct{ Value, Label string }{
	{"", "all time"}, {"24h", "last 24 hours"}, {"7d", "last 7 days"}, {"30d", "last 30 days"},
}

var periodLengths = map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

type statsData struct {
	page
	Stats wire.Stats
	// Subagent, Batch and Since are the filters shown in the form.
	Subagent, Batch, Since string
	Periods                []struct{ Value, Label string }
}

// stats serves the question quality and round economics of the tasks the
// signed-in user may see, per sub-agent (orchestrator.Stats).
func (h *handler) stats(w http.ResponseWriter, r *http.Request, s api.Session) {
	q := r.URL.Query()
	d := statsData{page: h.basePage(r, s, "Stats", ""), Subagent: q.Get("subagent"), Batch: q.Get("batch"),
		Since: q.Get("since"), Periods: statsPeriods}
	opts := wire.StatsOptions{Subagent: d.Subagent}
	if d.Batch != "" {
		opts.Label = wire.BatchLabel + "=" + d.Batch
	}
	if d.Since != "" {
		length, ok := periodLengths[d.Since]
		if !ok {
			h.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("Since %q: choose 24h, 7d or 30d, or leave it out for all time.", d.Since))
			return
		}
		opts.Since = h.now().Add(-length)
	}
	st, err := h.svc.Stats(r.Context(), opts)
	if err != nil {
		h.fail(w, r, "read the stats", err)
		return
	}
	d.Stats = st
	h.render(w, r, http.StatusOK, "stats", d)
}

// statsLink is the stats page of one sub-agent, keeping the other filters.
func statsLink(d statsData, subagent string) string {
	q := url.Values{}
	q.Set("subagent", subagent)
	if d.Batch != "" {
		q.Set("batch", d.Batch)
	}
	if d.Since != "" {
		q.Set("since", d.Since)
	}
	return "/stats?" + q.Encode()
}

// percent prints a share: "67%", or "–" when there was nothing to share.
func percent(share float64, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", share*100)
}

// durationsText prints a Durations as "median · p90", or "–".
func durationsText(d wire.Durations) string {
	if d.Count == 0 {
		return "–"
	}
	return human(time.Duration(d.MedianMS)*time.Millisecond) + " · " + human(time.Duration(d.P90MS)*time.Millisecond)
}
