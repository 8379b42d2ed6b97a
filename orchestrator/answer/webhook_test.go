package answer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/answertest"
)

const testSecret = "s3cret"

// delivery is one request a receiver got.
type delivery struct {
	id, timestamp, signature string
	q                        answer.Question
}

// receiver is a webhook receiver on a real loopback HTTP server: it checks
// the signature with VerifySignature (401 when it does not verify) and
// answers the n-th request (0-based) with respond.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []delivery
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ts := r.Header.Get(answer.HeaderTimestamp)
		if err := answer.VerifySignature(testSecret, ts, body, r.Header.Get(answer.HeaderSignature)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if err := answer.VerifyTimestamp(ts, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var q answer.Question
		if err := json.Unmarshal(body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, delivery{id: r.Header.Get(answer.HeaderDelivery), timestamp: ts, signature: r.Header.Get(answer.HeaderSignature), q: q})
		rc.mu.Unlock()
		rc.respond(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func reply(status int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func TestWebhookAsk(t *testing.T) {
	t.Parallel()
	q := answer.Question{TaskID: "t-1", Round: 2, Subagent: "coder", SubagentHash: "h", Question: "A or B?", Options: []string{"A", "B"}, AskedAt: time.Unix(1700000000, 0).UTC()}
	tests := []struct {
		name     string
		secret   string
		respond  func(n int, w http.ResponseWriter, r *http.Request)
		want     string // outcome
		wantAns  string
		wantBy   string // with URL standing for the server's URL
		wantErr  string
		attempts int
	}{
		{name: "answer", respond: reply(200, `{"answer": "B", "by": "ops-bot"}`),
			want: "answered", wantAns: "B", wantBy: "ops-bot via webhook URL", attempts: 1},
		{name: "answer by index, no by", respond: reply(200, `{"answer": "1"}`),
			want: "answered", wantAns: "A", wantBy: "webhook URL", attempts: 1},
		{name: "decline in the body", respond: reply(200, `{"decline": true, "reason": "not my area"}`),
			want: "declined", wantErr: "not my area", attempts: 1},
		{name: "204 declines", respond: reply(204, ""), want: "declined", attempts: 1},
		{name: "202 is pending", respond: reply(202, ""), want: "pending", attempts: 1},
		{name: "400 names status and body", respond: reply(400, "missing field foo"),
			want: "error", wantErr: `400 Bad Request: "missing field foo"`, attempts: 1},
		{name: "answer not among the options", respond: reply(200, `{"answer": "C"}`),
			want: "error", wantErr: `answer "C" is not one of: A, B (or 1-2)`, attempts: 1},
		{name: "200 without an answer", respond: reply(200, `{}`), want: "error", wantErr: "200 with no answer", attempts: 1},
		{name: "200 with bad JSON", respond: reply(200, `B`), want: "error", wantErr: "not {\"answer\": …}", attempts: 1},
		{name: "retries after 503", respond: func(n int, w http.ResponseWriter, _ *http.Request) {
			if n < 2 {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, `{"answer": "A", "by": "late-bot"}`)
		}, want: "answered", wantAns: "A", wantBy: "late-bot via webhook URL", attempts: 3},
		{name: "retries after 429", respond: func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 0 {
				w.Header().Set("Retry-After", "0")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, `{"answer": "B"}`)
		}, want: "answered", wantAns: "B", wantBy: "webhook URL", attempts: 2},
		{name: "gives up after the retries", respond: reply(500, "broken"),
			want: "error", wantErr: `giving up after 4 attempts: 500 Internal Server Error: "broken"`, attempts: 4},
		{name: "bad signature detected by the receiver", secret: "wrong", respond: reply(200, `{"answer": "A"}`),
			want: "error", wantErr: "401 Unauthorized", attempts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tt.respond)
			secret := testSecret
			if tt.secret != "" {
				secret = tt.secret
			}
			w, err := answer.NewWebhook(rc.srv.URL+"/hook?token=xyz", secret, answer.WebhookOptions{
				Client: rc.srv.Client(), Backoff: time.Millisecond, Logger: testLogger(t),
			})
			if err != nil {
				t.Fatalf("NewWebhook: %v", err)
			}
			got, err := w.Ask(t.Context(), q)
			if outcome(err) != tt.want {
				t.Fatalf("Ask = %+v, %v; want %s", got, err, tt.want)
			}
			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Ask error = %q; want it to contain %q", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "xyz") {
				t.Errorf("Ask error = %q; want the URL's query (a token) left out", err)
			}
			wantBy := strings.ReplaceAll(tt.wantBy, "URL", rc.srv.URL+"/hook")
			if tt.want == "answered" && (got.Answer != tt.wantAns || got.By != wantBy) {
				t.Errorf("Ask = %+v; want %q by %q", got, tt.wantAns, wantBy)
			}
			ds := rc.deliveries()
			if len(ds) != tt.attempts {
				t.Fatalf("receiver got %d signed requests; want %d", len(ds), tt.attempts)
			}
			for i, d := range ds {
				if d.id == "" || d.id != ds[0].id {
					t.Errorf("request %d: %s = %q; want the same non-empty id as the first, %q", i, answer.HeaderDelivery, d.id, ds[0].id)
				}
				if d.q.TaskID != q.TaskID || d.q.Question != q.Question || !d.q.AskedAt.Equal(q.AskedAt) || len(d.q.Options) != 2 {
					t.Errorf("request %d: body = %+v; want the question %+v", i, d.q, q)
				}
			}
		})
	}
}

