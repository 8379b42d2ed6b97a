package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agoradev/agora/wire"
)

// Stats reads question quality and round economics per sub-agent over the
// tasks the token may see that opts chooses (GET /v1/stats).
func (c *Client) Stats(ctx context.Context, opts wire.StatsOptions) (wire.Stats, error) {
	q := url.Values{}
	if opts.Subagent != "" {
		q.Set("subagent", opts.Subagent)
	}
	if opts.Label != "" {
		q.Set("label", opts.Label)
	}
	if !opts.Since.IsZero() {
		q.Set("since", opts.Since.UTC().Format(time.RFC3339Nano))
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var st wire.Stats
	err := c.do(ctx, http.MethodGet, withQuery("/v1/stats", q), nil, &st)
	return st, err
}
