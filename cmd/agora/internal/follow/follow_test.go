package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/wire"
)

// TestStop: how a wait a signal (or its caller) ended exits — the task
// left running with --detach-on-signal, else cancelled, or found never
// submitted or ended already — with 128 + the signal's number, or 1.
func TestStop(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		detach    bool
		sig       syscall.Signal // 0: cancelled by the caller
		status    int
		body      any
		wantCode  int
		wantMsg   string
		wantNotes string
	}{
		{name: "detached", detach: true, sig: syscall.SIGINT, wantCode: exitcode.Failed,
			wantMsg: "SIGINT: stopped waiting; task t-1 goes on ('agora status t-1' shows it, 'agora cancel t-1' stops it)"},
		{name: "cancelled on SIGTERM", sig: syscall.SIGTERM, status: http.StatusOK,
			body:     wire.Task{ID: "t-1", State: wire.StateCancelled, Outcome: &wire.Outcome{Detail: "cancelled by ci"}},
			wantCode: 143, wantMsg: "task t-1 cancelled (cancelled by ci); 'agora respawn t-1' runs it again",
			wantNotes: "agora dispatch: SIGTERM: cancelling task t-1 (--detach-on-signal would leave it running)\n"},
		{name: "never submitted", sig: syscall.SIGINT, status: http.StatusNotFound, body: wire.ErrorBody{Error: "task t-1: task not found", Code: wire.CodeNotFound},
			wantCode: 130, wantMsg: "interrupted before task t-1 was submitted; nothing runs",
			wantNotes: "agora dispatch: SIGINT: cancelling task t-1 (--detach-on-signal would leave it running)\n"},
		{name: "cancelled by the caller", status: http.StatusInternalServerError, body: wire.ErrorBody{Error: "boom", Code: wire.CodeInternal},
			wantCode: exitcode.Failed, wantMsg: "could not cancel task t-1 (boom); it may still run: 'agora cancel t-1' stops it",
			wantNotes: "agora dispatch: interrupted: cancelling task t-1 (--detach-on-signal would leave it running)\n"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			_ = json.NewEncoder(w).Encode(tt.body)
		}))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithCancelCause(context.Background())
		if tt.sig != 0 {
			cancel(exitcode.Interrupted{Sig: tt.sig})
		} else {
			cancel(nil)
		}
		var notes bytes.Buffer
		err := Stop(ctx, client.New(srv.URL, ""), Options{Server: srv.URL, Detach: tt.detach}, "t-1", &notes)
		var stderr bytes.Buffer
		code := exitcode.Verb(&stderr, "agora dispatch", err)
		if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantMsg) || notes.String() != tt.wantNotes {
			t.Errorf("%s: Stop = %d, %q, notes %q; want %d, %q, notes %q", tt.name, code, stderr.String(), notes.String(), tt.wantCode, tt.wantMsg, tt.wantNotes)
		}
	}
}
