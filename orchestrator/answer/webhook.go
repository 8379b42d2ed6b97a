package answer

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/schemas"
)

// Webhook request headers. The signature covers timestamp + "." + body.
const (
	// HeaderSignature is "sha256=<hex HMAC-SHA256 of timestamp.body>".
	HeaderSignature = "X-Agora-Signature"
	// HeaderTimestamp is the Unix time in seconds when the attempt was sent.
	HeaderTimestamp = "X-Agora-Timestamp"
	// HeaderDelivery identifies one question delivery; retries repeat it,
	// so receivers can deduplicate.
	HeaderDelivery = "X-Agora-Delivery"
)

// ErrBadSignature: a webhook request's signature or timestamp does not verify.
var ErrBadSignature = errors.New("bad webhook signature")

// Defaults for WebhookOptions.
const (
	DefaultWebhookRetries        = 3
	DefaultWebhookBackoff        = time.Second
	DefaultWebhookAttemptTimeout = 30 * time.Second
	maxWebhookBackoff            = 30 * time.Second
	maxRetryAfter                = 10 * time.Minute
	maxWebhookResponse           = 1 << 20
)

// WebhookOptions tune a Webhook; the zero value is usable.
type WebhookOptions struct {
	// Client sends the requests; nil means a plain &http.Client{}.
	Client *http.Client
	// Retries is how many times a 5xx, 429 or network error is retried after
	// the first attempt: 0 means DefaultWebhookRetries, negative means none.
	Retries int
	// Backoff is the wait before the first retry, doubled for each further
	// one (capped at 30s, jittered, at least a 429/503's Retry-After);
	// 0 means DefaultWebhookBackoff.
	Backoff time.Duration
	// AttemptTimeout bounds each attempt inside the step's ctx;
	// 0 means DefaultWebhookAttemptTimeout.
	AttemptTimeout time.Duration
	// Logger receives one line per failed attempt; nil discards.
	Logger *slog.Logger
}

// Webhook POSTs questions to a URL; see docs/answerers.md for the protocol.
type Webhook struct {
	url     string
	display string
	secret  []byte
	opts    WebhookOptions
	log     *slog.Logger
}

var _ Answerer = (*Webhook)(nil)

// NewWebhook returns the answerer for rawURL (http or https), signing every
// request with secret (required).
func NewWebhook(rawURL, secret string, opts WebhookOptions) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook %q: want an http or https URL", displayURL(u))
	}
	if secret == "" {
		return nil, fmt.Errorf("webhook %s: a signing secret is required", displayURL(u))
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultWebhookRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultWebhookBackoff
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultWebhookAttemptTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Webhook{url: rawURL, display: displayURL(u), secret: []byte(secret), opts: opts, log: log}, nil
}

// displayURL drops credentials and the query (which may carry tokens).
func displayURL(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return v.String()
}

// webhookResponse is the body of a 200 answer.
type webhookResponse struct {
	Answer  string `json:"answer"`
	By      string `json:"by"`
	Decline bool   `json:"decline"`
	Reason  string `json:"reason"`
}

// Ask implements Answerer: it POSTs q and maps the response (200 answer or
// decline, 202 pending, 204 decline), retrying 5xx, 429 and network errors
// with backoff while ctx lasts.
func (w *Webhook) Ask(ctx context.Context, q Question) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	body, err := json.Marshal(q)
	if err != nil {
		return Reply{}, fmt.Errorf("webhook %s: encode question: %w", w.display, err)
	}
	delivery := rand.Text()
	log := w.log.With("task_id", q.TaskID, "round", q.Round, "delivery", delivery, "url", w.display)
	var (
		last    error
		attempt int
		final   bool // the operation decided; otherwise ctx ended in a pause
		pause   = &chosenBackOff{}
	)
	reply, err := backoff.Retry(ctx, func() (Reply, error) {
		attempt++
		reply, wait, err := w.attempt(ctx, q, body, delivery)
		if wait < 0 || err == nil {
			final = true
			return reply, backoff.Permanent(err)
		}
		last = err
		if ctx.Err() != nil {
			final = true
			return Reply{}, backoff.Permanent(fmt.Errorf("webhook %s: %w (after %s, last: %v)", w.display, ctx.Err(), attempts(attempt), last))
		}
		if attempt > w.opts.Retries {
			final = true
			return Reply{}, backoff.Permanent(fmt.Errorf("webhook %s: giving up after %s: %w", w.display, attempts(attempt), last))
		}
		// The receiver's Retry-After, when longer, wins over our backoff.
		pause.d = max(w.backoff(attempt), wait)
		return Reply{}, err
	}, backoff.WithBackOff(pause), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, d time.Duration) {
			log.Warn("webhook attempt failed; retrying", "attempt", attempt, "retry_in", d, "error", err)
		}))
	if err != nil && !final {
		return Reply{}, fmt.Errorf("webhook %s: %w (after %s, last: %v)", w.display, ctx.Err(), attempts(attempt), last)
	}
	return reply, err
}

// chosenBackOff is the pause Ask chose after the failed attempt: its own
// jittered backoff or the receiver's Retry-After.
type chosenBackOff struct{ d time.Duration }

