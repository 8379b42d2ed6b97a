// Command agora-worker is the in-container entrypoint: it runs one dispatch
// (package worker) and exits with its code. `agora-worker ask` writes a
// needs_input sentinel for shell scripts. Only this file (and signals.go,
// for signals) reads the environment and signals; everything else takes a
// Config.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/claudecode"
	"github.com/agoradev/agora/adapters/exec"
	_ "github.com/agoradev/agora/internal/hugeheap/atstart" // huge pages for the heap, before the large package inits
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/worker"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// First thing: until the handler is in place a SIGTERM kills the worker
	// outright (the runner then reports the cancel it asked for itself).
	ctx, stop := cancelOnSignal(context.Background(), cancelMarkerFromEnv(os.Environ()), os.Stderr)
	if os.Getenv("GOGC") == "" {
		// A dispatch's start-up (package init, the JSON Schema library's
		// meta-schemas and the dispatch spec's compilation) allocates about
		// 4 MB, most of it kept: at the default the collector runs once in
		// every dispatch to free 1 MB, about 2 ms of CPU (docs/benchmarks.md).
		// The worker's heap stays a few MB, so a goal of 3× it costs little.
		debug.SetGCPercent(200)
	}
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it directly.
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "ask":
			return runAsk(args[1:], environ, stdin, stderr)
		case "egress-proxy":
			return runEgressProxy(ctx, environ, stdout, stderr)
		case "version", "--version":
			fmt.Fprintln(stdout, "agora-worker", version)
			return 0
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		default:
			fmt.Fprintf(stderr, "agora-worker: unknown command %q\n%s", args[0], usage)
			return 2
		}
	}
	// Nothing the sub-agent runs (as the same user) may read this process's
	// memory or environment, nor write to its files through /proc: that is
	// where the event key lives once its file is gone.
	if err := makeUndumpable(); err != nil {
		fmt.Fprintf(stderr, "agora-worker: %v\n", err)
	}
	environ, envErr := withWorkerEnv(environ)
	cfg := configFromEnv(environ)
	cfg.EnvProblems = errors.Join(cfg.EnvProblems, envErr)
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.Adapters = []adapters.Adapter{exec.New(), claudecode.New()}
	if exe, err := os.Executable(); err == nil {
		cfg.ExecutableDir = filepath.Dir(exe)
	}
	return worker.Run(ctx, cfg).ExitCode
}

// withWorkerEnv adds the operator's worker environment (AGORA_WORKER_ENV_FILE:
// KEY=VALUE entries, each ended by a NUL byte) to environ and deletes the
// file, before anything the sub-agent runs exists. The values live only in
// this process's memory, which is not dumpable; in the container's
// environment they would be in /proc/1/environ, readable by the sub-agent.
// A variable set in both keeps the container's value (the runner's wiring).
func withWorkerEnv(environ []string) ([]string, error) {
	var path string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, schemas.EnvWorkerEnvFile+"="); ok {
			path = v
		}
	}
	if path == "" {
		return environ, nil
	}
	data, err := os.ReadFile(path)
	if rmErr := os.Remove(path); err == nil && rmErr != nil {
		return environ, fmt.Errorf(schemas.EnvWorkerEnvFile+": remove %s (the sub-agent could read it): %w", path, rmErr)
	}
	if err != nil {
		return environ, fmt.Errorf(schemas.EnvWorkerEnvFile+": %w", err)
	}
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	out := slices.Clip(environ)
	for _, kv := range strings.Split(string(data), "\x00") {
		if kv == "" {
			continue
		}
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return environ, fmt.Errorf(schemas.EnvWorkerEnvFile+" %s: an entry is not KEY=VALUE", path)
		}
		if !set[name] {
			out = append(out, kv)
		}
	}
	return out, nil
}

const usage = `usage:
  agora-worker                 run the dispatch named by AGORA_DISPATCH_ID (see docs/contract.md)
  agora-worker ask QUESTION [--option A]... [--context TEXT] [--default ANSWER]
                   [--state FILE|-] [--workspace DIR]
                               write the needs_input sentinel and return; then exit your script
  agora-worker egress-proxy   relay to the hosts of AGORA_EGRESS_ALLOW only (the runner's
                               proxy of a dispatch with network egress; docs/runner.md)
  agora-worker version
`

// configFromEnv reads the worker's environment variables. Malformed values
// are collected into EnvProblems so the dispatch fails with an event that
// names them.
func configFromEnv(environ []string) worker.Config {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var problems []error
	seconds := func(name string) time.Duration {
		v := env[name]
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		d, fits := units.Seconds(n)
		if err != nil || n <= 0 || !fits {
			problems = append(problems, fmt.Errorf("%s=%q: want a whole number of seconds above 0 (at most %d)", name, v, int64(math.MaxInt64/time.Second)))
			return 0
		}
		return d
	}
	var disableHelper bool
	switch v := strings.ToLower(env[schemas.EnvDisableNeedsInputHelper]); v {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		disableHelper = true
	default:
		problems = append(problems, fmt.Errorf(schemas.EnvDisableNeedsInputHelper+"=%q: want true or false", v))
	}
	level := slog.LevelInfo
	if env[schemas.EnvLogLevel] == "debug" {
		level = slog.LevelDebug
	}
	// The worker's log lines are signed once it has the event key: the
	// runner then tells them from the sub-agent's output.
	logs := worker.NewLogWriter(os.Stderr)
	exchange, err := worker.ExchangeFromEnv(environ)
	problems = append(problems, err)
	count := func(name string) int64 {
		v := env[name]
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			problems = append(problems, fmt.Errorf("%s=%q: want a whole number above 0", name, v))
			return 0
		}
		return n
	}
	artifacts := worker.ArtifactLimits{Files: int(min(count(schemas.EnvMaxArtifacts), math.MaxInt32)), Bytes: count(schemas.EnvMaxArtifactsBytes)}
	return worker.Config{
		DispatchID:              env[schemas.EnvDispatchID],
		SpecFile:                env[schemas.EnvSpecFile],
		StorageURI:              env[schemas.EnvStorageURI],
		Workspace:               env[schemas.EnvWorkspace],
		NATSURL:                 env[schemas.EnvNATSURL],
		DisableNeedsInputHelper: disableHelper,
		SetupTimeout:            seconds(schemas.EnvSetupTimeoutSeconds),
		Grace:                   seconds(schemas.EnvGraceSeconds),
		PublishWindow:           seconds(schemas.EnvPublishWindowSeconds),
		SecretsDir:              env[schemas.EnvSecretsDir],
		EventKeyFile:            env[schemas.EnvEventKeyFile],
		NATSCredsFile:           env[schemas.EnvNATSCredsFile],
		SecretsTimeout:          seconds(schemas.EnvSecretsTimeoutSeconds),
		Exchange:                exchange,
		Artifacts:               artifacts,
		Environ:                 environ,
		Logger:                  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})),
		LogWriter:               logs,
		EnvProblems:             errors.Join(problems...),
	}
}
