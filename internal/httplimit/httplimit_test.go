package httplimit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serve runs Bodies(h) on a real loopback listener: deadlines need a
// real connection.
func serve(t *testing.T, max int64, timeout time.Duration, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(Bodies(h, max, timeout))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestSlowBodyCutOff: a body that trickles in is cut off at the deadline
// and the request answered, instead of holding the connection open.
func TestSlowBodyCutOff(t *testing.T) {
	t.Parallel()
	readErr := make(chan error, 1)
	addr := serve(t, 1<<20, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		w.WriteHeader(http.StatusBadRequest)
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers promise 100 bytes; one arrives, the rest never does.
	fmt.Fprintf(conn, "POST /ui/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nt")
	select {
	case err := <-readErr:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("reading a stalled body: %v, want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled body was still being read 20 s after a 200 ms deadline")
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
}

// TestDeadlineLiftedAfterBody: a handler that works past the deadline
// after reading its whole body is not cut off (its context lives on).
func TestDeadlineLiftedAfterBody(t *testing.T) {
	t.Parallel()
	addr := serve(t, 1<<20, 100*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(400 * time.Millisecond): // past the 100 ms deadline
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "done")
	})
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "done" {
		t.Errorf("POST then work past the deadline: %d %q, want 200 done", resp.StatusCode, body)
	}
}

// TestBodyCapped: a body over the cap is an error the handler can name,
// after at most the cap was read; MaxBytes lowers the cap for one route.
func TestBodyCapped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		routeMax int64
		size     int
		wantErr  bool
	}{
		{"at the cap", 0, 1 << 10, false},
		{"over the cap", 0, 1<<10 + 1, true},
		{"over a route's lower cap", 16, 17, true},
		{"within a route's lower cap", 16, 16, false},
	}
	for _, tt := range tests {
		got := make(chan error, 1)
		addr := serve(t, 1<<10, time.Minute, func(w http.ResponseWriter, r *http.Request) {
			if tt.routeMax > 0 {
				MaxBytes(w, r, tt.routeMax)
			}
			_, err := io.ReadAll(r.Body)
			got <- err
		})
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+"/", strings.NewReader(strings.Repeat("a", tt.size)))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if err := <-got; TooLarge(err) != tt.wantErr {
			t.Errorf("%s: read %d bytes: %v, want too large %v", tt.name, tt.size, err, tt.wantErr)
		}
	}
}
