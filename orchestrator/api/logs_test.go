package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

func TestHandler_Logs(t *testing.T) {
	t.Parallel()
	type call struct {
		round  int
		follow bool
	}
	tests := []struct {
		name       string
		target     string
		logs       func(w io.Writer) error
		want       *call // the service call; nil: none
		wantStatus int
		wantBody   string
		wantType   string
	}{
		{name: "current round", target: "/v1/tasks/t-1/logs", want: &call{},
			logs:       func(w io.Writer) error { _, err := io.WriteString(w, "hello\nworld\n"); return err },
			wantStatus: 200, wantBody: "hello\nworld\n", wantType: "text/plain; charset=utf-8"},
		{name: "a round, followed", target: "/v1/tasks/t-1/logs?round=2&follow=1", want: &call{round: 2, follow: true},
			logs:       func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err },
			wantStatus: 200, wantBody: "x", wantType: "text/plain; charset=utf-8"},
		{name: "no output", target: "/v1/tasks/t-1/logs?follow=0", want: &call{},
			logs:       func(io.Writer) error { return nil },
			wantStatus: 200, wantBody: "", wantType: "text/plain; charset=utf-8"},
		{name: "unknown task", target: "/v1/tasks/t-1/logs", want: &call{},
			logs:       func(io.Writer) error { return fmt.Errorf("task t-1: %w", wire.ErrNotFound) },
			wantStatus: 404, wantBody: `"code":"not_found"`, wantType: "application/json"},
		{name: "running round without follow", target: "/v1/tasks/t-1/logs", want: &call{},
			logs: func(io.Writer) error {
				return fmt.Errorf("task t-1 round 1 is running: %w", wire.ErrWrongState)
			},
			wantStatus: 409, wantBody: `"code":"wrong_state"`, wantType: "application/json"},
		{name: "round not a number", target: "/v1/tasks/t-1/logs?round=two", wantStatus: 400,
			wantBody: `query: round \"two\"; want a round number`, wantType: "application/json"},
		{name: "round zero", target: "/v1/tasks/t-1/logs?round=0", wantStatus: 400, wantBody: `"code":"invalid"`},
		{name: "follow not a flag", target: "/v1/tasks/t-1/logs?follow=yes", wantStatus: 400, wantBody: `query: follow \"yes\"; want 1 or 0`},
		{name: "round twice", target: "/v1/tasks/t-1/logs?round=1&round=2", wantStatus: 400, wantBody: "round given 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got *call
			svc := &apitest.Service{LogsFunc: func(_ context.Context, id string, round int, follow bool, w io.Writer) error {
				if id != "t-1" {
					t.Errorf("Logs(%q), want t-1", id)
				}
				got = &call{round, follow}
				return tt.logs(w)
			}}
			rec := serve(newHandler(t, svc), "GET", tt.target, "")
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tt.target, rec.Code, rec.Body.String(), tt.wantStatus, tt.wantBody)
			}
			if tt.wantBody == "" && rec.Body.Len() != 0 {
				t.Errorf("GET %s body = %q, want none", tt.target, rec.Body.String())
			}
			if tt.wantType != "" && rec.Header().Get("Content-Type") != tt.wantType {
				t.Errorf("GET %s Content-Type = %q, want %q", tt.target, rec.Header().Get("Content-Type"), tt.wantType)
			}
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("GET %s called Logs(%+v), want no call", tt.target, *got)
			case tt.want != nil && (got == nil || *got != *tt.want):
				t.Errorf("GET %s called Logs with %+v, want %+v", tt.target, got, *tt.want)
			}
		})
	}
}

// TestHandler_LogsStream: over a real connection, a followed round's
// headers go out while it is still silent, each chunk arrives as the
// service writes it, and an error after the output began comes in the
// trailer.
func TestHandler_LogsStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	svc := &apitest.Service{LogsFunc: func(ctx context.Context, _ string, _ int, follow bool, w io.Writer) error {
		if !follow {
			_, _ = io.WriteString(w, "partial")
			return fmt.Errorf("read output: %w", context.DeadlineExceeded)
		}
		select { // silent until released: the headers must go out anyway
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := io.WriteString(w, "line 1\n"); err != nil {
			return err
		}
		<-ctx.Done() // the client has what it waits for and goes away
		return ctx.Err()
	}}
	srv := httptest.NewServer(newHandler(t, svc))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/tasks/t-1/logs?follow=1", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET logs?follow=1 before any output: %v", err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET logs?follow=1 = %d %s, want 200 text/plain", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	close(release)
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(resp.Body, buf, len("line 1\n"))
	if err != nil || string(buf[:n]) != "line 1\n" {
		t.Errorf("first chunk = %q, %v; want %q while the stream stays open", buf[:n], err, "line 1\n")
	}
	cancel()
	resp.Body.Close()

	resp, err = srv.Client().Get(srv.URL + "/v1/tasks/t-1/logs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var trailer wire.ErrorBody
	if err := json.Unmarshal([]byte(resp.Trailer.Get(wire.TrailerError)), &trailer); err != nil || trailer.Code != wire.CodeInternal ||
		!strings.Contains(trailer.Error, "read output") || string(body) != "partial" {
		t.Errorf("a stream failing after its output = body %q, trailer %q; want %q and an internal error in %s",
			body, resp.Trailer.Get(wire.TrailerError), "partial", wire.TrailerError)
	}
}
