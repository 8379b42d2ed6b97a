// Package notapi recognises, from the error of a request to the agora API,
// a server that answered in another protocol than the URL asked for — the
// NATS port, whose first words are `INFO {"server_id": …}`, is the usual
// one — so the CLI says so in one line instead of echoing the bytes it
// sent.
package notapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Explain is the one line that names what answered at server instead of
// the API, and whether err is such a case at all. defaultListen is where
// 'agora serve --listen' listens by default (host:port), for the hint.
func Explain(server, defaultListen string, err error) (string, bool) {
	notAPI := func(what string) (string, bool) {
		return fmt.Sprintf("%s answered, but not as an agora API: %s; the API is where 'agora serve --listen' says (default %s): check --server or AGORA_SERVER",
			server, what, defaultListen), true
	}
	plainURL := "http://" + strings.TrimPrefix(server, "https://")
	msg := err.Error()
	if rh, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		if string(rh.RecordHeader[:]) == "INFO " {
			return notAPI("it speaks NATS, not HTTPS (is this the NATS port?)")
		}
		return fmt.Sprintf("%s answered, but not over TLS; if it is agora without TLS in front, use %s", server, plainURL), true
	}
	switch {
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("%s answered in plain HTTP, not HTTPS; use %s", server, plainURL), true
	case strings.Contains(msg, "malformed HTTP") && strings.Contains(msg, "server_id"):
		return notAPI("it speaks NATS, not HTTP (is this the NATS port?)")
	case strings.Contains(msg, "malformed HTTP"):
		return notAPI("it does not speak HTTP")
	case strings.Contains(msg, "readLoopPeekFailLocked") || strings.Contains(msg, "server closed idle connection") ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		// A server that speaks first (NATS greets every client with INFO)
		// can win the race with the request: Go's transport then reports
		// the connection, not the bytes. Ask the server what it says.
		if u, perr := url.Parse(server); perr == nil && greetsWithINFO(u.Host) {
			return notAPI("it speaks NATS, not HTTP (is this the NATS port?)")
		}
	}
	return "", false
}

// greetsWithINFO reports whether the server at hostport speaks first with
// NATS's "INFO " greeting, within a second and without being sent anything.
func greetsWithINFO(hostport string) bool {
	conn, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 5)
	_, err = io.ReadFull(conn, buf)
	return err == nil && string(buf) == "INFO "
}
