package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roleflags"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

// stopTimeout bounds the graceful stop after the first signal. Stopping does
// not wait for containers (they keep running and the next runner process
// adopts them), only for the roles' own goroutines to let go of them.
const stopTimeout = time.Minute

// roleConfig declares the flags of the role verb v on fs: roleflags',
// declared once for every role verb. Its func reads the checked command
// line into the roles' configuration without touching anything outside
// the process, so every mistake is reported before starting.
func roleConfig(v roleflags.Verb, fs *flag.FlagSet) func(args, environ []string) (roles.Config, error) {
	rf := roleflags.Register(fs, v)
	return func(args, environ []string) (roles.Config, error) {
		if len(args) > 0 {
			return roles.Config{}, usagef("unexpected argument %q; run '%s -h' for the flags", args[0], v)
		}
		cfg, err := rf.Config(environ)
		if err != nil {
			return cfg, usagef("%v", err)
		}
		return cfg, nil
	}
}

// roleVerb is a role verb without flags of its own: v's, and main run
// with the configuration they make.
func roleVerb(v roleflags.Verb, main func(ctx context.Context, cfg roles.Config, environ []string, stdout, stderr io.Writer) error) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		config := roleConfig(v, fs)
		return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
			cfg, err := config(args, environ)
			if err != nil {
				return err
			}
			return main(ctx, cfg, environ, stdout, stderr)
		}
	}
}

var (
	serveVerb        = roleVerb(roleflags.Serve, serveMain)
	runnerVerb       = roleVerb(roleflags.Runner, runnerMain)
	orchestratorVerb = roleVerb(roleflags.Orchestrator, orchestratorMain)
)

// serveMain runs the stack until ctx is done (the first SIGINT or SIGTERM),
// then stops it gracefully: running containers keep running and the next
// `agora serve` on the data dir adopts them.
func serveMain(ctx context.Context, cfg roles.Config, environ []string, stdout, stderr io.Writer) error {
	var err error
	if cfg.Runner && cfg.Image == "" {
		// Before connecting: a missing binary is the likeliest mistake.
		orFlag := "--image IMAGE, --worker PATH or --no-runner"
		if cfg.WorkerBinary != "" {
			orFlag = "--worker"
		}
		if cfg.WorkerBinary, err = roles.WorkerBinary(cfg.WorkerBinary, orFlag); err != nil {
			return err
		}
	}
	log := newLogger(stderr)
	cfg.Logger = log
	cfg.WrapHTTP = apiCheck(environ, stderr)
	s, err := roles.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Orchestrator {
		fmt.Fprintf(stdout, "agora serve: API on %s (metrics at /metrics)\n", s.URL())
	} else {
		fmt.Fprintf(stdout, "agora serve: metrics on %s/metrics\n", s.URL())
	}
	if sc := cfg.Slack; sc != nil && cfg.Orchestrator {
		if sc.SocketMode {
			fmt.Fprintf(stdout, "agora serve: Slack interactions over Socket Mode\n")
		} else {
			fmt.Fprintf(stdout, "agora serve: Slack interactions at %s%s\n", s.URL(), roles.SlackPath)
		}
	}
	if cfg.NATSURL == "" {
		fmt.Fprintf(stdout, "agora serve: NATS on %s (embedded, JetStream in %s, credentials in %s)\n", s.NATSURL(), filepath.Join(cfg.DataDir, "nats"), s.NATSCredsDir())
	} else {
		fmt.Fprintf(stdout, "agora serve: NATS on %s\n", s.NATSURL())
	}
	if r := s.Runner(); r != nil {
		fmt.Fprintf(stdout, "agora serve: runner %s with %d slots\n", s.RunnerID(), s.Config().Slots)
	}
	return runUntilDone(ctx, s, log, "the next agora serve on this data dir adopts them")
}

// runUntilDone lets s run until ctx is done (the first SIGINT or SIGTERM)
// or s fails, then stops it gracefully within stopTimeout. adopt, when
// set, says who adopts the running containers, in the stop's log line.
func runUntilDone(ctx context.Context, s *roles.Stack, log *slog.Logger, adopt string) error {
	select {
	case <-ctx.Done():
		if adopt != "" {
			log.Info("stopping: running containers keep running and "+adopt+" (signal again to exit at once)",
				slog.String("cause", context.Cause(ctx).Error()))
		}
	case <-s.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return errors.Join(s.Err(), s.Stop(stopCtx))
}