func (c *chosenBackOff) Reset() {}

func (c *chosenBackOff) NextBackOff() time.Duration { return c.d }

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// backoff is the jittered wait after the given failed attempt (1-based).
func (w *Webhook) backoff(attempt int) time.Duration {
	d := w.opts.Backoff
	for i := 1; i < attempt && d < maxWebhookBackoff; i++ {
		d *= 2
	}
	if d > maxWebhookBackoff && w.opts.Backoff <= maxWebhookBackoff {
		d = maxWebhookBackoff
	}
	return d/2 + mrand.N(d/2+1)
}

// attempt sends one request. wait < 0 means final (reply or err stands);
// otherwise err is retryable after at least wait.
func (w *Webhook) attempt(ctx context.Context, q Question, body []byte, delivery string) (Reply, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, w.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, -1, fmt.Errorf("webhook %s: %w", w.display, err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agora-webhook/1")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderSignature, Sign(string(w.secret), ts, body))
	res, err := w.opts.Client.Do(req)
	if err != nil {
		return Reply{}, 0, fmt.Errorf("post: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxWebhookResponse+1))
	if err != nil {
		return Reply{}, 0, fmt.Errorf("%s: read body: %w", res.Status, err)
	}
	switch {
	case res.StatusCode == http.StatusOK:
		r, err := w.parseAnswer(q, data)
		return r, -1, err
	case res.StatusCode == http.StatusAccepted:
		return Reply{}, -1, fmt.Errorf("%w: webhook %s will answer through the API", ErrPending, w.display)
	case res.StatusCode == http.StatusNoContent:
		return Reply{}, -1, fmt.Errorf("%w: webhook %s answered 204", ErrDecline, w.display)
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
		return Reply{}, retryAfter(res.Header.Get("Retry-After")), fmt.Errorf("%s: %s", res.Status, excerpt(data))
	default:
		return Reply{}, -1, fmt.Errorf("webhook %s: %s: %s", w.display, res.Status, excerpt(data))
	}
}

func (w *Webhook) parseAnswer(q Question, data []byte) (Reply, error) {
	if len(data) > maxWebhookResponse {
		return Reply{}, fmt.Errorf("webhook %s: response larger than %d bytes", w.display, maxWebhookResponse)
	}
	var wr webhookResponse
	if err := schemas.Decode("webhook response", data, &wr); err != nil {
		return Reply{}, fmt.Errorf("webhook %s: 200 with a body that is not {\"answer\": …}: %w: %s", w.display, err, excerpt(data))
	}
	if wr.Decline {
		reason := wr.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return Reply{}, fmt.Errorf("%w: webhook %s: %s", ErrDecline, w.display, reason)
	}
	if schemas.Blank(wr.Answer) {
		return Reply{}, fmt.Errorf("webhook %s: 200 with no answer (send 204 or {\"decline\": true} to decline)", w.display)
	}
	a, err := ValidateAnswer(q, wr.Answer)
	if err != nil {
		return Reply{}, fmt.Errorf("webhook %s: %w", w.display, err)
	}
	by := "webhook " + w.display
	if wr.By != "" {
		by = wr.By + " via " + by
	}
	return Reply{Answer: a, By: by}, nil
}

// retryAfter reads a Retry-After header given in seconds (0 when absent).
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n <= 0 {
		return 0
	}
	return units.SecondsOr(int64(n), maxRetryAfter)
}

// excerpt is the start of a response body for an error message.
func excerpt(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return strconv.Quote(s)
}

// Sign returns the X-Agora-Signature value for a request: "sha256=" and the
// hex HMAC-SHA256, keyed by secret, of timestamp + "." + body.
func Sign(secret, timestamp string, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks, for a receiver, that header (the X-Agora-Signature
// value) signs timestamp (the X-Agora-Timestamp value) and body with secret.
// Failures wrap ErrBadSignature. Check the timestamp's age too
// (VerifyTimestamp), and deduplicate on X-Agora-Delivery.
func VerifySignature(secret, timestamp string, body []byte, header string) error {
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return fmt.Errorf("%w: %s: want sha256=<hex>", ErrBadSignature, HeaderSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadSignature, HeaderSignature, err)
	}
	if timestamp == "" {
		return fmt.Errorf("%w: %s missing", ErrBadSignature, HeaderTimestamp)
	}
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return fmt.Errorf("%w: signature does not match the body and timestamp", ErrBadSignature)
	}
	return nil
}

// VerifyTimestamp checks, for a receiver, that an X-Agora-Timestamp is within
// tolerance of now (either way), so a captured request cannot be replayed
// later. Failures wrap ErrBadSignature.
func VerifyTimestamp(timestamp string, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrBadSignature, HeaderTimestamp, timestamp)
	}
	age := now.Sub(time.Unix(sec, 0))
	if age > tolerance || -age > tolerance {
		return fmt.Errorf("%w: %s is %s away from now (tolerance %s)", ErrBadSignature, HeaderTimestamp, age.Round(time.Second), tolerance)
	}
	return nil
}
