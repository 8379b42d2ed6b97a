// Package roles is agora's composition root: the top of the import graph,
// imported by cmd/agora only (Go's internal rule enforces it), whose role
// verbs fill its Config from the flags roleflags declares. It wires
// every role a process can run — the orchestrator with its HTTP API, a
// runner on the local Docker engine, an embedded NATS server with
// JetStream on disk (or a remote NATS), object storage and Prometheus
// metrics — from one Config with one set of defaults, so `agora serve`,
// `agora runner`, `agora orchestrator` and `agora demo` differ only in the
// roles they select. Tests start it with a t.TempDir() data dir and port 0.
//
// Metrics, at GET /metrics behind the API's token rule (api.Auth: with
// tokens a scraper sends Authorization: Bearer SECRET; without, loopback
// only): agora_tasks{state}, agora_open_questions,
// agora_answer_wait_seconds, agora_task_rounds,
// agora_dispatch_duration_seconds{outcome} — computed from the stored tasks
// at each scrape — agora_runner_slots{runner},
// agora_runner_slots_in_use{runner}, agora_runner_egress_denied_total{runner},
// and the Go and process collectors.
//
// It holds no logic of its own beyond the wiring, the defaults, the data
// dir layout and the metrics. Nothing in the module below cmd imports it.
package roles

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/compute/ecs"
	"github.com/agoradev/agora/internal/compute/procbench"
	"github.com/agoradev/agora/internal/httplimit"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/orchestrator/web"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/wire"
)

// DefaultListen is where the API (and /metrics) listens when Config.Listen
// is empty: loopback, so it needs no token.
const DefaultListen = "127.0.0.1:7070"

// DefaultResources are the limits of a dispatch container whose request
// sets none: 2 CPUs, 2 GiB of memory, 1024 processes (`agora runner` has
// the same defaults).
var DefaultResources = compute.Resources{NanoCPUs: 2e9, MemoryBytes: 2048 << 20, PidsLimit: 1024}

// pingTimeout bounds the first contact with the Docker engine.
const pingTimeout = 10 * time.Second

// ConnectDocker returns an engine on the Docker daemon that the Docker
// environment variables (DOCKER_HOST, …) or the default socket name, after
// checking once that it answers. dockerHost only words the error.
func ConnectDocker(ctx context.Context, dockerHost string, log *slog.Logger) (*docker.Engine, error) {
	hint := "start the Docker engine (socket /var/run/docker.sock, which your user must be allowed to use) or set DOCKER_HOST"
	if dockerHost != "" {
		hint = "check that the engine at DOCKER_HOST=" + dockerHost + " is running and that you may use it"
	}
	eng, err := docker.New(docker.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, hint)
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := eng.Ping(pingCtx); err != nil {
		eng.Close()
		return nil, fmt.Errorf("docker engine not reachable: %w; %s", err, hint)
	}
	return eng, nil
}

// Engine is what the runner role needs of a container engine: running
// containers and building (or finding) the worker image.
type Engine interface {
	compute.Engine
	compute.ImageBuilder
}

var _ Engine = (*docker.Engine)(nil)

// ECSConfig is a runner's ECS compute.
type ECSConfig struct {
	Engine    ecs.Config
	Endpoints ecs.Endpoints
}

