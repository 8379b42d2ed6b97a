package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

func TestHandler_Stats(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, target string
		want         wire.StatsOptions
		wantStatus   int
		wantBody     string
	}{
		{name: "no filter", target: "/v1/stats", wantStatus: http.StatusOK},
		{name: "one sub-agent", target: "/v1/stats?subagent=reviewer", want: wire.StatsOptions{Subagent: "reviewer"}, wantStatus: http.StatusOK},
		{name: "a batch is its label", target: "/v1/stats?batch=b-7&since=2026-11-19T00:00:00Z&limit=5",
			want: wire.StatsOptions{Label: "agora.batch=b-7", Since: since, Limit: 5}, wantStatus: http.StatusOK},
		{name: "a label", target: "/v1/stats?label=team%3Dops", want: wire.StatsOptions{Label: "team=ops"}, wantStatus: http.StatusOK},
		{name: "batch and label", target: "/v1/stats?batch=b&label=a=b", wantStatus: http.StatusBadRequest, wantBody: "batch and label both given"},
		{name: "empty batch", target: "/v1/stats?batch=", wantStatus: http.StatusBadRequest, wantBody: "batch is empty"},
		{name: "label without =", target: "/v1/stats?label=team", wantStatus: http.StatusBadRequest, wantBody: `label \"team\"; want key=value`},
		{name: "since not a time", target: "/v1/stats?since=yesterday", wantStatus: http.StatusBadRequest, wantBody: "want an RFC 3339 time"},
		{name: "limit too large", target: "/v1/stats?limit=1001", wantStatus: http.StatusBadRequest, wantBody: "want a whole number from 1 to 1000"},
		{name: "twice", target: "/v1/stats?subagent=a&subagent=b", wantStatus: http.StatusBadRequest, wantBody: "subagent given 2 times"},
		{name: "unknown parameter", target: "/v1/stats?sub=a", wantStatus: http.StatusBadRequest, wantBody: `unknown parameter \"sub\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			svc := &apitest.Service{StatsFunc: func(_ context.Context, opts wire.StatsOptions) (wire.Stats, error) {
				called = true
				if !opts.Since.Equal(tt.want.Since) || opts.Subagent != tt.want.Subagent || opts.Label != tt.want.Label || opts.Limit != tt.want.Limit {
					t.Errorf("Stats(%+v), want %+v", opts, tt.want)
				}
				return wire.Stats{Total: wire.SubagentStats{Tasks: 2, Questions: 1}}, nil
			}}
			rec := serve(newHandler(t, svc), "GET", tt.target, "")
			if rec.Code != tt.wantStatus {
				t.Fatalf("GET %s: status %d, want %d; body %s", tt.target, rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != http.StatusOK {
				if called || !strings.Contains(rec.Body.String(), tt.wantBody) {
					t.Errorf("GET %s: body %s, want it to say %q without asking the service", tt.target, rec.Body, tt.wantBody)
				}
				return
			}
			var st wire.Stats
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Total.Tasks != 2 || st.Subagents == nil {
				t.Errorf("GET %s: body %s (%v), want the service's stats with an empty subagents list", tt.target, rec.Body, err)
			}
		})
	}
}
