// Package egress is the HTTP(S) forward proxy of a sub-agent with an egress
// allow-list (network "egress", docs/runner.md): it relays a CONNECT (for
// https) or an absolute-URI request (for http) to a host the list allows,
// resolving the name itself, and answers 403 to everything else — an
// unlisted name, an IP address, a listed name on a port the list does not
// give, a name that resolves to a loopback, link-local, multicast or
// unspecified address. Every decision is written as one JSON line
// (Decision) for the runner to log and count.
//
// It runs as `agora-worker egress-proxy` in a container of its own, so it
// stays small (docs/architecture.md).
package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/schemas"
)

// Reasons a request is denied (Decision.Reason).
const (
	// ReasonNotListed: no entry of the allow-list names the host.
	ReasonNotListed = "not-listed"
	// ReasonPort: an entry names the host, but not on this port.
	ReasonPort = "port-not-allowed"
	// ReasonIPLiteral: the request names an IP address, not a host name.
	ReasonIPLiteral = "ip-address"
	// ReasonLocalAddress: the listed name resolves only to addresses the
	// proxy never dials (loopback, link-local, multicast, unspecified).
	ReasonLocalAddress = "local-address"
	// ReasonNotProxy: the request is not a proxy request (not CONNECT, not
	// an absolute http:// URI).
	ReasonNotProxy = "not-a-proxy-request"
)

