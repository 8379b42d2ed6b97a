package web

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in bounds: what an unauthenticated client can make the server do.
const (
	// maxSignInBytes caps a sign-in form (a token and the page to go
	// back to); the form parser would otherwise read 10 MB.
	maxSignInBytes = 8 << 10
	// maxSignInsAtOnce bounds sign-ins handled at the same time, from
	// everyone: past it a sign-in is refused at once (503).
	maxSignInsAtOnce = 16
	// signInBurst failed sign-ins from one client, then one each
	// signInEvery: past it, 429 with Retry-After.
	signInBurst = 10
	signInEvery = 6 * time.Second
	// maxSignInClients bounds the clients remembered; the quietest are
	// forgotten first.
	maxSignInClients = 10_000
)

// signInGuard limits failed sign-ins per client (by address) and the
// sign-ins handled at once.
type signInGuard struct {
	slots chan struct{}

	mu      sync.Mutex
	clients map[string]*clientFailures
}

type clientFailures struct {
	lim  *rate.Limiter
	last time.Time
}

func newSignInGuard() *signInGuard {
	return &signInGuard{slots: make(chan struct{}, maxSignInsAtOnce), clients: map[string]*clientFailures{}}
}

// enter takes a slot for one sign-in; false when all are taken.
func (g *signInGuard) enter() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g *signInGuard) leave() { <-g.slots }

// wait reports how long client must wait before its next sign-in: zero
// when it may try now.
func (g *signInGuard) wait(client string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[client]
	if !ok || c.lim.TokensAt(now) >= 1 {
		return 0
	}
	return time.Duration((1 - c.lim.TokensAt(now)) * float64(signInEvery))
}

// failed counts a failed sign-in of client.
func (g *signInGuard) failed(client string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[client]
	if !ok {
		if len(g.clients) >= maxSignInClients {
			g.forgetQuietest()
		}
		c = &clientFailures{lim: rate.NewLimiter(rate.Every(signInEvery), signInBurst)}
		g.clients[client] = c
	}
	c.lim.AllowN(now, 1)
	c.last = now
}

// forgetQuietest drops the client whose last failure is oldest.
func (g *signInGuard) forgetQuietest() {
	var oldest string
	var at time.Time
	for k, c := range g.clients {
		if oldest == "" || c.last.Before(at) {
			oldest, at = k, c.last
		}
	}
	delete(g.clients, oldest)
}

// clientOf is the address a request came from (without its port).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// retryAfter renders d for a Retry-After header: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