func TestWebhookDeliveriesAreUnique(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, reply(204, ""))
	w, err := answer.NewWebhook(rc.srv.URL, testSecret, answer.WebhookOptions{Client: rc.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w.Ask(t.Context(), answer.Question{Question: "?"}); outcome(err) != "declined" {
			t.Fatalf("Ask = %v; want declined", err)
		}
	}
	if ds := rc.deliveries(); len(ds) != 2 || ds[0].id == ds[1].id {
		t.Errorf("deliveries = %+v; want two with different ids", ds)
	}
}

func TestWebhookTimeoutViaContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select { // hang until the client gives up or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	w, err := answer.NewWebhook(rc.srv.URL, testSecret, answer.WebhookOptions{Client: rc.srv.Client(), Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = w.Ask(ctx, answer.Question{Question: "?"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask with a hanging receiver = %v; want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Ask returned after %s; want about the ctx timeout", d)
	}
}

func TestWebhookAttemptTimeoutRetries(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			<-r.Context().Done() // the first attempt hangs
			return
		}
		io.WriteString(w, `{"answer": "ok"}`)
	})
	w, err := answer.NewWebhook(rc.srv.URL, testSecret, answer.WebhookOptions{
		Client: rc.srv.Client(), Backoff: time.Millisecond, AttemptTimeout: 50 * time.Millisecond, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Ask(t.Context(), answer.Question{Question: "Go on?"})
	if err != nil || got.Answer != "ok" {
		t.Fatalf("Ask = %+v, %v; want ok after a timed-out attempt", got, err)
	}
}

func TestWebhookNetworkErrorRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	w, err := answer.NewWebhook(url, testSecret, answer.WebhookOptions{Retries: 2, Backoff: time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Ask(t.Context(), answer.Question{Question: "?"})
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || outcome(err) != "error" {
		t.Errorf("Ask to a closed port = %v; want giving up after 3 attempts", err)
	}
}

func TestWebhookNoRetries(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, reply(503, "down"))
	w, err := answer.NewWebhook(rc.srv.URL, testSecret, answer.WebhookOptions{Client: rc.srv.Client(), Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Ask(t.Context(), answer.Question{Question: "?"}); err == nil || len(rc.deliveries()) != 1 {
		t.Errorf("Ask with Retries -1 = %v after %d requests; want an error after 1", err, len(rc.deliveries()))
	}
}

func TestNewWebhookErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, secret, wantErr string }{
		{url: "ftp://example.com/x", secret: "s", wantErr: "want an http or https URL"},
		{url: "example.com/x", secret: "s", wantErr: "want an http or https URL"},
		{url: "https://example.com/x", secret: "", wantErr: "a signing secret is required"},
		{url: "https://exa mple.com/%zz", secret: "s", wantErr: "invalid"},
	}
	for _, tt := range tests {
		if _, err := answer.NewWebhook(tt.url, tt.secret, answer.WebhookOptions{}); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("NewWebhook(%q, %q) = %v; want error containing %q", tt.url, tt.secret, err, tt.wantErr)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	body := []byte(`{"question":"A or B?"}`)
	ts := "1700000000"
	good := answer.Sign(testSecret, ts, body)
	tests := []struct {
		name, secret, ts string
		body             []byte
		header           string
		ok               bool
	}{
		{name: "valid", secret: testSecret, ts: ts, body: body, header: good, ok: true},
		{name: "wrong secret", secret: "other", ts: ts, body: body, header: good},
		{name: "body changed", secret: testSecret, ts: ts, body: []byte(`{"question":"A or C?"}`), header: good},
		{name: "timestamp changed", secret: testSecret, ts: "1700000001", body: body, header: good},
		{name: "no timestamp", secret: testSecret, ts: "", body: body, header: good},
		{name: "no prefix", secret: testSecret, ts: ts, body: body, header: strings.TrimPrefix(good, "sha256=")},
		{name: "not hex", secret: testSecret, ts: ts, body: body, header: "sha256=zz"},
		{name: "empty", secret: testSecret, ts: ts, body: body, header: ""},
	}
	for _, tt := range tests {
		err := answer.VerifySignature(tt.secret, tt.ts, tt.body, tt.header)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, answer.ErrBadSignature)) {
			t.Errorf("%s: VerifySignature = %v; want ok=%v (failures wrapping ErrBadSignature)", tt.name, err, tt.ok)
		}
	}
}

func TestSignRecipe(t *testing.T) {
	t.Parallel()
	// The documented recipe, computed independently: HMAC-SHA256 keyed by
	// the secret over "1700000000.{}", in hex (openssl dgst -sha256 -hmac).
	const want = "sha256=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf"
	if got := answer.Sign("s3cret", "1700000000", []byte("{}")); got != want {
		t.Errorf("Sign = %s; want %s", got, want)
	}
}

func TestVerifyTimestamp(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 0)
	tests := []struct {
		ts string
		ok bool
	}{
		{ts: "1700000000", ok: true},
		{ts: strconv.Itoa(1700000000 - 299), ok: true},
		{ts: strconv.Itoa(1700000000 + 299), ok: true},
		{ts: strconv.Itoa(1700000000 - 301)},
		{ts: strconv.Itoa(1700000000 + 301)},
		{ts: "yesterday"},
		{ts: ""},
	}
	for _, tt := range tests {
		if err := answer.VerifyTimestamp(tt.ts, now, 5*time.Minute); (err == nil) != tt.ok {
			t.Errorf("VerifyTimestamp(%q) = %v; want ok=%v", tt.ts, err, tt.ok)
		}
	}
}

func TestWebhookContract(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, reply(200, `{"answer": "b", "by": "bot"}`))
	w, err := answer.NewWebhook(rc.srv.URL, testSecret, answer.WebhookOptions{Client: rc.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	answertest.Answerer(t, w, answer.Question{Question: "A or B?", Options: []string{"A", "B"}}, 5*time.Second)
}
