// Command agora is the one CLI. Thin: flags → the packages. The verbs are
// a cobra tree (commands.go): each declares its flags once, on its cobra
// command, and returns its run; cobra parses them, and the help and the
// shell completion are made from the same declarations. The roles (serve,
// runner, orchestrator, demo) are wired by the composition root in
// internal/roles.
//
// Only this package reads flags, the environment and signals: main turns the
// first SIGINT or SIGTERM into a cancelled context for run (its cause names
// the signal), and a second one into an immediate exit (exitcode.HandleSignals).
// Everything else is run, which tests call directly.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
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
	go exitcode.HandleSignals(sigs, cancel, os.Stderr, os.Exit, time.Now)
	startProfiling()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
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
