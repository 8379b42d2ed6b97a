package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

func runnerMain(ctx context.Context, cfg roles.Config, environ []string, stdout, stderr io.Writer) error {
	if cfg.Image == "" && cfg.ECS == nil {
		// Before connecting: a missing binary is the likeliest mistake.
		if _, err := roles.WorkerBinary("", "--image IMAGE"); err != nil {
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
