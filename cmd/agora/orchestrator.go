package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

func orchestratorMain(ctx context.Context, cfg roles.Config, environ []string, stdout, stderr io.Writer) error {
	log := newLogger(stderr)
	cfg.Logger = log
	cfg.WrapHTTP = apiCheck(environ, stderr)
	s, err := roles.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agora orchestrator: API on %s (metrics at /metrics)\n", s.URL())
	return runUntilDone(ctx, s, log, "")
}
