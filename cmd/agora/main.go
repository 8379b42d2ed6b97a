// Command agora is the one CLI. Thin: flags → the packages. The verbs are
// registered in a cobra tree (commands.go), each declaring and parsing its
// own pflag set, so its help and completions come from the definitions it
// parses with; the roles (serve, runner, orchestrator, demo) are wired by
// the composition root in internal/roles.
//
// Only this package reads flags, the environment and signals: main turns the
// first SIGINT or SIGTERM into a cancelled context for run (its cause names
// the signal), and a second one into an immediate exit (handleSignals). Everything else is run, which
// tests call directly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// Every verb logs through the slog logger it is given. The standard
	// logger is only net/http's, whose "Unsolicited response … INFO
	// {server_id…}" would echo a NATS server's greeting past the one-line
	// error that explains it.
	log.SetOutput(io.Discard)
	// One registration and one reader for SIGINT and SIGTERM: the reader
	// cancels run's context with the signal as its cause, and ends the
	// process on a second one.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go handleSignals(sigs, cancel, os.Stderr, os.Exit, time.Now)
	startProfiling()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// sameSignalWindow is how soon after the first signal a repeat of the same
// signal still counts as that one. timeout(1) sends its signal to the
// command and then to the command's process group, so `timeout 8 agora
// dispatch … --wait` receives one TERM twice within microseconds (the Go
// runtime coalesces the two only when the second comes before the first
// is read); a person pressing ^C twice, or a CI runner following SIGINT
// with SIGTERM, is slower or sends another signal.
const sameSignalWindow = 500 * time.Millisecond

// interrupted is the cause of run's context when a signal cancelled it:
// verbs that can undo what they started (dispatch --wait cancels its task)
// read it with signalOf, and exit with its code.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// signalName is SIGINT or SIGTERM, as CI logs and kill(1) name them.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// signalExitCode is 128 + the signal's number, as a shell reports a process
// that a signal ended (130 for SIGINT, 143 for SIGTERM), which CI systems
// read as "cancelled"; 1 for a signal without a number.
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFailed
}

// signalOf is the signal that cancelled ctx, if one did.
func signalOf(ctx context.Context) (os.Signal, bool) {
	if e, ok := errors.AsType[interrupted](context.Cause(ctx)); ok {
		return e.sig, true
	}
	return nil, false
}

// handleSignals turns the first signal on sigs into a cancelled context
// (cancel, with the signal as the cause): `agora runner` and `serve` stop
// gracefully, `dispatch --wait` cancels its task. A repeat of the first
// signal within sameSignalWindow is the same signal delivered twice and is
// ignored; any other signal is a second one and ends the process at once
// with signalExitCode: the user's way out of a graceful stop that takes too
// long. It lives in main, not run, because only main owns the process: run
// stays testable with a plain cancellable context.
func handleSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, stderr io.Writer, exit func(int), now func() time.Time) {
	first := <-sigs
	at := now()
	cancel(interrupted{sig: first})
	for sig := range sigs {
		if sig == first && now().Sub(at) < sameSignalWindow {
			continue
		}
		fmt.Fprintf(stderr, "agora: second signal (%v): exiting now without waiting\n", sig)
		exit(signalExitCode(sig))
		return
	}
}

func runSchema(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		fmt.Fprintln(stdout, strings.Join(schemas.Names(), "\n"))
		return 0
	case 1:
		data, err := schemas.Schema(args[0])
		if err != nil {
			fmt.Fprintf(stderr, "agora schema: %v\n", err)
			return 2
		}
		stdout.Write(data)
		return 0
	}
	fmt.Fprintln(stderr, "agora schema: want at most one NAME")
	return 2
}

// runValidate checks FILE against schema NAME. The registry's kinds
// (subagent, capability, env) are read as register reads them — YAML or
// JSON, errors with the line and field — so validate accepts exactly what
// register accepts; the other schemas take JSON.
func runValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintf(stderr, "agora validate: want NAME FILE (schemas: %s)\n", strings.Join(schemas.Names(), ", "))
		return 2
	}
	name, file := args[0], args[1]
	if !slices.Contains(schemas.Names(), name) {
		fmt.Fprintf(stderr, "agora validate: unknown schema %q; want one of %s\n", name, strings.Join(schemas.Names(), ", "))
		return 2
	}
	kind := wire.Kind(name)
	isRegistry := slices.Contains(wire.Kinds, kind)
	var data []byte
	var err error
	switch {
	case file == "-":
		data, err = io.ReadAll(stdin)
	case isRegistry:
		data, err = registryfile.ReadFile(file)
	default:
		data, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agora validate: %v\n", err)
		return 2
	}
	if isRegistry {
		label := file
		if file == "-" {
			label = "stdin"
		}
		if _, err := registryfile.Parse(kind, label, data); err != nil {
			fmt.Fprintf(stderr, "agora validate: %v\n", err)
			return 1
		}
	} else if err := schemas.Validate(name, data); err != nil {
		fmt.Fprintf(stderr, "agora validate: %s: %v\n", file, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid %s\n", file, name)
	return 0
}
