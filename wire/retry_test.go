package wire

import (
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
)

func TestRetryPolicyDelayAndRetries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		backoff *Backoff
		attempt int
		want    time.Duration
	}{
		{"defaults, first retry", nil, 2, 10 * time.Second},
		{"defaults, third retry", nil, 4, 40 * time.Second},
		{"defaults, capped", nil, 9, 300 * time.Second},
		{"at once", &Backoff{}, 3, 0},
		{"initial and multiplier", &Backoff{InitialSeconds: 2, Multiplier: 3}, 4, 18 * time.Second},
		{"max", &Backoff{InitialSeconds: 2, Multiplier: 3, MaxSeconds: 5}, 4, 5 * time.Second},
	} {
		p := RetryPolicy{Attempts: 10, Backoff: tt.backoff, On: []schemas.FailureReason{schemas.ReasonTimeout}}
		if got := p.Delay(tt.attempt); got != tt.want {
			t.Errorf("%s: Delay(%d) = %s, want %s", tt.name, tt.attempt, got, tt.want)
		}
	}
	p := &RetryPolicy{Attempts: 3, On: []schemas.FailureReason{schemas.ReasonWorkerLost}}
	for _, tt := range []struct {
		reason  schemas.FailureReason
		attempt int
		want    bool
	}{
		{schemas.ReasonWorkerLost, 1, true},
		{schemas.ReasonWorkerLost, 2, true},
		{schemas.ReasonWorkerLost, 3, false},
		{schemas.ReasonTimeout, 1, false},
	} {
		if got := p.Retries(tt.reason, tt.attempt); got != tt.want {
			t.Errorf("Retries(%s, %d) = %t, want %t", tt.reason, tt.attempt, got, tt.want)
		}
	}
	var none *RetryPolicy
	if none.Retries(schemas.ReasonWorkerLost, 1) {
		t.Error("no policy retries")
	}
}
