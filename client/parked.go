package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/agoradev/agora/wire"
)

// ParkedEvents lists the lifecycle events the orchestrator could not apply
// after their last delivery, oldest first, and its pipeline's counters.
func (c *Client) ParkedEvents(ctx context.Context) ([]wire.ParkedEvent, wire.PipelineStats, error) {
	var list wire.ParkedEventList
	if err := c.do(ctx, http.MethodGet, "/v1/parked-events", nil, &list); err != nil {
		return nil, wire.PipelineStats{}, err
	}
	return list.ParkedEvents, list.Stats, nil
}

// RetryParked applies the parked event of stream sequence seq again.
func (c *Client) RetryParked(ctx context.Context, seq uint64) error {
	return c.do(ctx, http.MethodPost, "/v1/parked-events/"+strconv.FormatUint(seq, 10)+"/retry", nil, nil)
}

// DiscardParked forgets the parked event of stream sequence seq.
func (c *Client) DiscardParked(ctx context.Context, seq uint64) error {
	return c.do(ctx, http.MethodDelete, "/v1/parked-events/"+strconv.FormatUint(seq, 10), nil, nil)
}
