package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealth: agora health exits 0 against a server whose /healthz says
// ok, 1 with one line naming the reason otherwise; it finds the server
// from --server, $AGORA_SERVER or the listener $AGORA_LISTEN names.
func TestHealth(t *testing.T) {
	t.Parallel()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("Authorization") != "" {
			http.Error(w, `{"error":"unexpected request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(ok.Close)
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"starting"}`))
	}))
	t.Cleanup(sick.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, okPort, _ := net.SplitHostPort(strings.TrimPrefix(ok.URL, "http://"))

	for _, tc := range []struct {
		name       string
		args, env  []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "--server", args: []string{"--server", ok.URL}, wantCode: exitOK, wantStdout: "ok\n"},
		{name: "AGORA_SERVER", env: []string{"AGORA_SERVER=" + ok.URL}, wantCode: exitOK, wantStdout: "ok\n"},
		{name: "AGORA_LISTEN on every interface", env: []string{"AGORA_LISTEN=0.0.0.0:" + okPort}, wantCode: exitOK, wantStdout: "ok\n"},
		{name: "AGORA_LISTEN without a host", env: []string{"AGORA_LISTEN=:" + okPort}, wantCode: exitOK, wantStdout: "ok\n"},
		{name: "--server wins over AGORA_LISTEN", args: []string{"--server", ok.URL}, env: []string{"AGORA_LISTEN=" + closed}, wantCode: exitOK, wantStdout: "ok\n"},
		{name: "--json", args: []string{"--server", ok.URL, "--json"}, wantCode: exitOK, wantStdout: `"status": "ok"`},
		{name: "nothing listening", args: []string{"--server", "http://" + closed}, wantCode: exitFailed,
			wantStderr: "agora health: cannot reach the agora server at http://" + closed},
		{name: "not ok", args: []string{"--server", sick.URL}, wantCode: exitFailed, wantStderr: `status "starting", want "ok"`},
		{name: "bad AGORA_LISTEN", env: []string{"AGORA_LISTEN=7070"}, wantCode: exitUsage, wantStderr: `AGORA_LISTEN "7070"`},
		{name: "an argument", args: []string{"now"}, wantCode: exitUsage, wantStderr: `unexpected argument "now"`},
		{name: "a zero timeout", args: []string{"--timeout", "0s"}, wantCode: exitUsage, wantStderr: "--timeout 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			env := append([]string{"HOME=" + t.TempDir()}, tc.env...)
			code := run(context.Background(), append([]string{"health"}, tc.args...), env, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("agora health %v = exit %d, want %d (stderr %q)", tc.args, code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) || strings.Count(stderr.String(), "\n") > 1 {
				t.Errorf("stderr = %q, want one line containing %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// TestServeListenFromEnv: $AGORA_LISTEN is serve's --listen default (the
// serve image sets it); the flag wins.
func TestServeListenFromEnv(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir(), "AGORA_LISTEN=127.0.0.1:7171"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:7171"},
		{[]string{"--listen", "127.0.0.1:7272"}, "127.0.0.1:7272"},
	} {
		s, err := parseServeFlags(tc.args, env, &bytes.Buffer{})
		if err != nil || s.Listen != tc.want {
			t.Errorf("parseServeFlags(%v) with %v = listen %q, %v; want %q", tc.args, env, s.Listen, err, tc.want)
		}
	}
}