// Config is one stack. Orchestrator and Runner select the roles; at least
// one is required.
type Config struct {
	// DataDir holds this stack's state on this host: nats/ (the embedded
	// server's JetStream store), nats-auth/ (its keys and the users'
	// credentials, 0600), storage/ (the default file storage),
	// runner/ (dispatch specs and workspaces), runner-id and a lock file
	// that keeps a second process off the same directory. Default
	// DefaultDataDir: $AGORA_DATA_DIR, else ~/.agora. It is made absolute:
	// containers mount paths under it. An orchestrator on a remote NATS
	// keeps nothing on this host, so neither makes nor locks it.
	DataDir string
	// MemoryLimit, above 0, is the soft limit on this process's Go memory
	// Start sets (debug.SetMemoryLimit: process-wide, and it stays after
	// Stop); 0 leaves the runtime's own (GOMEMLIMIT, else none).
	MemoryLimit int64
	// NATSURL is the NATS server (with JetStream) to use; empty starts an
	// embedded one on loopback with its store in DataDir/nats.
	NATSURL string
	// NATSAuth is the credentials and TLS settings for NATSURL. The
	// embedded server instead requires the identities kept in
	// DataDir/nats-auth (made on first start, natsauth): the orchestrator
	// and the runner each connect as their own user.
	NATSAuth bus.Auth
	// NATSAllowAnonymous lets a role given credentials run on a NATSURL
	// that also lets anonymous clients in (loudly warned about); without
	// it that is an error at start.
	NATSAllowAnonymous bool
	// NATSReplicas is how many replicas the streams and buckets this
	// stack creates get (bus.Options.Replicas): 3 on a three-node
	// cluster; default 1, all the embedded server can hold.
	NATSReplicas int
	// WorkerNATSSigner mints each --worker-nats worker its own NATS user
	// (runner.Config.WorkerNATSSigner); the embedded server's own signer
	// when nil.
	WorkerNATSSigner *natsauth.Signer
	// WorkerNATSSignerFile, when WorkerNATSSigner is nil, is the seed file
	// of the account's scoped signing key that signer is loaded from at
	// start (natsauth.LoadSigner, with NATSAuth.CredsFile naming the
	// account): `agora runner --worker-nats-signer`.
	WorkerNATSSignerFile string
	// NATSPort is the embedded server's client port; 0 picks a free one
	// each start. Unused with NATSURL.
	NATSPort int
	// StorageURI is the object storage: file:///abs/dir or
	// s3://bucket/prefix. Default file://DataDir/storage.
	StorageURI string
	// NoStorage leaves object storage out: an orchestrator without one takes
	// inline sub-agents only (no registry). Not with a runner.
	NoStorage bool
	// Listen is the address of the HTTP API and /metrics; default
	// DefaultListen. Off loopback it needs Tokens (api.CheckBind).
	Listen string
	// Tokens are the API's bearer tokens, SECRET, NAME:SECRET or
	// NAME:SECRET:ROLE[,ROLE] (api.Config.Tokens); /metrics takes the same
	// ones.
	Tokens []string
	// LocalSecrets grant token names local: secrets, NAME=SECRET[,SECRET]
	// or NAME=* (api.Config.LocalSecrets).
	LocalSecrets []string
	// Orchestrator runs the orchestrator and serves its HTTP API.
	Orchestrator bool
	// Answerers resolves route steps (lookup rules, webhook secret); nil
	// gives the orchestrator's default. Its Logger is set when nil.
	Answerers *answer.Resolver
	// Slack, when set, runs the Slack answerer (route steps "slack:…")
	// with the orchestrator, its Service and KV filled in here, and serves
	// its interactivity and events endpoints at SlackPath and
	// SlackEventsPath (docs/slack.md).
	Slack *slackanswer.Config
	// Runner runs a runner on the Docker engine (or ECS).
	Runner bool
	// Slots is how many dispatches the runner runs at once; default
	// runner.DefaultSlots.
	Slots int
	// Image is the worker image dispatches run in; it must exist on the
	// engine. Empty builds it from WorkerBinary, or reuses the image built
	// from the same inputs, as `agora image build` does.
	Image string
	// WorkerBinary is the static agora-worker the image is built from;
	// default agora-worker next to the running executable.
	WorkerBinary string
	// Busybox is the static busybox a built worker image gets as /bin/sh;
	// default images.DefaultBusybox when the host has a static one there
	// (images.Options.Busybox).
	Busybox string
	// RunnerID names the runner in claims and container labels, so the next
	// process on this data dir adopts the containers this one leaves running.
	// Default, for every role that runs a runner: the one kept in
	// DataDir/runner-id, made once from the host name and a random suffix
	// (two data dirs on a host never share one) — or the bare host name when
	// RunnerDataDir already holds dispatches from before the file existed,
	// so an upgraded `agora runner` still adopts its containers. It ends
	// the runner's NATS subjects (bus.RunnerEventSubject): no '*', '>',
	// white space or empty '.'-parts.
	RunnerID string
	// RunnerDataDir holds the runner's dispatch specs and workspaces;
	// default DataDir/runner.
	RunnerDataDir string
	// WorkerNATSURL lets workers publish their own events to this NATS URL,
	// which containers must reach; empty: the runner relays them.
	WorkerNATSURL string
	// Grace is the wait between SIGTERM and SIGKILL when a container is
	// stopped; default runner.DefaultGrace.
	Grace time.Duration
	// LogCap bounds the output kept per dispatch; default
	// runner.DefaultLogCap.
	LogCap int64
	// Resources are the default limits of a dispatch container; nil means
	// DefaultResources. Each is at most its maximum (Max).
	Resources *compute.Resources
	// Max are the server's ceilings on what one task may ask for or hold:
	// the orchestrator refuses a task over them, the runner a request over
	// its memory, pids and timeout (and caps CPUs). Zero fields take
	// orchestrator.DefaultMaximums, but CPUs the host's cores when a runner
	// runs here.
	Max orchestrator.Maximums
	// CIRoute is the route of a task submitted from CI without one
	// (SubmitRequest.FromCI); empty means wire.DefaultCIRoute.
	CIRoute string
	// Retention is how long a task that ended is kept after its last
	// change; 0 means orchestrator.DefaultRetention.
	Retention time.Duration
	// MaxWorkspaceBytes bounds a dispatch's workspace on the runner; zero
	// means runner.DefaultMaxWorkspaceMB.
	MaxWorkspaceBytes int64
	// EgressUplink is the network egress proxies reach their hosts
	// through; "" means runner.DefaultEgressUplink.
	EgressUplink string
	// MaxArtifacts and MaxArtifactBytes cap what one round hands back
	// (runner.Config); zero means the contract's defaults.
	MaxArtifacts     int
	MaxArtifactBytes int64
	// WorkerEnv is extra KEY=value lines for every worker, e.g. credentials
	// for aws-sm: secret refs; never passed on to sub-agents.
	WorkerEnv []string
	// SecretsDir is the local secret store whose local:NAME secrets the
	// runner copies into the dispatches that reference them; default
	// DataDir/secrets (`agora secret set` writes there).
	SecretsDir string
	// AWSEnv is the AWS_* variables agora was started with: S3 storage
	// (static credentials, region) and the runner's aws-sm: secret refs
	// use them, on this host, on top of the SDK's default chain; they never
	// enter a container.
	AWSEnv []string
	// Engine is the container engine; nil connects to the Docker engine
	// that DOCKER_HOST (or the default socket) names, and closes it on Stop.
	Engine Engine
	// ECS, when set, runs the runner's dispatches as ECS tasks instead
	// (docs/ecs.md): Engine is then unused and Image is required, an image
	// ECS can pull. Its AWS configuration is AWSEnv's on top of the SDK's
	// default chain.
	ECS *ECSConfig
	// MeasuringEngine runs the runner's dispatches as plain processes of
	// the worker binary (internal/compute/procbench) instead of
	// containers: for measuring agora's own ceiling only
	// (docs/capacity.md). It isolates nothing; the CLI asks for it only
	// with --benchmark-engine. Image must be empty.
	MeasuringEngine bool
	// MeasuringReplay, with MeasuringEngine, replays a recorded worker run
	// for every dispatch of a shape already run once (procbench.Replayer)
	// instead of running the worker each time.
	MeasuringReplay bool
	// DockerHost is $DOCKER_HOST as the caller's environment has it, for
	// the error when the engine does not answer (the Docker client reads
	// the variable from the process environment itself).
	DockerHost string
	// Logger gets every component's log lines; nil discards them.
	Logger *slog.Logger
	// Metrics serves Prometheus metrics at /metrics on Listen.
	Metrics bool
	// WrapHTTP, when set, wraps everything Listen serves: tests check
	// every request and response of the API against openapi.json with it
	// (openapitest), in this process or in an agora binary built with the
	// openapicheck tag.
	WrapHTTP func(http.Handler) http.Handler
}

