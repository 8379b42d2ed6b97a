package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agoradev/agora/cmd/agora/internal/roleflags"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

func runRunner(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora runner", runnerMain(ctx, args, environ, stdout, stderr))
}

func parseRunnerFlags(args, environ []string, stdout io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Runner, args, environ, stdout, nil)
}

// runnerMain runs one runner until ctx is done, then stops it gracefully:
// its containers keep running for the next runner process with the same id.
// It is the roles package with the runner role only, so it gets the same
// defaults (runner id, Docker check, metrics) as agora serve.
func runnerMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cfg, err := parseRunnerFlags(args, environ, stdout)
	if err != nil {
		return err
	}
	if cfg.Image == "" && cfg.ECS == nil {
		// Before connecting: a missing binary is the likeliest mistake.
		if _, err = roles.WorkerBinary("", "--image IMAGE"); err != nil {
			return err
		}
	}
	log := newLogger(stderr)
	cfg.Logger = log
	s, err := roles.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agora runner: runner %s with %d slots\n", s.RunnerID(), s.Config().Slots)
	if cfg.Metrics {
		fmt.Fprintf(stdout, "agora runner: metrics on %s/metrics\n", s.URL())
	}
	return runUntilDone(ctx, s, log, "the next runner with this id adopts them")
}
