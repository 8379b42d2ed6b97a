package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// Defaults for Config.
const (
	DefaultSlots        = 4
	DefaultGrace        = 10 * time.Second
	DefaultLogCap       = 4 << 20
	DefaultHeartbeat    = 15 * time.Second
	DefaultLeaseTimeout = 2 * time.Minute
	DefaultTimeout      = time.Hour
	DefaultSnapshotWait = 2 * time.Minute
	// DefaultPublishWindow: see Config.PublishWindow.
	DefaultPublishWindow = 30 * time.Second
	// ContainerUser is the worker image's non-root user.
	ContainerUser = "65532:65532"
)

// Config is one runner.
type Config struct {
	// ID names this runner in claims and container labels. It must be stable
	// across restarts on one host so the next process adopts its containers;
	// default: the host name.
	ID string
	// Slots is how many dispatches run at once.
	Slots int
	// Image is the worker image requests run in unless they name another.
	Image string
	// DataDir holds per-dispatch spec files and workspaces on this host.
	DataDir string
	// StorageURI is handed to workers (AGORA_STORAGE_URI); Store is the
	// runner's own handle on the same storage.
	StorageURI string
	Store      storage.Store
	// WorkerNATSURL, when set, is handed to workers so they publish their
	// own events; empty (the default) means the runner relays them.
	WorkerNATSURL string
	// WorkerNATSSigner, with WorkerNATSURL, mints each worker its own NATS
	// user (natsauth): it may publish only its dispatch's events and logs,
	// and expires with the dispatch. The credentials reach the worker in a
	// file of its key mount, read and deleted before the sub-agent starts
	// (natscreds.go). Nil hands workers no credentials: for a NATS that
	// needs none.
	WorkerNATSSigner *natsauth.Signer
	// WorkerEnv is extra KEY=value lines for every worker (e.g. credentials
	// for aws-sm: secret refs; S3 storage needs none, see stage.go). The
	// worker never passes them on to the sub-agent. They reach the worker
	// in a file of its key mount, never the container's environment
	// (eventkey.go).
	WorkerEnv []string
	// SecretsDir is the local secret store on this host (internal/secrets,
	// `agora secret set`): a dispatch's local:NAME refs are copied from it
	// into the dispatch's container. "" means no local secrets.
	SecretsDir string
	// AWSEnv is the runner's own AWS_* variables: the AWS configuration it
	// resolves a dispatch's aws-sm: refs with, on this host (the SDK's
	// default chain applies too). They never enter a container.
	AWSEnv []string
	// SecretsTimeout bounds one aws-sm lookup; zero means
	// awssm.DefaultTimeout.
	SecretsTimeout time.Duration
	// Resources apply when a request sets none; each at most its maximum.
	Resources compute.Resources
	// MaxMemoryMB, MaxPids and MaxTimeout are the most a request may ask
	// for on this runner: one over them fails (worker-failed) naming the
	// maximum, before a container is created. MaxCPUs caps the CPUs a
	// request gets instead. Zero means the default (DefaultMax…).
	MaxMemoryMB int64
	MaxCPUs     float64
	MaxPids     int64
	MaxTimeout  time.Duration
	// MaxWorkspaceBytes bounds a dispatch's workspace: a container whose
	// workspace grows past it is killed (provider-failed, saying so) and a
	// snapshot of one over it is refused. Zero means DefaultMaxWorkspaceMB;
	// WorkspaceCheck is how often it is measured (DefaultWorkspaceCheck).
	MaxWorkspaceBytes int64
	WorkspaceCheck    time.Duration
	// MaxArtifacts and MaxArtifactBytes cap the artifacts one round hands
	// back (count, total bytes); the worker fails a round over them.
	// Zero means schemas.DefaultMaxArtifacts and DefaultMaxArtifactBytes.
	MaxArtifacts     int
	MaxArtifactBytes int64
	// AllowHostNetwork lets a request run with network "host": the host's
	// network namespace, loopback included (NATS, the API). Off by default;
	// such a request fails (worker-failed) naming the flag.
	AllowHostNetwork bool
	// EgressUplink is the network the egress proxy of a dispatch with
	// network egress reaches the listed hosts through (egress.go): the
	// engine's default bridge unless an operator names another network
	// (one with the right route out, or a test's).
	EgressUplink string
	// NoHostMounts says the engine cannot mount this host's files into a
	// container (ECS on Fargate): each dispatch's spec, keys, cancel
	// marker and workspace travel through storage, which must then be S3,
	// its events are relayed from its output, and its env bundles' aws-sm
	// secrets are resolved by the platform (exchange.go, docs/ecs.md).
	NoHostMounts bool
	// CheckHostPaths makes Start prove that the engine sees DataDir at the
	// same path as this process before it takes any work (checkHostPaths):
	// the runner hands the engine host paths under DataDir, so agora in a
	// container must have its data dir mounted at the same path as on the
	// host, and an engine on another machine cannot be used at all. The
	// composition root sets it for a Docker engine.
	CheckHostPaths bool
	// Grace is the time between SIGTERM and SIGKILL when a container is
	// stopped; the worker gets a shorter one for the runtime inside.
	Grace time.Duration
	// DefaultTimeout applies when a spec sets no timeout_seconds.
	DefaultTimeout time.Duration
	// LogCap bounds the output kept in storage per dispatch.
	LogCap int64
	// Heartbeat is how often a running dispatch's queue message and claim
	// are refreshed; LeaseTimeout is when another runner may declare a
	// silent runner's dispatch lost.
	Heartbeat    time.Duration
	LeaseTimeout time.Duration
	// SnapshotWait bounds how long a resumed round waits for the previous
	// round's workspace snapshot to appear.
	SnapshotWait time.Duration
	// PublishWindow bounds each try to store an event; a terminal event
	// not stored within it leaves the dispatch to be settled again later
	// (docs/runner.md, "No outcome lost"). Default DefaultPublishWindow.
	PublishWindow time.Duration
	Bus           *bus.Bus
	Engine        compute.Engine
	Logger        *slog.Logger
	// Trace, when set, sees each dispatch pass its phases (trace.go).
	Trace Trace
}