// DefaultDataDir is every role's data directory when none is given:
// $AGORA_DATA_DIR, else ~/.agora ("" without either). getenv reads the
// caller's environment, so every verb on a machine agrees where the state
// and the secrets are.
func DefaultDataDir(getenv func(string) string) string {
	if dir := getenv("AGORA_DATA_DIR"); dir != "" {
		return dir
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".agora")
	}
	return ""
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir(os.Getenv)
	}
	if c.DataDir != "" {
		if abs, err := filepath.Abs(c.DataDir); err == nil {
			c.DataDir = abs
		}
	}
	if c.SecretsDir == "" && c.DataDir != "" {
		c.SecretsDir = filepath.Join(c.DataDir, "secrets")
	}
	if c.StorageURI == "" && c.DataDir != "" {
		c.StorageURI = "file://" + filepath.Join(c.DataDir, "storage")
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.RunnerDataDir == "" && c.DataDir != "" {
		c.RunnerDataDir = filepath.Join(c.DataDir, "runner")
	}
	if c.Slots <= 0 {
		c.Slots = runner.DefaultSlots
	}
	if c.Grace <= 0 {
		c.Grace = runner.DefaultGrace
	}
	if c.LogCap <= 0 {
		c.LogCap = runner.DefaultLogCap
	}
	if c.Resources == nil {
		r := DefaultResources
		c.Resources = &r
	}
	if c.Runner && c.Max.CPUs <= 0 {
		c.Max.CPUs = runner.DefaultMaxCPUs()
	}
	if c.Runner && c.ECS != nil && c.ECS.Engine.WithDefaults().Fargate() {
		// The orchestrator here knows its runner: a task no Fargate task
		// size holds is refused at submit (docs/ecs.md).
		c.Max.FargateTaskSizes = true
	}
	c.Max = c.Max.WithDefaults()
	if c.MaxWorkspaceBytes <= 0 {
		c.MaxWorkspaceBytes = runner.DefaultMaxWorkspaceMB << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// local reports whether the roles keep state on this host (the embedded
// NATS store, a runner's workspaces), so need the data dir and its lock; an
// orchestrator on a remote NATS keeps none.
func (c Config) local() bool { return c.NATSURL == "" || c.Runner }

// spoolDir is where this process's temp files go: bytes on their way into
// storage (a workspace snapshot, a blob being hashed, an S3 upload). Under
// the data dir, private with the rest of it, and there in a container
// whose /tmp is not writable; "" (os.TempDir) without a data dir.
func (c Config) spoolDir() string {
	if c.DataDir == "" || !c.local() {
		return ""
	}
	return filepath.Join(c.DataDir, "tmp")
}

// Validate names every problem with the configuration (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	if !c.Orchestrator && !c.Runner {
		errs = append(errs, errors.New("no role: run the orchestrator, the runner or both"))
	}
	if c.DataDir == "" && c.local() {
		errs = append(errs, errors.New("data dir is required (there is no home directory for the default)"))
	}
	if c.NoStorage && c.Runner {
		errs = append(errs, errors.New("a runner needs object storage"))
	}
	if c.NATSURL != "" && c.NATSPort != 0 {
		errs = append(errs, errors.New("a NATS port is for the embedded server: not with a NATS URL"))
	}
	if c.NATSReplicas < 0 || c.NATSReplicas > bus.MaxReplicas {
		errs = append(errs, fmt.Errorf("NATS replicas %d out of range 1-%d", c.NATSReplicas, bus.MaxReplicas))
	}
	if c.NATSURL == "" && c.NATSReplicas > 1 {
		errs = append(errs, fmt.Errorf("%d NATS replicas need a NATS cluster: the embedded server is one node", c.NATSReplicas))
	}
	if c.NATSPort < 0 || c.NATSPort > 65535 {
		errs = append(errs, fmt.Errorf("NATS port %d out of range 0-65535", c.NATSPort))
	}
	if c.Orchestrator || c.Metrics {
		if err := api.CheckBind(c.Listen, c.Tokens); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := api.NewAuthLocal(c.Tokens, c.LocalSecrets); err != nil {
		errs = append(errs, err)
	}
	if err := c.Max.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := orchestrator.CheckRetention(c.Retention); err != nil {
		errs = append(errs, err)
	}
	if c.CIRoute != "" {
		if _, err := wire.ParseRoute(c.CIRoute); err != nil {
			errs = append(errs, fmt.Errorf("CI route %q: %w", c.CIRoute, err))
		}
	}
	if c.ECS != nil {
		errs = append(errs, c.ECS.validate(c)...)
	}
	if c.MeasuringEngine {
		switch {
		case !c.Runner:
			errs = append(errs, errors.New("the measuring engine is for the runner"))
		case c.ECS != nil || c.Engine != nil:
			errs = append(errs, errors.New("the measuring engine replaces the container engine: not with another"))
		case c.Image != "":
			errs = append(errs, errors.New("the measuring engine runs the agora-worker binary (--worker), not an image: drop --image"))
		}
	} else if c.MeasuringReplay {
		errs = append(errs, errors.New("replay is a mode of the measuring engine: set MeasuringEngine too"))
	}
	return errors.Join(errs...)
}

// validate names what an ECS runner lacks. On Fargate a dispatch gets no
// host files: its worker reads them from S3 storage with the task role
// (runner.Config.NoHostMounts, docs/ecs.md "Fargate").
func (e *ECSConfig) validate(c Config) []error {
	var errs []error
	if !c.Runner {
		errs = append(errs, errors.New("ECS compute is for the runner"))
	}
	if c.Image == "" {
		errs = append(errs, errors.New("ECS compute needs --image: an image ECS pulls (e.g. from ECR); nothing is built for it"))
	}
	cfg := e.Engine.WithDefaults()
	// S3 storage, which Fargate needs too, runner.Config.Validate checks.
	if cfg.Fargate() && cfg.TaskRoleARN == "" {
		errs = append(errs, errors.New("the runner on Fargate needs --ecs-task-role: the worker reads and writes its dispatch's files in S3 with that role (docs/ecs.md, \"IAM\")"))
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// Stack is a running set of roles.
type Stack struct {
	cfg  Config
	log  *slog.Logger
	lock *os.File

	nats    *natsserver.Server   // nil with Config.NATSURL
	natsIDs *natsauth.Identities // the embedded server's; nil with Config.NATSURL
	natsURL string
	bus     *bus.Bus // the orchestrator's, or the runner's when it runs alone
	// runnerBus is the runner's own connection (its own NATS user) when
	// the orchestrator runs here too; else bus.
	runnerBus *bus.Bus
	store     storage.Store
	engine    compute.Engine
	closeEn   func() error // closes an engine the stack opened
	orch      *orchestrator.Orchestrator
	reg       *registry.Registry
	runner    *runner.Runner
	slack     *slackanswer.Bot

	ln         net.Listener
	srv        *http.Server
	endStreams context.CancelFunc

	failOnce sync.Once
	done     chan struct{} // closed on a failure or by Stop
	failure  error

	stopOnce sync.Once
	stopErr  error
}

// Start starts the configured roles and returns once all of them run: the
// API (when there is one) answers at URL. ctx bounds the start only; the
// stack runs until Stop. On an error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (s *Stack, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s = &Stack{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	if cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		s.log.Info("Go memory soft limit", "bytes", limit)
	}
	defer func() {
		if err != nil {
			s.stop(context.WithoutCancel(ctx))
			s = nil
		}
	}()
	var workerBin string
	if cfg.Runner && cfg.Image == "" && cfg.ECS == nil {
		// Before anything starts: a missing binary is the likeliest mistake.
		if workerBin, err = WorkerBinary(cfg.WorkerBinary, "--image IMAGE"); err != nil {
			return s, err
		}
	}
	if cfg.local() {
		if err := privateDataDir(cfg.DataDir, s.log); err != nil {
			return s, hostFix(err, cfg.DataDir, inContainer())
		}
		if s.lock, err = lockDataDir(cfg.DataDir); err != nil {
			return s, err
		}
		// Spool files a crash left; only the process holding the lock
		// writes there.
		if err := os.RemoveAll(cfg.spoolDir()); err != nil {
			return s, fmt.Errorf("clear %s: %w", cfg.spoolDir(), err)
		}
	}
	if cfg.Orchestrator || cfg.Metrics {
		// Bound first: a taken port fails before anything is built.
		if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return s, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
		}
	}
	if cfg.Runner {
		// Before the bus: the runner's NATS user and subjects carry it.
		if s.cfg.RunnerID == "" {
			if s.cfg.RunnerID, err = runnerID(cfg.DataDir, cfg.RunnerDataDir); err != nil {
				return s, err
			}
		}
		if err := bus.ValidateRunnerID(s.cfg.RunnerID); err != nil {
			return s, fmt.Errorf("%w: it ends the runner's NATS subjects (--id)", err)
		}
	}
	if cfg.Runner && cfg.WorkerNATSSigner == nil && cfg.WorkerNATSSignerFile != "" {
		// Before the bus: a wrong key file is the operator's to fix.
		if s.cfg.WorkerNATSSigner, err = natsauth.LoadSigner(cfg.WorkerNATSSignerFile, cfg.NATSAuth.CredsFile); err != nil {
			return s, err
		}
	}
	if u, err := url.Parse(cfg.WorkerNATSURL); cfg.Runner && err == nil && isLoopback(u.Hostname()) {
		s.log.Warn("--worker-nats names a loopback address, which containers cannot reach: events then reach NATS only when the runner recovers them from stdout after each container ends", "worker_nats", cfg.WorkerNATSURL)
	}
	if err := s.startBus(ctx); err != nil {
		return s, err
	}
	if !cfg.NoStorage {
		if s.store, err = storage.Open(ctx, cfg.StorageURI, storage.Options{Logger: s.log, S3: s3Options(cfg.AWSEnv), SpoolDir: cfg.spoolDir()}); err != nil {
			return s, err
		}
		// Storage that is not there fails the start, not the first round.
		if c, ok := s.store.(storage.Checker); ok {
			if err := c.Check(ctx); errors.Is(err, storage.ErrNoBucket) {
				return s, err
			} else if err != nil {
				s.log.Warn("could not check the storage; going on", "storage", cfg.StorageURI, "error", err)
			}
		}
	}
	if cfg.Orchestrator {
		if err := s.startOrchestrator(ctx); err != nil {
			return s, err
		}
	}
	if cfg.Runner {
		if err := s.startRunner(ctx, workerBin); err != nil {
			return s, err
		}
	}
	if s.ln != nil {
		if err := s.serve(ctx); err != nil {
			return s, err
		}
	}
	s.log.Info("agora ready", "api", s.URL(), "nats", s.natsURL, "embedded_nats", s.nats != nil,
		"storage", cfg.StorageURI, "orchestrator", cfg.Orchestrator, "runner", cfg.Runner, "data_dir", cfg.DataDir)
	return s, nil
}

