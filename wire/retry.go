package wire

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agoradev/agora/schemas"
)

// RetryPolicy is when the orchestrator dispatches a failed round again on
// its own: for a failure whose reason is in On, after a backoff, until the
// round has had Attempts dispatches. A task without one (the default) is
// never retried automatically; docs/orchestrator.md#retries.
type RetryPolicy struct {
	// Attempts is how many dispatches a round gets at most, the first
	// included: 3 is the first and two retries. Respawns count too.
	Attempts int `json:"attempts"`
	// Backoff is the wait before each retry; nil takes DefaultBackoff.
	Backoff *Backoff `json:"backoff,omitempty"`
	// On are the failure reasons worth a retry, of RetryableReasons.
	On []schemas.FailureReason `json:"on"`
}

// Backoff is exponential: InitialSeconds before the first retry, times
// Multiplier before each one after, at most MaxSeconds.
type Backoff struct {
	InitialSeconds int     `json:"initial_seconds,omitempty"`
	MaxSeconds     int     `json:"max_seconds,omitempty"`
	Multiplier     float64 `json:"multiplier,omitempty"`
}

// Defaults of a Backoff's unset fields.
const (
	DefaultBackoffInitialSeconds = 10
	DefaultBackoffMaxSeconds     = 300
	DefaultBackoffMultiplier     = 2.0
)

// MaxBackoffSeconds bounds a Backoff's seconds (1 day).
const MaxBackoffSeconds = 24 * 60 * 60

// MaxRetryMultiplier bounds Backoff.Multiplier.
const MaxRetryMultiplier = 10

// RetryableReasons are the failure reasons a retry policy may name: the
// transient ones. The others (worker-failed, integrity-failed,
// fetch-failed) fail the same way again.
var RetryableReasons = []schemas.FailureReason{schemas.ReasonWorkerLost, schemas.ReasonProviderFailed, schemas.ReasonTimeout}

// Check names the first thing wrong with the policy; maxAttempts is the
// server's ceiling on Attempts.
func (p *RetryPolicy) Check(maxAttempts int) error {
	switch {
	case p.Attempts < 1:
		return fmt.Errorf("retry.attempts %d: want at least 1 (1: no retry)", p.Attempts)
	case p.Attempts > maxAttempts:
		return fmt.Errorf("retry.attempts %d is over this server's maximum %d (--max-retry-attempts)", p.Attempts, maxAttempts)
	case len(p.On) == 0:
		return fmt.Errorf("retry.on is empty: name the failure reasons worth a retry, of %s", reasonList())
	}
	for _, r := range p.On {
		if !slices.Contains(RetryableReasons, r) {
			return fmt.Errorf("retry.on: %q is not a reason a retry can help; want %s", r, reasonList())
		}
	}
	if b := p.Backoff; b != nil {
		switch {
		case b.InitialSeconds < 0 || b.InitialSeconds > MaxBackoffSeconds:
			return fmt.Errorf("retry.backoff.initial_seconds %d: want 0 to %d", b.InitialSeconds, MaxBackoffSeconds)
		case b.MaxSeconds < 0 || b.MaxSeconds > MaxBackoffSeconds:
			return fmt.Errorf("retry.backoff.max_seconds %d: want 0 to %d", b.MaxSeconds, MaxBackoffSeconds)
		case b.Multiplier != 0 && (b.Multiplier < 1 || b.Multiplier > MaxRetryMultiplier):
			return fmt.Errorf("retry.backoff.multiplier %g: want 1 to %d", b.Multiplier, MaxRetryMultiplier)
		}
	}
	return nil
}

func reasonList() string {
	names := make([]string, len(RetryableReasons))
	for i, r := range RetryableReasons {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// Retries reports whether a round that failed for reason on its attempt
// gets another dispatch.
func (p *RetryPolicy) Retries(reason schemas.FailureReason, attempt int) bool {
	return p != nil && attempt < p.Attempts && slices.Contains(p.On, reason)
}

// Delay is the wait before dispatch attempt (2 and up): initial ×
// multiplier^(attempt-2), at most max. A Backoff that sets only some fields
// takes the defaults for the others; initial_seconds 0 retries at once.
func (p *RetryPolicy) Delay(attempt int) time.Duration {
	initial, most, mult := DefaultBackoffInitialSeconds, DefaultBackoffMaxSeconds, DefaultBackoffMultiplier
	if b := p.Backoff; b != nil {
		initial = b.InitialSeconds
		if b.MaxSeconds > 0 {
			most = b.MaxSeconds
		}
		if b.Multiplier > 0 {
			mult = b.Multiplier
		}
	}
	d := float64(initial) * math.Pow(mult, float64(max(attempt-2, 0)))
	if d > float64(most) {
		d = float64(most)
	}
	return time.Duration(d * float64(time.Second))
}
