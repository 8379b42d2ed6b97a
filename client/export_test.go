package client

import "time"

// WithReopenDelay sets Wait's first pause before reopening a broken event
// stream (1s otherwise), so tests of reopening run fast.
func WithReopenDelay(d time.Duration) Option {
	return func(c *Client) { c.reopen = d }
}