// Decision is one line of the proxy's log, on its standard output.
type Decision struct {
	// Egress is "allowed" or "denied".
	Egress     string `json:"egress"`
	DispatchID string `json:"dispatch_id,omitempty"`
	Method     string `json:"method"`
	Host       string `json:"host"`
	Port       int    `json:"port,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Error is set when an allowed request could not be relayed (the
	// host did not resolve or answer).
	Error string `json:"error,omitempty"`
}

// Denied reports whether the line is a denial.
func (d Decision) Denied() bool { return d.Egress == "denied" }

// Config is one proxy.
type Config struct {
	// Rules is the allow-list (schemas.ParseEgress).
	Rules []schemas.EgressRule
	// DispatchID is written into every decision line.
	DispatchID string
	// Log receives one JSON Decision per line; nil discards them.
	Log io.Writer
	// Resolve looks up a host's addresses; nil uses net.DefaultResolver.
	// Tests resolve their own names with it.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds one connection to a listed host; zero means 10s.
	DialTimeout time.Duration
}

// Proxy is an http.Handler that relays what its rules allow.
type Proxy struct {
	cfg       Config
	transport *http.Transport
	relay     *httputil.ReverseProxy
	denied    atomic.Int64
	logMu     sync.Mutex
	// allowLoopback lets tests relay to their loopback servers.
	allowLoopback bool
}

// New returns the proxy of cfg.
func New(cfg Config) *Proxy {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p := &Proxy{cfg: cfg}
	p.transport = &http.Transport{
		Proxy:                 nil, // never another proxy: this one resolves and dials
		DialContext:           p.dialListed,
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	p.relay = &httputil.ReverseProxy{
		// The inbound URL is absolute already; Rewrite adds no
		// X-Forwarded-* headers, so the sub-agent's address stays here.
		// The Host header is the checked URL's: another one would let
		// a listed host that serves many sites (a CDN) route the request
		// to an unlisted one.
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = "" },
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			host, port := hostPort(r.URL.Host, 80)
			p.write(Decision{Egress: "allowed", Method: r.Method, Host: host, Port: port, Error: err.Error()})
			http.Error(w, "agora egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p
}

// Denied is how many requests the proxy has refused.
func (p *Proxy) Denied() int64 { return p.denied.Load() }

// Close drops the idle connections to listed hosts.
func (p *Proxy) Close() { p.transport.CloseIdleConnections() }

// Decide is the allow-list's verdict on host:port, before any lookup: ""
// when a rule allows it, else the reason it is denied.
func Decide(rules []schemas.EgressRule, host string, port int) string {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if _, err := netip.ParseAddr(h); err == nil || looksNumeric(h) {
		return ReasonIPLiteral
	}
	named := false
	for _, r := range rules {
		if r.Allows(h, port) {
			return ""
		}
		named = named || r.Names(h)
	}
	if named {
		return ReasonPort
	}
	return ReasonNotListed
}

// looksNumeric: a last label of digits only, which resolvers read as an
// address ("127.1", "2130706433").
func looksNumeric(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		// https:// as an absolute URI would need the proxy to speak TLS
		// for the client: tools send CONNECT for https.
		p.deny(w, Decision{Method: r.Method, Host: r.Host, Reason: ReasonNotProxy},
			"send http:// requests as absolute URIs and https:// through CONNECT (set HTTP_PROXY and HTTPS_PROXY)")
		return
	}
	host, port := hostPort(r.URL.Host, 80)
	d := Decision{Method: r.Method, Host: host, Port: port}
	if d.Reason = Decide(p.cfg.Rules, host, port); d.Reason != "" {
		p.deny(w, d, "")
		return
	}
	r.Header.Del("Proxy-Authorization")
	p.write(Decision{Egress: "allowed", Method: r.Method, Host: host, Port: port})
	p.relay.ServeHTTP(w, r)
}

// connect tunnels a CONNECT to a listed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port := hostPort(r.Host, 0)
	d := Decision{Method: r.Method, Host: host, Port: port}
	if port == 0 {
		d.Reason = ReasonNotProxy
		p.deny(w, d, "CONNECT needs host:port")
		return
	}
	if d.Reason = Decide(p.cfg.Rules, host, port); d.Reason != "" {
		p.deny(w, d, "")
		return
	}
	// Not the request's context: a client that half-closes after CONNECT
	// (nc with the request on its stdin) ends that one.
	upstream, err := p.dialListed(context.WithoutCancel(r.Context()), "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if errors.Is(err, errLocal) {
		d.Reason = ReasonLocalAddress
		p.deny(w, d, "")
		return
	}
	if err != nil {
		d.Egress, d.Error = "allowed", err.Error()
		p.write(d)
		http.Error(w, "agora egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "agora egress proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	d.Egress = "allowed"
	p.write(d)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	go splice(upstream, client, buf.Reader)
}

// splice copies both ways until either side ends, then closes both.
func splice(upstream, client net.Conn, pending io.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, pending) // what the client sent after CONNECT, then the rest
		if tc, ok := upstream.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	upstream.Close()
	client.Close()
}

var errLocal = errors.New("resolves only to loopback, link-local, multicast or unspecified addresses")

// dialListed resolves a host the rules allowed and dials the first of its
// addresses that is not local. The name is resolved here, once, and the
// address dialled is the one checked.
func (p *Proxy) dialListed(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, err := p.cfg.Resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var d net.Dialer
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		if local(a) && !(p.allowLoopback && a.IsLoopback()) {
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), portStr))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s %w", host, errLocal)
	}
	return nil, errors.Join(errs...)
}

// local: an address the proxy never relays to, whatever a name resolves
// to — its own host's loopback, link-local (the cloud metadata service at
// 169.254.169.254), multicast, unspecified.
func local(a netip.Addr) bool {
	return !a.IsValid() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified()
}

// deny answers 403 and logs the decision.
func (p *Proxy) deny(w http.ResponseWriter, d Decision, hint string) {
	d.Egress = "denied"
	p.denied.Add(1)
	p.write(d)
	msg := fmt.Sprintf("agora egress proxy: %s %s denied (%s)", d.Method, net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), d.Reason)
	switch {
	case hint != "":
		msg += ": " + hint
	case d.Reason == ReasonIPLiteral:
		msg += ": name the host; its address is not on the sub-agent's egress list"
	default:
		msg += ": not on the sub-agent's egress list"
	}
	w.Header().Set("Connection", "close")
	http.Error(w, msg, http.StatusForbidden)
}

func (p *Proxy) write(d Decision) {
	if p.cfg.Log == nil {
		return
	}
	d.DispatchID = p.cfg.DispatchID
	line, err := json.Marshal(d)
	if err != nil {
		return
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	_, _ = p.cfg.Log.Write(append(line, '\n'))
}

// hostPort splits "host:port" (port def when absent), lower-casing the
// host; a port that is not a number gives 0.
func hostPort(hp string, def int) (string, int) {
	host, portStr, err := net.SplitHostPort(hp)
	if err != nil {
		return strings.ToLower(strings.Trim(hp, "[]")), def
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return strings.ToLower(host), 0
	}
	return strings.ToLower(host), port
}

// Serve runs the proxy on ln until ctx ends, then closes it and waits a
// moment for requests in flight.
func Serve(ctx context.Context, ln net.Listener, p *Proxy) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	p.Close()
	return nil
}
