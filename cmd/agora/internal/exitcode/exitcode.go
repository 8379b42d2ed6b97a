// Package exitcode is the CLI's exit codes and the errors that choose them:
// a usage error (2), an outcome a verb chose with its own line, the help
// printed on request (0), and how a signal ends the process: the first
// cancels run's context with the signal as its cause, a second exits at
// once with 128 + its number. It also writes the one line of stderr that
// goes with a code.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/cliconfig"
)

// The exit codes of every verb (the table is in the README and agora help).
const (
	OK     = 0 // done
	Failed = 1 // the work failed, or the server refused or could not be reached
	Usage  = 2 // a usage error or bad input: nothing was changed
	Ended  = 3 // the task expired or was cancelled
)

// UsageError is a mistake in the command line or bad input: exit code 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Outcome is an exit code a verb chose, with an optional one-line message.
type Outcome struct {
	Code int
	Msg  string
}

func (o Outcome) Error() string { return o.Msg }

// Print writes err as one line prefixed with the command and returns 2 for
// a usage error, 1 for anything else (0 for nil).
func Print(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return OK
	}
	// errors.Join and friends use newlines; one line is easier to grep.
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	fmt.Fprintf(stderr, "%s: %s\n", cmd, msg)
	if errors.As(err, new(UsageError)) || errors.Is(err, cliconfig.ErrUsage) {
		return Usage
	}
	return Failed
}

// Verb is Print that also honours an Outcome: its message, if any, and its
// code.
func Verb(stderr io.Writer, name string, err error) int {
	if o, ok := errors.AsType[Outcome](err); ok {
		if o.Msg != "" {
			fmt.Fprintf(stderr, "%s: %s\n", name, o.Msg)
		}
		return o.Code
	}
	return Print(stderr, name, err)
}

// Signal is 128 + the signal's number, as a shell reports a process that a
// signal ended (130 for SIGINT, 143 for SIGTERM), which CI systems read as
// "cancelled"; 1 for a signal without a number.
func Signal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return Failed
}

// SignalName is SIGINT or SIGTERM, as CI logs and kill(1) name them.
func SignalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Interrupted is the cause of run's context when a signal cancelled it:
// verbs that can undo what they started (dispatch --wait cancels its task)
// read it with SignalOf, and exit with its code.
type Interrupted struct{ Sig os.Signal }

func (e Interrupted) Error() string { return "interrupted by " + SignalName(e.Sig) }

// SignalOf is the signal that cancelled ctx, if one did.
func SignalOf(ctx context.Context) (os.Signal, bool) {
	if e, ok := errors.AsType[Interrupted](context.Cause(ctx)); ok {
		return e.Sig, true
	}
	return nil, false
}

// SameSignalWindow is how soon after the first signal a repeat of the same
// signal still counts as that one. timeout(1) sends its signal to the
// command and then to the command's process group, so `timeout 8 agora
// dispatch … --wait` receives one TERM twice within microseconds (the Go
// runtime coalesces the two only when the second comes before the first
// is read); a person pressing ^C twice, or a CI runner following SIGINT
// with SIGTERM, is slower or sends another signal.
const SameSignalWindow = 500 * time.Millisecond

// HandleSignals turns the first signal on sigs into a cancelled context
// (cancel, with the signal as the cause): `agora runner` and `serve` stop
// gracefully, `dispatch --wait` cancels its task. A repeat of the first
// signal within SameSignalWindow is the same signal delivered twice and is
// ignored; any other signal is a second one and ends the process at once
// with Signal: the user's way out of a graceful stop that takes too
// long. Only main calls it, because only main owns the process: run stays
// testable with a plain cancellable context.
func HandleSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, stderr io.Writer, exit func(int), now func() time.Time) {
	first := <-sigs
	at := now()
	cancel(Interrupted{Sig: first})
	for sig := range sigs {
		if sig == first && now().Sub(at) < SameSignalWindow {
			continue
		}
		fmt.Fprintf(stderr, "agora: second signal (%v): exiting now without waiting\n", sig)
		exit(Signal(sig))
		return
	}
}
