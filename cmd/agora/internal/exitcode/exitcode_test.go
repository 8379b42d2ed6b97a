package exitcode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/agoradev/agora/cmd/agora/internal/cliconfig"
)

func TestVerb(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		err        error
		wantCode   int
		wantStderr string
	}{
		{"nil", nil, OK, ""},
		{"usage", Usagef("want %s", "TASK"), Usage, "agora x: want TASK\n"},
		{"wrapped usage", fmt.Errorf("read: %w", UsageError{Msg: "bad"}), Usage, "agora x: read: bad\n"},
		{"config usage", fmt.Errorf("ctx: %w", cliconfig.ErrUsage), Usage, "agora x: ctx: " + cliconfig.ErrUsage.Error() + "\n"},
		{"failure on one line", errors.Join(errors.New("a"), errors.New("b\n  c")), Failed, "agora x: a; b; c\n"},
		{"outcome", Outcome{Code: Ended, Msg: "task t-1 expired"}, Ended, "agora x: task t-1 expired\n"},
		{"silent outcome", Outcome{Code: Failed}, Failed, ""},
	} {
		var b bytes.Buffer
		if got := Verb(&b, "agora x", tt.err); got != tt.wantCode || b.String() != tt.wantStderr {
			t.Errorf("%s: Verb(%v) = %d, %q; want %d, %q", tt.name, tt.err, got, b.String(), tt.wantCode, tt.wantStderr)
		}
	}
}

func TestSignal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sig      os.Signal
		code     int
		wantName string
	}{
		{syscall.SIGINT, 130, "SIGINT"},
		{syscall.SIGTERM, 143, "SIGTERM"},
		{os.Interrupt, 130, "SIGINT"},
		{syscall.SIGHUP, 129, "hangup"},
	} {
		if got := Signal(tt.sig); got != tt.code {
			t.Errorf("Signal(%v) = %d, want %d", tt.sig, got, tt.code)
		}
		if got := SignalName(tt.sig); got != tt.wantName {
			t.Errorf("SignalName(%v) = %q, want %q", tt.sig, got, tt.wantName)
		}
	}
}
