package notapi

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// greeter listens on loopback and greets each connection as a NATS server
// does, with its INFO line, then reads until the client hangs up.
func greeter(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				conn.Write([]byte(`INFO {"server_id":"NTEST","version":"2.10.0","proto":1,"max_payload":1048576}` + "\r\n"))
				buf := make([]byte, 512)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestExplain(t *testing.T) {
	t.Parallel()
	nats := greeter(t)
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	plainHTTPS := strings.Replace(plain.URL, "http://", "https://", 1)
	for _, tt := range []struct {
		name, server string
		want         string // "" for not recognised
	}{
		{"http to the NATS port", "http://" + nats,
			"http://" + nats + " answered, but not as an agora API: it speaks NATS, not HTTP (is this the NATS port?); the API is where 'agora serve --listen' says (default 127.0.0.1:7070): check --server or AGORA_SERVER"},
		{"https to the NATS port", "https://" + nats, "https://" + nats + " answered, but not as an agora API: it speaks NATS, not HTTPS (is this the NATS port?)"},
		{"https to a plain HTTP server", plainHTTPS, plainHTTPS + " answered in plain HTTP, not HTTPS; use " + plain.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := http.Get(tt.server + "/v1/tasks")
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded; want an error", tt.server)
			}
			got, ok := Explain(tt.server, "127.0.0.1:7070", err)
			if !ok || !strings.HasPrefix(got, tt.want) {
				t.Errorf("Explain(%v) = %q, %v; want %q", err, got, ok, tt.want)
			}
		})
	}
	if got, ok := Explain("http://127.0.0.1:1", "127.0.0.1:7070", errors.New("some other failure")); ok {
		t.Errorf("Explain of an unrelated error = %q; want it not recognised", got)
	}
}