func (s *Stack) startBus(ctx context.Context) error {
	s.natsURL = s.cfg.NATSURL
	orchAuth, runnerAuth := s.cfg.NATSAuth, s.cfg.NATSAuth
	if s.natsURL == "" {
		ids, err := natsauth.Ensure(filepath.Join(s.cfg.DataDir, "nats-auth"))
		if err != nil {
			return err
		}
		srv, err := natsserver.Start(ctx, natsserver.Config{
			StoreDir: filepath.Join(s.cfg.DataDir, "nats"),
			Port:     s.cfg.NATSPort,
			// Operator mode: no client gets in without a user of the
			// agora account (issue 10).
			Operator:      ids.OperatorJWT,
			SystemAccount: ids.SystemAccount,
			Accounts:      ids.AccountJWTs,
			// A data dir from before authentication keeps its tasks.
			AdoptGlobal: ids.Account,
			// nats-server's banner and notices drown agora's own lines;
			// its warnings and errors pass.
			Logger: slog.New(minLevel{Handler: s.log.Handler(), min: slog.LevelWarn}),
		})
		if err != nil {
			return err
		}
		s.nats, s.natsIDs, s.natsURL = srv, ids, srv.ClientURL()
		orchAuth = bus.Auth{CredsFile: ids.Path(natsauth.OrchestratorCredFile)}
		if s.cfg.Runner {
			// This runner's own user, limited to what a runner does.
			path, err := ids.RunnerCreds(s.cfg.RunnerID, natsauth.RunnerCredFile)
			if err != nil {
				return err
			}
			runnerAuth = bus.Auth{CredsFile: path}
		}
	} else if err := s.checkExternalBus(ctx); err != nil {
		return err
	}
	name, auth, inbox := "agora serve", orchAuth, "" // the name in NATS's monitoring
	switch {
	case !s.cfg.Runner:
		name = "agora orchestrator"
	case !s.cfg.Orchestrator:
		name, auth, inbox = "agora runner", runnerAuth, bus.RunnerInboxPrefix(s.cfg.RunnerID)
	}
	b, err := s.connect(ctx, name, auth, inbox)
	if err != nil {
		return err
	}
	s.bus, s.runnerBus = b, b
	if s.cfg.Orchestrator && s.cfg.Runner && s.nats != nil {
		if s.runnerBus, err = s.connect(ctx, "agora serve runner", runnerAuth, bus.RunnerInboxPrefix(s.cfg.RunnerID)); err != nil {
			return err
		}
	}
	return nil
}

