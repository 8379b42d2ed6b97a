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

func runServe(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora serve", serveMain(ctx, args, environ, stdout, stderr))
}

// parseRole reads and checks the command line of the role verb v into the
// roles' configuration without touching anything outside the process, so
// every mistake is reported before starting. The flags are roleflags',
// declared once for every role verb; extra declares the verb's own.
func parseRole(v roleflags.Verb, args, environ []string, stdout io.Writer, extra func(*flag.FlagSet)) (roles.Config, error) {
	fs := flag.NewFlagSet(v.String(), flag.ContinueOnError)
	synopsis := "" // the usage line names the required flags; all are listed from their declarations
	if v == roleflags.Runner || v == roleflags.Orchestrator {
		synopsis = "--nats URL"
	}
	rf := roleflags.Register(fs, v)
	if extra != nil {
		extra(fs)
	}
	if err := parseFlags(fs, synopsis, args, stdout); err != nil {
		return roles.Config{}, err
	}
	cfg, err := rf.Config(environ)
	if err != nil {
		return cfg, usagef("%v", err)
	}
	return cfg, nil
}

func parseServeFlags(args, environ []string, stdout io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Serve, args, environ, stdout, nil)
}

// serveMain runs the stack until ctx is done (the first SIGINT or SIGTERM),
// then stops it gracefully: running containers keep running and the next
// `agora serve` on the data dir adopts them.
func serveMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, environ, stdout)
	if err != nil {
		return err
	}
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
