// Command agora is the one CLI. Thin: flags → packages. It has the verbs
// integrators need from the contract (schema, validate), the worker image
// build (image build) and the Docker runner (runner); serve, dispatch,
// answer and the rest arrive with the orchestrator.
//
// Only this package reads flags, the environment and signals: main turns the
// first SIGINT or SIGTERM into a cancelled context for run, and a second one
// into an immediate exit (exitOnSecondSignal). Everything else is run, which
// tests call directly.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// Registered before NotifyContext's own channel, so no signal can slip
	// between the two: both see every SIGINT and SIGTERM.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go exitOnSecondSignal(sigs, os.Stderr, os.Exit)
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// exitOnSecondSignal gives the user a way out of a graceful stop that takes
// too long. The first signal on sigs only cancels run's context (main's
// signal.NotifyContext sees it too), so `agora runner` stops pulling work and
// leaves its containers to the next runner process; the second one ends the
// process at once with 128 + the signal number, as a shell reports a process
// killed by that signal. It lives in main, not run, because only main owns
// the process: run stays testable with a plain cancellable context.
func exitOnSecondSignal(sigs <-chan os.Signal, stderr io.Writer, exit func(int)) {
	<-sigs
	sig := <-sigs
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	fmt.Fprintf(stderr, "agora: second signal (%v): exiting now without waiting\n", sig)
	exit(code)
}

const usage = `usage: agora <command> [arguments]

commands:
  schema [NAME]     print a JSON Schema (dispatch-spec, event, needs-input, subagent, …);
                    without NAME, list them
  validate NAME FILE
                    validate FILE (or - for stdin) against schema NAME; a
                    subagent, capability or env file is read as register reads
                    it (YAML or JSON)
  image build [--worker PATH] [--base IMAGE] [--tag TAG] [--no-busybox] [--json]
                    build the worker image through the Docker API (nothing is
                    pulled); a build with unchanged inputs is skipped
  serve [--data-dir DIR] [--nats URL | --nats-port N] [--storage URI] [--listen ADDR]
        [--token NAME:SECRET[:ROLE]]... [--slots N] [--no-runner | --runner-only] [--image IMAGE]
                    everything in one process: orchestrator, HTTP API and /metrics,
                    runner, embedded NATS (JetStream in DIR, default
                    $AGORA_DATA_DIR, else ~/.agora);
                    the flags select the distributed roles
  runner --nats URL [--storage URI] [--data-dir DIR] [--slots N] [--image IMAGE]
         [--id ID] [--worker-nats URL] [--grace DURATION] [--log-cap BYTES]
                    run dispatch requests in containers on this Docker host
                    until SIGINT/SIGTERM (a second signal exits at once)
  orchestrator --nats URL [--storage URI] [--listen ADDR] [--token NAME:SECRET[:ROLE]]...
         [--rules FILE] [--webhook-secret S]
                    keep tasks, route questions to answerers, re-dispatch with
                    the answer; serves the HTTP API (default 127.0.0.1:7070)
  subagent|capability|env register FILE | list | show NAME[@VERSION] [--versions]
                    the registry: register a YAML or JSON file (content-addressed:
                    the same content is the same version), list the latest
                    versions, show one or every version
  secret set NAME [--from-file F] | list | rm NAME... [--data-dir DIR | --secrets-dir DIR]
                    the local secret store that local: refs in env bundles name
                    (the value comes from stdin or a file, never an argument)
  dispatch --subagent NAME[@VERSION] | --subagent-file FILE | --command "CMD"
         [--name N] [--input JSON|@FILE]
         [--route R] [--task-id ID] [--timeout S] [--allow-memory] [--wait]
                    submit a task; --wait shows its progress and exits 0
                    finished, 1 failed, 3 expired or cancelled
  status [TASK]     what every task needs and the exact next command; with
                    TASK, its timeline
  questions [--group]
                    the open questions, oldest first, with the answer command;
                    --group: one row per identical question of a batch
  answer TASK ANSWER [--round N | --all-like] [--by NAME]
                    answer a task's question (an option or its number);
                    --all-like also every open question identical to it
  watch [TASK]      the tasks, live, until interrupted
  logs TASK [--round N] [-f] [--worker]
                    a round's output (what the sub-agent printed; --worker also
                    the worker's event lines); -f follows a running round
  cancel TASK       stop a queued, running or waiting task
  respawn TASK      run a failed, cancelled or expired task's last round again
  continue TASK MESSAGE
                    a new round of a finished task, with a follow-up message
  rm TASK           remove a task and its stored output
  events parked     lifecycle events the orchestrator could not apply, with the
                    error; events retry SEQ applies one again, events discard SEQ
                    drops it
  batch submit FILE.jsonl [--batch ID] [--route R]
                    submit a task per line (idempotent: run it again to retry
                    the failed lines); batch status ID: counts and questions
                    (the task verbs take --server URL, default $AGORA_SERVER
                    or http://127.0.0.1:7070, --token, default $AGORA_TOKEN,
                    and --json for scripts)
  demo [--answer ANSWER] [--busybox PATH]
                    see the whole loop on the embedded stack: a sub-agent asks,
                    you answer (no terminal: the question's default), the same
                    sub-agent resumes and finishes
  version [--json]  print the version

exit codes (every command):
  0  done (dispatch --wait: the task finished)
  1  the work failed (dispatch --wait: the task failed), or the server could not
     be reached or refused the request for another reason than its input
  2  a usage error or bad input, found by the CLI or refused by the server
     (HTTP 400/422 "invalid"): nothing was changed
  3  the task expired or was cancelled (dispatch --wait)

Run 'agora <command> -h' for a command's flags.
`

