package answer

import (
	"context"
	"fmt"
)

type human struct {
	notify func(context.Context, Question) error
}

// NewHuman returns the answerer for people: it calls notify (which may be
// nil: the question is listed by the API and the CLI anyway) and returns
// ErrPending; the answer arrives through the orchestrator's Answer. A failed
// notify is reported in the error, which still wraps ErrPending, since the
// question stays answerable through the API.
func NewHuman(notify func(ctx context.Context, q Question) error) Answerer {
	return human{notify: notify}
}

// Ask implements Answerer.
func (h human) Ask(ctx context.Context, q Question) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	if h.notify != nil {
		if err := h.notify(ctx, q); err != nil {
			return Reply{}, fmt.Errorf("%w (notify failed: %w)", ErrPending, err)
		}
	}
	return Reply{}, ErrPending
}