// checkExternalBus checks an operator's NATS before the roles connect: a
// server that lets anonymous clients in is refused when this role was
// given credentials (the operator meant the bus to be closed: its
// authorization is off) unless NATSAllowAnonymous, and warned about
// loudly otherwise; a runner's credentials must be its own.
func (s *Stack) checkExternalBus(ctx context.Context) error {
	a := s.cfg.NATSAuth
	if s.cfg.Runner && a.CredsFile != "" {
		if err := natsauth.CheckRunnerCreds(a.CredsFile, s.cfg.RunnerID); err != nil {
			return err
		}
	}
	open, err := bus.AcceptsAnonymous(ctx, s.natsURL, a)
	if err != nil || !open {
		return nil // closed, or unreachable: connect says so
	}
	withCreds := a.CredsFile != "" || a.Creds != nil || a.NKeySeedFile != "" || a.User != "" || a.TLSCert != ""
	if withCreds && !s.cfg.NATSAllowAnonymous {
		return fmt.Errorf("NATS at %s lets clients in without credentials: anyone who reaches it can read and rewrite every task; "+
			"turn its authorization on (docs/scaling.md: agora nats-auth init), or pass --nats-allow-anonymous to run on it anyway", s.natsURL)
	}
	s.log.Warn("NATS LETS ANYONE IN: the server at "+s.natsURL+" accepts clients without credentials; anyone who reaches it can read and rewrite every task, forge events and take dispatches. "+
		"Turn its authorization on (docs/scaling.md: agora nats-auth init) and give each role --nats-creds", "nats_url", s.natsURL)
	return nil
}

