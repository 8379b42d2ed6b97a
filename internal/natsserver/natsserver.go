// Package natsserver runs agora's embedded NATS server: one in-process
// nats-server with JetStream on a file store, for the all-in-one
// `agora serve` and for tests (see natstest).
//
// It is the only package in the module that imports
// github.com/nats-io/nats-server/v2 (docs/architecture.md).
// Clients talk to the server through internal/bus, over the URL that
// ClientURL returns, exactly as they would talk to a remote server.
package natsserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// DefaultHost is the address the server listens on when Config.Host is empty.
const DefaultHost = "127.0.0.1"

// DefaultReadyTimeout bounds how long Start waits for the server to accept
// clients when Config.ReadyTimeout is zero.
const DefaultReadyTimeout = 10 * time.Second

// Config describes one embedded server.
type Config struct {
	// StoreDir holds JetStream's file store. Required. Starting a server on
	// the StoreDir of a stopped one recovers its streams.
	StoreDir string
	// Host is the client listen address; default DefaultHost (loopback).
	Host string
	// Port is the client port; 0 picks a free port (nats-server's
	// RANDOM_PORT), which Server.Port and Server.ClientURL then report.
	Port int
	// ServerName names the server; empty lets nats-server use its generated id.
	ServerName string
	// Logger receives nats-server's own log lines; default discards them.
	// Debug lines are produced only when the logger enables slog.LevelDebug,
	// protocol traces only when it enables slog.LevelDebug-4.
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the server to accept clients;
	// default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Operator, when set, is the JWT of the operator the server trusts
	// (operator mode): every client then needs a user JWT of one of
	// Accounts, and anonymous connections are refused. Empty: no
	// authentication (tests that do not need it).
	Operator string
	// SystemAccount is the operator's system account's public key.
	SystemAccount string
	// Accounts maps account public keys to their JWTs, loaded into the
	// server's memory resolver (the system account's among them).
	Accounts map[string]string
	// AdoptGlobal, in operator mode, names the account that takes over the
	// streams a server without authentication stored in StoreDir (its
	// global account, $G), so an existing store keeps its streams when
	// authentication is turned on. Only when that account has no store yet.
	AdoptGlobal string
	// Cluster, when its Name is set, makes the server one node of a NATS
	// cluster (tests run one in process; agora serve never sets it).
	Cluster ClusterConfig
}

// ClusterConfig makes a server a node of a cluster: it listens for the
// other nodes' routes on Host:Port and dials Routes.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Port is the port this node listens on for routes; required.
	Port int
	// Routes are the other nodes' route URLs (nats://127.0.0.1:PORT).
	Routes []string
}

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	return c
}

// Validate reports the first setting Start cannot work with.
func (c Config) Validate() error {
	switch {
	case c.StoreDir == "":
		return errors.New("nats-server config: store dir is required")
	case c.Port < 0 && c.Port != server.RANDOM_PORT, c.Port > 65535:
		return fmt.Errorf("nats-server config: port %d out of range 0-65535", c.Port)
	case c.Host == "":
		return errors.New("nats-server config: host is required")
	case c.Cluster.Name != "" && (c.Cluster.Port <= 0 || c.Cluster.Port > 65535):
		return fmt.Errorf("nats-server config: cluster port %d out of range 1-65535", c.Cluster.Port)
	case c.Cluster.Name != "" && c.ServerName == "":
		return errors.New("nats-server config: a cluster node needs a server name")
	case c.Operator != "" && (c.SystemAccount == "" || c.Accounts[c.SystemAccount] == ""):
		return errors.New("nats-server config: operator mode needs the system account and its JWT")
	}
	return nil
}

// Server is a running embedded nats-server.
type Server struct {
	ns       *server.Server
	cfg      Config
	shutdown sync.Once
}

