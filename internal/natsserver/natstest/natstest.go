// Package natstest starts real in-process NATS servers for tests: a random
// port, a t.TempDir() store, logs to t.Log and shutdown in t.Cleanup. It
// is imported only by tests (docs/architecture.md).
package natstest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/testlog"
	"github.com/agoradev/agora/internal/testutil"
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

// Cluster is n servers of this process routed to each other on loopback,
// JetStream on each: the test stand-in for a NATS cluster with replicated
// streams.
type Cluster struct {
	Servers []*natsserver.Server
}

// URLs is every node's client URL, comma-separated, as bus.Connect and
// nats.Connect take them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// clusters makes cluster names unique within the test binary.
var clusters atomic.Int64

// ClusterReadyTimeout bounds how long StartCluster waits for a fresh
// cluster to elect its JetStream meta leader and place a stream on every
// node.
const ClusterReadyTimeout = time.Minute

// StartCluster starts n servers (each with a t.TempDir() store and logs
// at Warn to t.Log), routed to each other, shuts them down in t.Cleanup,
// and returns once the cluster can hold a stream with n replicas.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterWith(t, n, natsserver.Config{})
}

// StartClusterWith is StartCluster with every node's cfg (a logger, say);
// the names, ports, stores and routes are StartCluster's.
func StartClusterWith(t testing.TB, n int, cfg natsserver.Config) *Cluster {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		ports[i] = testutil.FreePort(t)
	}
	name := fmt.Sprintf("natstest-%d-%d", testutil.RunNumber(), clusters.Add(1))
	c := &Cluster{}
	for i := range n {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
			}
		}
		node := cfg
		node.ServerName, node.Port, node.StoreDir = fmt.Sprintf("%s-n%d", name, i), 0, ""
		node.Cluster = natsserver.ClusterConfig{Name: name, Port: ports[i], Routes: routes}
		c.Servers = append(c.Servers, StartWith(t, node))
	}
	if err := c.waitReplicas(n); err != nil {
		t.Fatalf("the NATS cluster %s never held a stream with %d replicas: %v", name, n, err)
	}
	return c
}

// waitReplicas returns once the cluster can create (and delete) a stream
// with n replicas: a meta leader is elected and every peer is known.
func (c *Cluster) waitReplicas(n int) error {
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return testutil.Poll(context.Background(), ClusterReadyTimeout, 200*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "NATSTEST_PROBE", Subjects: []string{"natstest.probe"}, Replicas: n}); err != nil {
			return err
		}
		return js.DeleteStream(ctx, "NATSTEST_PROBE")
	})
}
