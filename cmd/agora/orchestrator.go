package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agoradev/agora/cmd/agora/internal/roleflags"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

func runOrchestrator(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora orchestrator", orchestratorMain(ctx, args, environ, stdout, stderr))
}

func parseOrchestratorFlags(args, environ []string, stdout io.Writer) (roles.Config, error) {
	return parseRole(roleflags.Orchestrator, args, environ, stdout, nil)
}

// orchestratorMain runs the roles package with the orchestrator role only:
// the same defaults as agora serve --no-runner, /metrics beside the API.
func orchestratorMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	cfg, err := parseOrchestratorFlags(args, environ, stdout)
	if err != nil {
		return err
	}
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
