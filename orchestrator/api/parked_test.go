package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestHandler_ParkedEvents(t *testing.T) {
	var retried, discarded []uint64
	svc := &apitest.Service{
		ParkedEventsFunc: func(context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error) {
			return []wire.ParkedEvent{{Sequence: 9, DispatchID: "t-1-r1", Kind: schemas.KindFinished, Error: "boom",
					Event: schemas.Event{Kind: schemas.KindFinished, DispatchID: "t-1-r1", TaskID: "t-1", Round: 1}}},
				wire.PipelineStats{Applied: 3, Parked: 1, ParkedNow: 1, Dropped: map[string]uint64{"unknown_task": 2}}, nil
		},
		RetryParkedFunc: func(_ context.Context, seq uint64) error {
			if seq != 9 {
				return fmt.Errorf("parked event %d: %w", seq, wire.ErrNotFound)
			}
			retried = append(retried, seq)
			return nil
		},
		DiscardParkedFunc: func(_ context.Context, seq uint64) error { discarded = append(discarded, seq); return nil },
	}
	h := newHandler(t, svc)
	rec := serve(h, http.MethodGet, "/v1/parked-events", "")
	var list wire.ParkedEventList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list.ParkedEvents) != 1 ||
		list.ParkedEvents[0].Error != "boom" || list.Stats.Dropped["unknown_task"] != 2 {
		t.Errorf("GET /v1/parked-events = %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{http.MethodPost, "/v1/parked-events/9/retry", 204},
		{http.MethodPost, "/v1/parked-events/10/retry", 404},
		{http.MethodPost, "/v1/parked-events/abc/retry", 400},
		{http.MethodPost, "/v1/parked-events/0/retry", 400},
		{http.MethodDelete, "/v1/parked-events/9", 204},
		{http.MethodDelete, "/v1/parked-events/-1", 400},
		{http.MethodPut, "/v1/parked-events/9", 405},
	} {
		if rec := serve(h, tc.method, tc.target, "", "Content-Type", "application/json"); rec.Code != tc.want {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.target, rec.Code, rec.Body, tc.want)
		}
	}
	if len(retried) != 1 || len(discarded) != 1 {
		t.Errorf("retried %v, discarded %v; want one each", retried, discarded)
	}
}