// Start starts a nats-server with JetStream enabled on a file store in
// cfg.StoreDir and returns once it accepts client connections. It fails if
// the server reports a fatal error (the port is taken, the store cannot be
// opened) or is not ready within cfg.ReadyTimeout or before ctx is done.
// nats-server's own startup (including the recovery of a large store) is not
// interruptible; ctx bounds the wait for readiness after it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start nats-server: %w", context.Cause(ctx))
	}
	port := cfg.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName: cfg.ServerName,
		Host:       cfg.Host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true, // signals belong to main
	}
	if cl := cfg.Cluster; cl.Name != "" {
		opts.Cluster = server.ClusterOpts{Name: cl.Name, Host: cfg.Host, Port: cl.Port}
		for _, r := range cl.Routes {
			opts.Routes = append(opts.Routes, server.RoutesFromStr(r)...)
		}
	}
	if cfg.Operator != "" {
		if err := operatorMode(opts, cfg); err != nil {
			return nil, fmt.Errorf("start nats-server: %w", err)
		}
		if err := adoptGlobal(cfg); err != nil {
			return nil, fmt.Errorf("start nats-server: %w", err)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats-server: %w", err)
	}
	log := newLogAdapter(cfg.Logger.With("component", "nats-server"))
	ns.SetLoggerV2(log, log.debug(), log.trace(), false)

	s := &Server{ns: ns, cfg: cfg}
	ns.Start()
	if err := s.waitReady(ctx, log); err != nil {
		s.Shutdown()
		return nil, fmt.Errorf("start nats-server on %s: %w", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), err)
	}
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		s.Shutdown()
		return nil, fmt.Errorf("start nats-server: listener address is %v, not TCP", ns.Addr())
	}
	s.cfg.Port = addr.Port
	cfg.Logger.Info("nats-server ready", "url", s.ClientURL(), "store_dir", cfg.StoreDir)
	return s, nil
}

// operatorMode makes the server trust cfg.Operator and resolve its accounts
// from memory, so it accepts only users those accounts signed.
func operatorMode(opts *server.Options, cfg Config) error {
	oc, err := jwt.DecodeOperatorClaims(cfg.Operator)
	if err != nil {
		return fmt.Errorf("operator jwt: %w", err)
	}
	res := &server.MemAccResolver{}
	for pub, tok := range cfg.Accounts {
		if err := res.Store(pub, tok); err != nil {
			return fmt.Errorf("account %s: %w", pub, err)
		}
	}
	opts.TrustedOperators = []*jwt.OperatorClaims{oc}
	opts.SystemAccount = cfg.SystemAccount
	opts.AccountResolver = res
	return nil
}

// adoptGlobal moves the global account's JetStream store to the account
// cfg.AdoptGlobal: the file store keeps an account's streams in
// <store>/jetstream/<account>, and the streams themselves do not name it.
func adoptGlobal(cfg Config) error {
	if cfg.AdoptGlobal == "" {
		return nil
	}
	js := filepath.Join(cfg.StoreDir, "jetstream")
	from, to := filepath.Join(js, server.DEFAULT_GLOBAL_ACCOUNT), filepath.Join(js, cfg.AdoptGlobal)
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("adopt the unauthenticated store: %w", err)
	}
	if _, err := os.Stat(to); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("adopt the unauthenticated store: %w", err)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("adopt the unauthenticated store: %w", err)
	}
	cfg.Logger.Info("nats-server: the streams stored without authentication now belong to the account", "account", cfg.AdoptGlobal)
	return nil
}

// waitReady polls readiness in short slices so that a fatal error, the
// context or the ready timeout end the wait early.
func (s *Server) waitReady(ctx context.Context, log *logAdapter) error {
	deadline := time.Now().Add(s.cfg.ReadyTimeout)
	for {
		if err := log.fatalErr(); err != nil {
			return err
		}
		if s.ns.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wait for ready: %w", context.Cause(ctx))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready for connections after %s", s.cfg.ReadyTimeout)
		}
	}
}

// ClientURL is the URL clients connect to, e.g. nats://127.0.0.1:4222.
// A server listening on all interfaces is reached through loopback.
func (s *Server) ClientURL() string {
	host := s.cfg.Host
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(s.cfg.Port))
}

// Port is the client port the server listens on (resolved when Config.Port was 0).
func (s *Server) Port() int { return s.cfg.Port }

// Config is the configuration the server runs with: defaults applied and the
// port resolved. Starting a new server with it after Shutdown brings the same
// store back on the same port.
func (s *Server) Config() Config { return s.cfg }

// Shutdown stops the server and waits until it has stopped. It is idempotent
// and safe to call concurrently; every call returns after the shutdown.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	})
}
