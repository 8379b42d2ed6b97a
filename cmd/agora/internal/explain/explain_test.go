package explain

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/wire"
)

func TestServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		flag, env, want, wantErr string
	}{
		{want: DefaultServer},
		{env: "agora.example.com:7070/", want: "http://agora.example.com:7070"},
		{flag: "https://a.example.com/", env: "http://b", want: "https://a.example.com"},
		{flag: "ftp://x", wantErr: `--server "ftp://x": want the agora server's URL, e.g. ` + DefaultServer},
		{env: "http://", wantErr: `AGORA_SERVER "http://": want the agora server's URL`},
	} {
		got, err := Server(tt.flag, tt.env)
		switch {
		case tt.wantErr != "":
			if !errors.As(err, new(exitcode.UsageError)) || len(err.Error()) < len(tt.wantErr) || err.Error()[:len(tt.wantErr)] != tt.wantErr {
				t.Errorf("Server(%q, %q) = %q, %v; want the usage error %q", tt.flag, tt.env, got, err, tt.wantErr)
			}
		case err != nil || got != tt.want:
			t.Errorf("Server(%q, %q) = %q, %v; want %q", tt.flag, tt.env, got, err, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	const srv = "http://s"
	apiErr := func(code wire.Code, msg string) error {
		return fmt.Errorf("call: %w", &client.Error{Code: string(code), Message: msg})
	}
	for _, tt := range []struct {
		name, token, task string
		err               error
		want              string
		usage             bool
	}{
		{name: "nil"},
		{name: "interrupted", err: context.Canceled, want: "interrupted"},
		{name: "no task", err: apiErr(wire.CodeNotFound, "task t-1: task not found"), task: "t-1",
			want: "no task t-1 on http://s; 'agora status' lists the tasks"},
		{name: "token with its name", token: "ci:s3cret", err: apiErr(wire.CodeUnauthorized, "bad token"),
			want: `the agora server at http://s refused the token (bad token): a client sends only the SECRET of the server's --token NAME:SECRET, so if "ci:" is the token's name, drop it`},
		{name: "no token", err: apiErr(wire.CodeUnauthorized, "token required"),
			want: "the agora server at http://s refused the request (token required); pass --token or set AGORA_TOKEN"},
		{name: "not the API", err: apiErr("", "<html>"), want: "http://s does not answer like an agora server (<html>); check --server or AGORA_SERVER"},
		{name: "invalid", err: apiErr(wire.CodeInvalid, wire.ErrInvalidRequest.Error()+": --x is bad"), want: "--x is bad", usage: true},
		{name: "wrong state", err: apiErr(wire.CodeWrongState, "task t-1 is finished already: "+wire.ErrWrongState.Error()), want: "task t-1 is finished already"},
		{name: "other", err: errors.New("boom"), want: "boom"},
	} {
		got := Error(srv, tt.token, tt.err, tt.task)
		if tt.want == "" {
			if got != nil {
				t.Errorf("%s: Error = %v, want nil", tt.name, got)
			}
			continue
		}
		if got == nil || got.Error() != tt.want || errors.As(got, new(exitcode.UsageError)) != tt.usage {
			t.Errorf("%s: Error = %v, want %q (usage %t)", tt.name, got, tt.want, tt.usage)
		}
	}
	if got := Cancel(srv, "", context.DeadlineExceeded, "t-1", 5*time.Second); got.Error() != "no answer from http://s within 5s" {
		t.Errorf("Cancel after its deadline = %v", got)
	}
	if got := Registry(srv, "", apiErr(wire.CodeNotFound, "sub-agent x not found")); got.Error() != "sub-agent x not found" {
		t.Errorf("Registry not found = %v", got)
	}
}
