// Package docker implements compute.Engine (and compute.ImageBuilder,
// compute.ImageRemover) on the Docker Engine API through
// github.com/docker/docker/client, the API version negotiated with the
// daemon (Docker 20.10 speaks 1.41; nothing newer is used).
//
// It is the only package of this module that imports the Docker SDK
// (docs/architecture.md).
//
// Every container it creates is hardened whatever the spec says:
// no-new-privileges, all capabilities dropped, a non-root user, a read-only
// root filesystem unless the spec opts out, a tmpfs /tmp, swap disabled under a
// memory limit, and the json-file log driver (bounded by Config.LogMaxBytes) so
// Logs works whatever the daemon's default driver is.
package docker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/agoradev/agora/internal/compute"
)

// Config configures New. The zero value is valid.
type Config struct {
	// Host is the daemon address, e.g. unix:///var/run/docker.sock or
	// tcp://10.0.0.5:2376. Empty means the Docker environment variables
	// (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH), else the default
	// socket: the one place this package reads the environment, because that
	// is where every Docker user expects it to be read.
	Host string
	// Logger receives debug lines (build output) and warnings; nil discards them.
	Logger *slog.Logger
	// CallTimeout bounds each short call (create, start, inspect, list, remove,
	// and stop on top of its grace). Wait, Logs and BuildImage have none.
	// Zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// LogMaxBytes bounds the json-file log the daemon keeps per container
	// (max-size, one file). Zero means DefaultLogMaxBytes.
	LogMaxBytes int64
}

// Defaults used by Config.WithDefaults.
const (
	DefaultCallTimeout = 30 * time.Second
	DefaultLogMaxBytes = 64 << 20
)

// WithDefaults returns c with its zero fields filled in.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.LogMaxBytes <= 0 {
		c.LogMaxBytes = DefaultLogMaxBytes
	}
	return c
}

// Engine is the Docker implementation of compute.Engine. Close it when done.
type Engine struct {
	cfg Config
	cli *client.Client
}

var (
	_ compute.Engine       = (*Engine)(nil)
	_ compute.ImageBuilder = (*Engine)(nil)
	_ compute.ImageRemover = (*Engine)(nil)
	_ compute.HostGateway  = (*Engine)(nil)
)

// New returns an Engine for cfg. It does not contact the daemon: the API
// version is negotiated on the first call (call Ping to check the daemon now).
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.Host != "" {
		opts = []client.Opt{client.WithHost(cfg.Host), client.WithAPIVersionNegotiation()}
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &Engine{cfg: cfg, cli: cli}, nil
}

// Close releases the client's idle connections.
func (e *Engine) Close() error {
	return e.cli.Close()
}

// Ping checks that the daemon answers and negotiates the API version.
func (e *Engine) Ping(ctx context.Context) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	if _, err := e.cli.Ping(ctx); err != nil {
		return fmt.Errorf("ping docker at %s: %w", e.cli.DaemonHost(), err)
	}
	e.cli.NegotiateAPIVersion(ctx)
	return nil
}

// APIVersion is the API version in use: the negotiated one once a call
// has been made.
func (e *Engine) APIVersion() string {
	return e.cli.ClientVersion()
}

// callContext bounds one short call.
func (e *Engine) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.CallTimeout)
}

// notFound maps the daemon's "no such container" to compute.ErrNotFound,
// keeping the daemon's message.
func notFound(err error) error {
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", compute.ErrNotFound, err)
	}
	return err
}
