package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestTerminal(t *testing.T) {
	t.Parallel()
	want := map[State]bool{StateQueued: false, StateRunning: false, StateNeedsInput: false,
		StateFinished: true, StateFailed: true, StateCancelled: true, StateExpired: true}
	for _, s := range States {
		if s.Terminal() != want[s] {
			t.Errorf("%s.Terminal() = %v, want %v", s, s.Terminal(), want[s])
		}
	}
	if len(States) != len(want) {
		t.Errorf("States has %d states, want %d", len(States), len(want))
	}
}

// Every sentinel has a code that maps back to it, also when wrapped, and
// codes without a sentinel map to nil.
func TestSentinelCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		code   Code
		status int
	}{
		{ErrNotFound, CodeNotFound, http.StatusNotFound},
		{ErrConflict, CodeConflict, http.StatusConflict},
		{ErrAlreadyAnswered, CodeAlreadyAnswered, http.StatusConflict},
		{ErrNoQuestion, CodeNoQuestion, http.StatusConflict},
		{ErrInvalidAnswer, CodeInvalidAnswer, http.StatusUnprocessableEntity},
		{ErrInvalidRequest, CodeInvalid, http.StatusUnprocessableEntity},
		{ErrWrongState, CodeWrongState, http.StatusConflict},
		{&PageError{Param: "limit", Reason: "too big"}, CodeInvalid, http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		code, status, ok := SentinelCode(fmt.Errorf("task t-1: %w", tt.err))
		if !ok || code != tt.code || status != tt.status {
			t.Errorf("SentinelCode(%v) = %s %d %v, want %s %d", tt.err, code, status, ok, tt.code, tt.status)
		}
		if !errors.Is(tt.err, code.Sentinel()) {
			t.Errorf("%s.Sentinel() = %v, want %v", code, code.Sentinel(), tt.err)
		}
	}
	for _, c := range []Code{CodeUnauthorized, CodeNoRoute, CodeInternal, "from_the_future"} {
		if c.Sentinel() != nil {
			t.Errorf("%s.Sentinel() = %v, want nil", c, c.Sentinel())
		}
	}
	if _, _, ok := SentinelCode(errors.New("disk full")); ok {
		t.Error("SentinelCode of a plain error: ok, want none")
	}
}

// A command is a list of arguments or one string run by the shell.
func TestCommandJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{`["echo","hi"]`, []string{"echo", "hi"}},
		{`"echo hi"`, []string{"/bin/sh", "-c", "echo hi"}},
	}
	for _, tt := range tests {
		var c Command
		if err := json.Unmarshal([]byte(tt.in), &c); err != nil {
			t.Fatalf("unmarshal %s: %v", tt.in, err)
		}
		if fmt.Sprint([]string(c)) != fmt.Sprint(tt.want) {
			t.Errorf("%s → %q, want %q", tt.in, c, tt.want)
		}
	}
	var c Command
	if err := json.Unmarshal([]byte(`42`), &c); err == nil {
		t.Error("a number as a command: no error")
	}
}