// connect connects as a role; inbox, when set, is the inbox prefix its
// user may subscribe below (a runner's).
func (s *Stack) connect(ctx context.Context, name string, auth bus.Auth, inbox string) (*bus.Bus, error) {
	b, err := bus.Connect(ctx, s.natsURL, bus.Options{Name: name, Logger: s.log, Auth: auth, Replicas: s.cfg.NATSReplicas, InboxPrefix: inbox})
	if err != nil {
		return nil, err
	}
	if !b.Connected() {
		b.Close()
		return nil, fmt.Errorf("NATS at %s is not reachable (or refused the credentials); start it (nats-server -js), pass the right --nats or its credentials (--nats-creds, …)", s.natsURL)
	}
	return b, nil
}

func (s *Stack) startOrchestrator(ctx context.Context) error {
	res := s.cfg.Answerers
	if res == nil {
		res = &answer.Resolver{}
	}
	if res.Logger == nil {
		res.Logger = s.log
	}
	// The registry keeps its bundles in object storage: without it only
	// inline sub-agents can be submitted.
	var reg *registry.Registry
	if s.store != nil {
		var err error
		if reg, err = registry.Open(ctx, s.bus, s.store); err != nil {
			return fmt.Errorf("open the registry: %w", err)
		}
	}
	o, err := orchestrator.New(orchestrator.Config{Bus: s.bus, Store: s.store, Answerers: res, Registry: reg, Max: s.cfg.Max, CIRoute: s.cfg.CIRoute, Retention: s.cfg.Retention, Logger: s.log})
	if err != nil {
		return err
	}
	s.reg = reg
	if err := s.newSlack(ctx, o, res); err != nil {
		return err
	}
	if err := o.Start(ctx); err != nil {
		return err
	}
	s.orch = o
	if s.slack != nil {
		if err := s.slack.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) startRunner(ctx context.Context, workerBin string) error {
	image := s.cfg.Image
	var dockerEngine bool
	if s.cfg.MeasuringEngine {
		pcfg := procbench.Config{Worker: workerBin, Image: procbench.Image, Dir: filepath.Join(s.cfg.RunnerDataDir, "proc")}
		var eng compute.Engine
		var err error
		if s.cfg.MeasuringReplay {
			eng, err = procbench.NewReplayer(procbench.ReplayConfig{Config: pcfg})
		} else {
			eng, err = procbench.New(pcfg)
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(s.cfg.RunnerDataDir, "proc"), 0o700); err != nil {
			return err
		}
		s.log.Warn("the measuring engine runs every dispatch as a plain process of this host, unisolated: for benchmarks only (docs/capacity.md)")
		s.engine, image = eng, procbench.Image
	} else if e := s.cfg.ECS; e != nil {
		cfg := e.Engine
		cfg.Logger = s.log
		eng, err := ecs.Open(ctx, cfg, s.cfg.AWSEnv, e.Endpoints)
		if err != nil {
			return err
		}
		s.engine = eng
	} else {
		local := s.cfg.Engine
		if local == nil {
			eng, err := ConnectDocker(ctx, s.cfg.DockerHost, s.log)
			if err != nil {
				return err
			}
			local, s.closeEn = eng, eng.Close
		}
		var err error
		if image, err = WorkerImage(ctx, local, s.cfg.Image, workerBin, s.cfg.Busybox, s.log); err != nil {
			return err
		}
		s.engine = local
		_, dockerEngine = local.(*docker.Engine)
	}
	var err error
	id := s.cfg.RunnerID
	if id == "" {
		if id, err = runnerID(s.cfg.DataDir, s.cfg.RunnerDataDir); err != nil {
			return err
		}
	}
	signer := s.cfg.WorkerNATSSigner
	if signer == nil && s.natsIDs != nil {
		if signer, err = s.natsIDs.LoadSigner(); err != nil {
			return err
		}
	}
	r, err := runner.New(runner.Config{
		ID:            id,
		Slots:         s.cfg.Slots,
		Image:         image,
		DataDir:       s.cfg.RunnerDataDir,
		StorageURI:    s.cfg.StorageURI,
		Store:         s.store,
		WorkerNATSURL: s.cfg.WorkerNATSURL,
		Grace:         s.cfg.Grace,
		LogCap:        s.cfg.LogCap,
		WorkerEnv:     s.cfg.WorkerEnv,
		SecretsDir:    s.cfg.SecretsDir,
		AWSEnv:        s.cfg.AWSEnv,
		Resources:     *s.cfg.Resources,
		// The runner's maximums are the server's: what the orchestrator
		// takes, this runner runs.
		MaxMemoryMB:       s.cfg.Max.MemoryMB,
		MaxCPUs:           s.cfg.Max.CPUs,
		MaxPids:           s.cfg.Max.Pids,
		MaxTimeout:        time.Duration(s.cfg.Max.TimeoutSeconds) * time.Second,
		MaxWorkspaceBytes: s.cfg.MaxWorkspaceBytes,
		EgressUplink:      s.cfg.EgressUplink,
		MaxArtifacts:      s.cfg.MaxArtifacts,
		MaxArtifactBytes:  s.cfg.MaxArtifactBytes,
		AllowHostNetwork:  s.cfg.Max.AllowHostNetwork,
		Bus:               s.runnerBus,
		WorkerNATSSigner:  signer,
		Engine:            s.engine,
		NoHostMounts:      s.cfg.ECS != nil && s.cfg.ECS.Engine.WithDefaults().Fargate(),
		CheckHostPaths:    dockerEngine,
		Logger:            s.log,
	})
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	s.cfg.RunnerID, s.runner = id, r
	return nil
}

// serve starts the HTTP server on the listener bound in Start: /metrics,
// and the API when the orchestrator runs.
func (s *Stack) serve(ctx context.Context) error {
	mux := http.NewServeMux()
	// One token rule for everything this listener serves.
	auth, err := api.NewAuthLocal(s.cfg.Tokens, s.cfg.LocalSecrets)
	if err != nil {
		return err
	}
	if s.cfg.Metrics {
		m, err := s.metricsHandler(auth)
		if err != nil {
			return err
		}
		mux.Handle("GET /metrics", m)
	}
	if s.orch != nil {
		// Signing out ends a session on every replica of this bus.
		sessions, err := orchestrator.OpenSessions(ctx, s.bus)
		if err != nil {
			return err
		}
		auth.UseSessionStore(sessions)
		var reg api.Registry
		if s.reg != nil { // a nil *Registry in the interface would not be nil
			reg = s.reg
		}
		h, err := api.NewHandler(api.Config{Service: s.orch, Registry: reg, Auth: auth, Logger: s.log})
		if err != nil {
			return err
		}
		mux.Handle("/", h)
		inbox, err := web.New(web.Config{Service: s.orch, Auth: auth, Logger: s.log})
		if err != nil {
			return err
		}
		for _, p := range web.Patterns {
			mux.Handle(p, inbox)
		}
		if s.slack != nil && !s.cfg.Slack.SocketMode {
			mux.Handle("POST "+SlackPath, s.slack.Handler())
			mux.Handle("POST "+SlackEventsPath, s.slack.EventsHandler())
		}
	} else {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, wire.Health{Status: "ok"})
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusNotFound, wire.ErrorBody{Code: wire.CodeNoRoute,
				Error: fmt.Sprintf("no endpoint %s %s: this agora runs the runner only, without the API (metrics are at /metrics)", r.Method, r.URL.Path)})
		})
	}
	// Event streams end when this context does, so Shutdown is not held up
	// by a client following /v1/events.
	streams, end := context.WithCancel(context.Background())
	s.endStreams = end
	// Every body is capped (the largest route's cap: a capability upload;
	// each route caps its own lower) and must arrive within its deadline.
	var inner http.Handler = mux
	if s.cfg.WrapHTTP != nil {
		inner = s.cfg.WrapHTTP(inner)
	}
	handler := httplimit.Bodies(inner, wire.MaxCapabilityBytes+1<<20, httplimit.DefaultBodyTimeout)
	s.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return streams }}
	srv, ln := s.srv, s.ln
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.fail(fmt.Errorf("serve the API on %s: %w", ln.Addr(), err))
		}
	}()
	return nil
}

