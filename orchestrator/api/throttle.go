package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed authentication is limited per client address: a burst of
// failureBurst wrong secrets (bearer tokens and web sign-ins alike), then
// one every failureEvery; past that, 429 with Retry-After. A token has no
// name until its secret matches, so the limit is per client, not per name.
const (
	failureBurst = 10
	failureEvery = 6 * time.Second
	// maxFailureClients bounds the clients remembered; the quietest are
	// forgotten first.
	maxFailureClients = 10_000
)

// rateLimited is a request refused for its client's failed attempts.
type rateLimited struct {
	client string
	after  time.Duration
}

func (e *rateLimited) Error() string {
	return fmt.Sprintf("too many failed attempts from %s: try again in %s", e.client, e.after.Round(time.Second))
}

// RetryAfter is e's Retry-After header value: whole seconds, at least 1.
func (e *rateLimited) RetryAfter() string {
	return strconv.Itoa(max(1, int((e.after+time.Second-1)/time.Second)))
}

// failures counts failed attempts per client.
type failures struct {
	mu      sync.Mutex
	clients map[string]*clientFailures
}

type clientFailures struct {
	lim  *rate.Limiter
	last time.Time
}

// check returns a *rateLimited error when client must wait.
func (f *failures) check(client string, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clients[client]
	if !ok {
		return nil
	}
	if tokens := c.lim.TokensAt(now); tokens < 1 {
		return &rateLimited{client: client, after: time.Duration((1 - tokens) * float64(failureEvery))}
	}
	return nil
}

// failed counts one failed attempt of client.
func (f *failures) failed(client string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clients == nil {
		f.clients = map[string]*clientFailures{}
	}
	c, ok := f.clients[client]
	if !ok {
		if len(f.clients) >= maxFailureClients {
			f.forgetQuietest()
		}
		c = &clientFailures{lim: rate.NewLimiter(rate.Every(failureEvery), failureBurst)}
		f.clients[client] = c
	}
	c.lim.AllowN(now, 1)
	c.last = now
}

func (f *failures) forgetQuietest() {
	var oldest string
	var at time.Time
	for k, c := range f.clients {
		if oldest == "" || c.last.Before(at) {
			oldest, at = k, c.last
		}
	}
	delete(f.clients, oldest)
}

// ClientOf is the address a request came from, without its port: what
// failed attempts are counted by.
func ClientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// RateLimited reports whether err refuses a request for its client's
// failed attempts, and the Retry-After value to send.
func RateLimited(err error) (retryAfter string, ok bool) {
	if rl, ok := errors.AsType[*rateLimited](err); ok {
		return rl.RetryAfter(), true
	}
	return "", false
}
