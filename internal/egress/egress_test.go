package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agoradev/agora/schemas"
)

func rules(t *testing.T, entries ...string) []schemas.EgressRule {
	t.Helper()
	r, err := schemas.ParseEgress(entries)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDecide(t *testing.T) {
	t.Parallel()
	list := rules(t, "api.anthropic.com", "*.githubusercontent.com", "git.example.com:8443")
	cases := []struct {
		host string
		port int
		want string
	}{
		{"api.anthropic.com", 443, ""},
		{"API.Anthropic.com.", 443, ""},
		{"api.anthropic.com", 80, ""},
		{"api.anthropic.com", 22, ReasonPort},
		{"raw.githubusercontent.com", 443, ""},
		{"githubusercontent.com", 443, ReasonNotListed},
		{"git.example.com", 8443, ""},
		{"git.example.com", 443, ReasonPort},
		{"evil.example", 443, ReasonNotListed},
		{"anthropic.com", 443, ReasonNotListed},
		{"api.anthropic.com.evil.example", 443, ReasonNotListed},
		{"160.79.104.10", 443, ReasonIPLiteral},
		{"[2607:6bc0::10]", 443, ReasonIPLiteral},
		{"2607:6bc0::10", 443, ReasonIPLiteral},
		{"2130706433", 80, ReasonIPLiteral},
		{"127.1", 80, ReasonIPLiteral},
		{"", 443, ReasonNotListed},
	}
	for _, tc := range cases {
		if got := Decide(list, tc.host, tc.port); got != tc.want {
			t.Errorf("Decide(%q, %d) = %q, want %q", tc.host, tc.port, got, tc.want)
		}
	}
}

// lines collects the proxy's decision lines.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) decisions(t *testing.T) []Decision {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Decision
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var d Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("decision line %q: %v", sc.Text(), err)
		}
		out = append(out, d)
	}
	return out
}

// proxyFixture is a proxy whose resolver knows "allowed.test",
// "other.test" (both the loopback upstreams) and "meta.test" (the cloud
// metadata address).
func proxyFixture(t *testing.T, entries ...string) (*Proxy, *httptest.Server, *lines) {
	t.Helper()
	log := &lines{}
	p := New(Config{Rules: rules(t, entries...), DispatchID: "d-1", Log: log,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "allowed.test", "other.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "meta.test":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		}})
	p.allowLoopback = true
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.Close() })
	return p, srv, log
}

func client(t *testing.T, proxy string) *http.Client {
	t.Helper()
	u, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestProxyRelaysListedHosts(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "plain %s %s xff=%q", r.Host, r.URL.Path, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	}))
	t.Cleanup(secure.Close)
	_, pport, _ := net.SplitHostPort(plain.Listener.Addr().String())
	_, sport, _ := net.SplitHostPort(secure.Listener.Addr().String())
	p, srv, log := proxyFixture(t, "allowed.test:"+pport, "allowed.test:"+sport)
	c := client(t, srv.URL)

	for _, tc := range []struct{ url, want string }{
		{"http://allowed.test:" + pport + "/a", `plain allowed.test:` + pport + ` /a xff=""`},
		{"https://allowed.test:" + sport + "/b", "secure /b"},
	} {
		resp, err := c.Get(tc.url)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", tc.url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != tc.want {
			t.Errorf("GET %s = %d %q, want 200 %q", tc.url, resp.StatusCode, body, tc.want)
		}
	}
	// A Host header naming another site is not passed on: the upstream
	// sees the name the list allowed.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET http://allowed.test:%s/c HTTP/1.1\r\nHost: unlisted.example\r\nConnection: close\r\n\r\n", pport)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET with another Host: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	conn.Close()
	if want := `plain allowed.test:` + pport + ` /c xff=""`; string(body) != want {
		t.Errorf("GET with Host unlisted.example reached the upstream as %q, want %q", body, want)
	}
	if n := p.Denied(); n != 0 {
		t.Errorf("Denied() = %d, want 0", n)
	}
	for _, d := range log.decisions(t) {
		if d.Egress != "allowed" || d.DispatchID != "d-1" || d.Host != "allowed.test" {
			t.Errorf("decision %+v, want allowed.test allowed for d-1", d)
		}
	}
}

func TestProxyDenies(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("upstream reached: %s %s", r.Method, r.URL)
	}))
	t.Cleanup(upstream.Close)
	_, port, _ := net.SplitHostPort(upstream.Listener.Addr().String())
	p, srv, log := proxyFixture(t, "allowed.test:"+port, "meta.test")

	cases := []struct {
		name, method, target, reason string
	}{
		{"unlisted host, http", "GET", "http://other.test:" + port + "/", ReasonNotListed},
		{"unlisted host, CONNECT", "CONNECT", "other.test:" + port, ReasonNotListed},
		{"raw IP, http", "GET", "http://127.0.0.1:" + port + "/", ReasonIPLiteral},
		{"raw IP, CONNECT", "CONNECT", "127.0.0.1:" + port, ReasonIPLiteral},
		{"raw IPv6, CONNECT", "CONNECT", "[::1]:" + port, ReasonIPLiteral},
		{"listed name, other port", "CONNECT", "allowed.test:22", ReasonPort},
		{"listed name to link-local", "CONNECT", "meta.test:443", ReasonLocalAddress},
		{"not a proxy request", "GET", "/", ReasonNotProxy},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		host := tc.target
		if u, err := url.Parse(tc.target); err == nil && u.Host != "" {
			host = u.Host
		} else if tc.target == "/" {
			host = "proxy.internal"
		}
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", tc.method, tc.target, host)
		resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: tc.method})
		if err != nil {
			t.Fatalf("%s: read the proxy's answer: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), tc.reason) {
			t.Errorf("%s: %s %s = %d %q, want 403 naming %s", tc.name, tc.method, tc.target, resp.StatusCode, body, tc.reason)
		}
	}
	if got, want := p.Denied(), int64(len(cases)); got != want {
		t.Errorf("Denied() = %d, want %d", got, want)
	}
	ds := log.decisions(t)
	if len(ds) != len(cases) {
		t.Fatalf("%d decision lines, want %d: %+v", len(ds), len(cases), ds)
	}
	for i, d := range ds {
		if !d.Denied() || d.Reason != cases[i].reason || d.DispatchID != "d-1" {
			t.Errorf("decision %d = %+v, want denied (%s) for d-1", i, d, cases[i].reason)
		}
	}
}