// fail records the first failure and closes Done.
func (s *Stack) fail(err error) {
	s.failOnce.Do(func() {
		s.failure = err
		s.log.Error("agora failed", "error", err)
		close(s.done)
	})
}

// Done is closed when the stack can no longer serve (Err says why) and
// after Stop.
func (s *Stack) Done() <-chan struct{} { return s.done }

// Err is the failure that closed Done; nil while running and after a
// clean Stop.
func (s *Stack) Err() error {
	select {
	case <-s.done:
		return s.failure
	default:
		return nil
	}
}

// URL is the base URL of the API and /metrics, e.g. http://127.0.0.1:7070
// (a listener on every interface is named by its loopback address); empty
// when the stack serves neither.
func (s *Stack) URL() string {
	if s.ln == nil {
		return ""
	}
	addr := s.ln.Addr().(*net.TCPAddr)
	ip := addr.IP
	if ip.IsUnspecified() {
		if ip.To4() != nil {
			ip = net.IPv4(127, 0, 0, 1)
		} else {
			ip = net.IPv6loopback
		}
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(addr.Port))
}

// NATSURL is the NATS server the stack uses: the embedded one's client URL
// or Config.NATSURL.
func (s *Stack) NATSURL() string { return s.natsURL }

// NATSCredsDir is where the embedded server's identities and the
// orchestrator's and runner's credentials files are; "" with Config.NATSURL.
func (s *Stack) NATSCredsDir() string {
	if s.natsIDs == nil {
		return ""
	}
	return s.natsIDs.Dir
}