// WithDefaults returns c with every unset knob at its default.
func (c Config) WithDefaults() Config {
	if c.ID == "" {
		c.ID, _ = os.Hostname()
	}
	if c.Slots <= 0 {
		c.Slots = DefaultSlots
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.LogCap <= 0 {
		c.LogCap = DefaultLogCap
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.LeaseTimeout <= 0 {
		c.LeaseTimeout = DefaultLeaseTimeout
	}
	if c.SnapshotWait <= 0 {
		c.SnapshotWait = DefaultSnapshotWait
	}
	if c.MaxMemoryMB <= 0 {
		c.MaxMemoryMB = DefaultMaxMemoryMB
	}
	if c.MaxCPUs <= 0 {
		c.MaxCPUs = DefaultMaxCPUs()
	}
	if c.MaxPids <= 0 {
		c.MaxPids = DefaultMaxPids
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	c.DefaultTimeout = min(c.DefaultTimeout, c.MaxTimeout)
	if c.MaxWorkspaceBytes <= 0 {
		c.MaxWorkspaceBytes = DefaultMaxWorkspaceMB << 20
	}
	if c.WorkspaceCheck <= 0 {
		c.WorkspaceCheck = DefaultWorkspaceCheck
	}
	if c.MaxArtifacts <= 0 {
		c.MaxArtifacts = schemas.DefaultMaxArtifacts
	}
	if c.MaxArtifactBytes <= 0 {
		c.MaxArtifactBytes = schemas.DefaultMaxArtifactBytes
	}
	if c.PublishWindow <= 0 {
		c.PublishWindow = DefaultPublishWindow
	}
	if c.EgressUplink == "" {
		c.EgressUplink = DefaultEgressUplink
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("runner id is required"))
	}
	if c.Image == "" {
		errs = append(errs, errors.New("worker image is required (agora image build)"))
	}
	if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("data dir %q must be an absolute path", c.DataDir))
	}
	if c.SecretsDir != "" && !filepath.IsAbs(c.SecretsDir) {
		errs = append(errs, fmt.Errorf("secrets dir %q must be an absolute path", c.SecretsDir))
	}
	if c.Store == nil || c.StorageURI == "" {
		errs = append(errs, errors.New("storage is required"))
	}
	if c.Bus == nil {
		errs = append(errs, errors.New("bus is required"))
	}
	if c.Engine == nil {
		errs = append(errs, errors.New("compute engine is required"))
	}
	if c.NoHostMounts && !strings.HasPrefix(c.StorageURI, "s3://") {
		errs = append(errs, fmt.Errorf("storage %q is not S3: a runner whose containers get no host files (ECS on Fargate) hands them their files through S3; give --storage s3://bucket/prefix", c.StorageURI))
	}
	if c.MaxMemoryMB > schemas.MaxMemoryMB {
		errs = append(errs, fmt.Errorf("--max-memory-mb %d is over the contract's %d", c.MaxMemoryMB, schemas.MaxMemoryMB))
	}
	if c.MaxPids > schemas.MaxPids {
		errs = append(errs, fmt.Errorf("--max-pids %d is over the contract's %d", c.MaxPids, schemas.MaxPids))
	}
	if c.MaxArtifacts > MaxArtifacts {
		errs = append(errs, fmt.Errorf("--max-artifacts %d is over %d, what one event lists", c.MaxArtifacts, MaxArtifacts))
	}
	if c.MaxWorkspaceBytes > MaxWorkspaceMB<<20 {
		errs = append(errs, fmt.Errorf("--max-workspace-mb %d is over %d (16 TiB)", c.MaxWorkspaceBytes>>20, MaxWorkspaceMB))
	}
	if c.MaxTimeout > schemas.MaxTimeoutSeconds*time.Second {
		errs = append(errs, fmt.Errorf("--max-timeout %s is over the contract's 7 days", c.MaxTimeout))
	}

	return errors.Join(errs...)
}