// run is main without the process: tests call it directly. environ is the
// environment as os.Environ gives it. It returns the exit code: 0, 1 for a
// failure, 2 for a usage error.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "schema":
		return runSchema(args[1:], stdout, stderr)
	case "validate":
		return runValidate(args[1:], os.Stdin, stdout, stderr)
	case "image":
		return runImage(ctx, args[1:], environ, stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], environ, stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], environ, os.Stdin, stdout, stderr)
	case "orchestrator":
		return runOrchestrator(ctx, args[1:], environ, stdout, stderr)
	case "runner":
		return runRunner(ctx, args[1:], environ, stdout, stderr)
	case "dispatch":
		return runDispatch(ctx, args[1:], environ, stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], environ, stdout, stderr)
	case "questions":
		return runQuestions(ctx, args[1:], environ, stdout, stderr)
	case "answer":
		return runAnswer(ctx, args[1:], environ, stdout, stderr)
	case "watch":
		return runWatch(ctx, args[1:], environ, stdout, stderr)
	case "logs":
		return runLogs(ctx, args[1:], environ, stdout, stderr)
	case "cancel":
		return runCancel(ctx, args[1:], environ, stdout, stderr)
	case "respawn":
		return runRespawn(ctx, args[1:], environ, stdout, stderr)
	case "continue":
		return runContinue(ctx, args[1:], environ, stdout, stderr)
	case "rm":
		return runRemove(ctx, args[1:], environ, stdout, stderr)
	case "events":
		return runEvents(ctx, args[1:], environ, stdout, stderr)
	case "batch":
		return runBatch(ctx, args[1:], environ, stdout, stderr)
	case "secret":
		return runSecret(args[1:], environ, os.Stdin, stdout, stderr)
	case "subagent", "capability", "env":
		return runRegistry(ctx, args[0], args[1:], environ, stdout, stderr)
	case "version", "--version":
		switch {
		case len(args) == 2 && args[1] == "--json":
			_ = writeJSON(stdout, map[string]string{"version": version, "go": runtime.Version()})
		case len(args) > 1:
			return exitCode(stderr, "agora version", usagef("unexpected argument %q; the only flag is --json", args[1]))
		default:
			fmt.Fprintln(stdout, "agora", version)
		}
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "agora: unknown command %q; run 'agora help' for the list\n", args[0])
	return 2
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
	kind := registry.Kind(name)
	isRegistry := slices.Contains(registry.Kinds, kind)
	var data []byte
	var err error
	switch {
	case file == "-":
		data, err = io.ReadAll(stdin)
	case isRegistry:
		data, err = registry.ReadFile(file)
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
		if _, err := parseRegistryFile(kind, label, data); err != nil {
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