// Runner is the running runner; nil without that role.
func (s *Stack) Runner() *runner.Runner { return s.runner }

// RunnerID is the runner's id (resolved from DataDir/runner-id by
// default); empty without that role.
func (s *Stack) RunnerID() string {
	if s.runner == nil {
		return ""
	}
	return s.cfg.RunnerID
}

// Config is the configuration the stack runs with, defaults applied.
func (s *Stack) Config() Config { return s.cfg }

// Stop stops the stack gracefully, in order: the API stops taking requests
// and its event streams end; the orchestrator stops consuming and routing;
// the runner lets go of its containers without stopping them (the next
// stack on this data dir adopts them); then the NATS connection closes and
// the embedded server shuts down, its store synced. ctx bounds the waits;
// what ctx cuts short is closed hard. Idempotent: later calls return the
// first call's result.
func (s *Stack) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Stack) stop(ctx context.Context) error {
	var errs []error
	if s.srv != nil {
		s.endStreams()
		if err := s.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop the API: %w", err))
			_ = s.srv.Close()
		}
	} else if s.ln != nil {
		_ = s.ln.Close() // bound but never served: a failed start
	}
	if s.slack != nil {
		if err := s.slack.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop the slack bot: %w", err))
		}
	}
	if s.orch != nil {
		if err := s.orch.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop orchestrator: %w", err))
		}
	}
	if s.runner != nil {
		if err := s.runner.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.runnerBus != nil && s.runnerBus != s.bus {
		s.runnerBus.Close()
	}
	if s.bus != nil {
		s.bus.Close()
	}
	if s.closeEn != nil {
		if err := s.closeEn(); err != nil {
			errs = append(errs, fmt.Errorf("close docker client: %w", err))
		}
	}
	if s.nats != nil {
		s.nats.Shutdown()
	}
	if s.lock != nil {
		if err := unlockDataDir(s.lock); err != nil {
			errs = append(errs, err)
		}
	}
	s.failOnce.Do(func() { close(s.done) })
	err := errors.Join(errs...)
	if err == nil {
		s.log.Info("agora stopped")
	}
	return err
}

// isLoopback reports whether host names this machine's loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidateRunnerID reports a runner id that cannot be one: it ends the
// runner's NATS subjects (no '*', '>', white space or empty '.'-parts).
func ValidateRunnerID(id string) error { return bus.ValidateRunnerID(id) }

// minLevel drops the records of h below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}

// runnerID returns the runner id kept in dataDir/runner-id, making it on
// first use: the host name and 8 random hex digits — or the bare host name
// (the id `agora runner` used before the file) when runnerDir already holds
// dispatches, so their containers are adopted, not orphaned.
func runnerID(dataDir, runnerDir string) (string, error) {
	path := filepath.Join(dataDir, "runner-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("runner id: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "agora"
	}
	id := host
	if entries, err := os.ReadDir(filepath.Join(runnerDir, "dispatches")); err != nil || len(entries) == 0 {
		var suffix [4]byte
		_, _ = rand.Read(suffix[:]) // never fails
		id = host + "-" + hex.EncodeToString(suffix[:])
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("runner id: %w", err)
	}
	return id, nil
}

// s3Options are the S3 settings of the AWS_* variables agora was started
// with (its environ, which is not always the process's): static
// credentials and the region, else the SDK's default chain.
func s3Options(awsEnv []string) storage.S3Options {
	env := map[string]string{}
	for _, kv := range awsEnv {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	o := storage.S3Options{Region: cmp.Or(env["AWS_REGION"], env["AWS_DEFAULT_REGION"])}
	if env["AWS_ACCESS_KEY_ID"] != "" && env["AWS_SECRET_ACCESS_KEY"] != "" {
		o.AccessKeyID, o.SecretAccessKey, o.SessionToken = env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"]
	}
	return o
}
