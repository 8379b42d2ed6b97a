package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
)

// TestEgressProxyRefusesBadLists: the proxy does not start on a list it
// cannot hold; the runner never sends one, but a hand-run proxy says why.
func TestEgressProxyRefusesBadLists(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ allow, want string }{
		{"", "AGORA_EGRESS_ALLOW is empty"},
		{"api.anthropic.com,10.0.0.1", `egress entry "10.0.0.1" is an IP address`},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"egress-proxy"}, []string{"AGORA_EGRESS_ALLOW=" + tc.allow, "AGORA_EGRESS_LISTEN=127.0.0.1:0"}, strings.NewReader(""), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("egress-proxy with %q = %d, %q; want 2 saying %q", tc.allow, code, stderr.String(), tc.want)
		}
	}
}

// TestEgressProxyServes: `agora-worker egress-proxy` listens where it is
// told, denies what its list does not name with a decision line on
// stdout, and stops when its context ends.
func TestEgressProxyServes(t *testing.T) {
	t.Parallel()
	port := testutil.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &testutil.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"egress-proxy"}, []string{"AGORA_DISPATCH_ID=d-7", "AGORA_EGRESS_ALLOW=api.anthropic.com", "AGORA_EGRESS_LISTEN=" + addr}, strings.NewReader(""), stdout, io.Discard)
	}()
	var conn net.Conn
	testutil.Eventually(t, 10*time.Second, "the proxy to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		conn = c
		return err == nil
	})
	fmt.Fprintf(conn, "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT evil.example:443 = %d, want 403", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("egress-proxy exit code = %d, want 0 after its context ended", code)
	}
	if got := stdout.String(); !strings.Contains(got, `"egress":"denied","dispatch_id":"d-7","method":"CONNECT","host":"evil.example","port":443,"reason":"not-listed"`) {
		t.Errorf("stdout = %q, want the denial as a JSON line", got)
	}
}
