// Package natstest starts real in-process NATS servers for tests: a random
// port, a t.TempDir() store, logs to t.Log and shutdown in t.Cleanup. It
// is imported only by tests (docs/architecture.md).
package natstest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/testlog"
)

// Logger returns a logger that writes text lines to t.Log at Info and above,
// dropping lines logged after the test's cleanup.
func Logger(t testing.TB) *slog.Logger { return testlog.Logger(t) }

// LoggerLevel is Logger with a minimum level.
func LoggerLevel(t testing.TB, level slog.Leveler) *slog.Logger {
	t.Helper()
	return testlog.LoggerLevel(t, level)
}

// Start starts a server on a random loopback port with its store in
// t.TempDir(), and shuts it down in t.Cleanup.
func Start(t testing.TB) *natsserver.Server {
	t.Helper()
	return StartWith(t, natsserver.Config{})
}

// StartWith starts a server with cfg, filling in a t.Log logger and a
// t.TempDir() store when cfg leaves them unset, and shuts it down in
// t.Cleanup. Use a fixed Port and StoreDir to bring a stopped server back
// (see Restart).
func StartWith(t testing.TB, cfg natsserver.Config) *natsserver.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = LoggerLevel(t, slog.LevelWarn) // the banner at Info drowns test output
	}
	if cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
	s, err := natsserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("natsserver.Start: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// StartAuth starts a server as Start does, in operator mode with a fresh
// set of agora identities (natsauth.Ensure in a t.TempDir()): anonymous
// clients are refused, the identities' credential files let the
// orchestrator and the runner in.
func StartAuth(t testing.TB) (*natsserver.Server, *natsauth.Identities) {
	t.Helper()
	ids, err := natsauth.Ensure(t.TempDir())
	if err != nil {
		t.Fatalf("natsauth.Ensure: %v", err)
	}
	return StartWith(t, natsserver.Config{Operator: ids.OperatorJWT, SystemAccount: ids.SystemAccount, Accounts: ids.AccountJWTs}), ids
}

// Restart shuts s down and starts a new server on the same port and store
// dir, as after a crash and restart of the NATS host: clients connected to
// the old server reconnect to the new one, and the streams survive.
//
// The port is free between the two servers; another process could take it
// in that instant, in which case the test fails rather than hangs.
func Restart(t testing.TB, s *natsserver.Server) *natsserver.Server {
	t.Helper()
	s.Shutdown()
	return StartWith(t, s.Config())
}
