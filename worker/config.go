package worker

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/internal/secrets/awssm"
	"github.com/agoradev/agora/schemas"
)

// Defaults for the knobs a dispatch does not set.
const (
	DefaultWorkspace      = "/workspace"
	DefaultSetupTimeout   = 120 * time.Second
	DefaultTimeout        = time.Hour
	DefaultGrace          = 10 * time.Second
	DefaultPublishWindow  = 10 * time.Second
	DefaultConnectTimeout = 2 * time.Second
)

// Config is one worker run. cmd/agora-worker fills it from the environment;
// tests fill it directly.
type Config struct {
	// DispatchID is AGORA_DISPATCH_ID; required.
	DispatchID string
	// SpecFile is AGORA_SPEC_FILE; when empty the spec is read from
	// StorageURI: <Exchange.Key>/spec.json with an exchange key, else
	// dispatches/<id>/spec.json.
	SpecFile string
	// StorageURI is AGORA_STORAGE_URI (file:///dir or s3://bucket/prefix).
	StorageURI string
	// Workspace is AGORA_WORKSPACE, default /workspace.
	Workspace string
	// NATSURL is AGORA_NATS_URL; when set, events are published there.
	NATSURL string
	// DisableNeedsInputHelper is AGORA_DISABLE_NEEDS_INPUT_HELPER=true: no SKILL overlay.
	DisableNeedsInputHelper bool
	// SetupTimeout bounds agora-setup.sh (AGORA_SETUP_TIMEOUT_SECONDS).
	SetupTimeout time.Duration
	// DefaultTimeout applies when the spec sets no timeout_seconds.
	DefaultTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL for the runtime's group.
	Grace time.Duration
	// PublishWindow bounds how long one event is retried before the worker
	// gives up on NATS and relies on its stdout line being recovered.
	PublishWindow time.Duration
	// ConnectTimeout bounds the first connection attempt to NATS.
	ConnectTimeout time.Duration
	// Environ is the worker's own environment. Only allow-listed names, and
	// those named in AGORA_PASSTHROUGH_ENV, reach the runtime.
	Environ []string
	// ExecutableDir is put first on the runtime's PATH so scripts find
	// `agora-worker ask`. Empty: not added.
	ExecutableDir string
	// Adapters are the runtimes this worker can run.
	Adapters []adapters.Adapter
	// Secrets resolves secret refs found in env bundles; nil uses
	// BuiltinSecrets: env:, file:, local: (in SecretsDir) and aws-sm: (with
	// the AWS variables in Environ, bounded by SecretsTimeout).
	Secrets SecretResolver
	// SecretsDir is AGORA_SECRETS_DIR, where local:NAME refs are read;
	// default DefaultSecretsDir.
	SecretsDir string
	// EventKeyFile is AGORA_EVENT_KEY_FILE: a file holding the hex key the
	// runner verifies event lines with (schemas.SignEventLine). Run reads and
	// deletes it before anything else runs; empty: events are not signed.
	EventKeyFile string
	// NATSCredsFile is AGORA_NATS_CREDS_FILE: the worker's own NATS user
	// (a creds file, allowed to publish only this dispatch's events). Run
	// reads and deletes it before anything else runs; empty: connect to
	// NATSURL without credentials.
	NATSCredsFile string
	// Exchange is what a runner that mounts nothing (ECS Fargate) passes
	// through storage instead (ExchangeFromEnv reads it).
	Exchange Exchange
	// Artifacts are AGORA_MAX_ARTIFACTS and AGORA_MAX_ARTIFACTS_BYTES, the
	// caps on what one round hands back; zero: the contract's defaults.
	Artifacts ArtifactLimits
	// SecretsTimeout is AGORA_SECRETS_TIMEOUT_SECONDS, the bound on one AWS
	// Secrets Manager lookup; default awssm.DefaultTimeout.
	SecretsTimeout time.Duration
	// Stdout receives every event as one JSON line, and nothing else.
	Stdout io.Writer
	// Stderr receives the runtime's and the setup script's output, with
	// every resolved secret redacted.
	Stderr io.Writer
	// Logger receives the worker's own log lines; Run redacts secrets from
	// their messages and attributes.
	Logger *slog.Logger
	// LogWriter, when Logger writes through one, gets the event key once
	// Run has read it, and signs the worker's log lines from then on.
	LogWriter *LogWriter
	// EnvProblems are errors cmd found while reading the environment (a
	// malformed number, say). They fail the dispatch with worker-failed, so
	// they reach the bus instead of only stderr.
	EnvProblems error
}

// WithDefaults returns c with every unset knob at its default.
func (c Config) WithDefaults() Config {
	if c.Workspace == "" {
		c.Workspace = DefaultWorkspace
	}
	if c.SetupTimeout <= 0 {
		c.SetupTimeout = DefaultSetupTimeout
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.PublishWindow <= 0 {
		c.PublishWindow = DefaultPublishWindow
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SecretsDir == "" {
		c.SecretsDir = DefaultSecretsDir
	}
	if c.SecretsTimeout <= 0 {
		c.SecretsTimeout = awssm.DefaultTimeout
	}
	if c.Exchange.MaxWorkspaceBytes == 0 {
		c.Exchange.MaxWorkspaceBytes = DefaultMaxWorkspaceBytes
	}
	if c.Secrets == nil {
		c.Secrets = BuiltinSecrets{Environ: c.Environ, LocalDir: c.SecretsDir,
			AWS: awssm.New(awssm.Options{Environ: c.Environ, Timeout: c.SecretsTimeout, Logger: c.Logger})}
	}
	return c
}

// Validate names every problem with the configuration.
func (c Config) Validate() error {
	errs := []error{c.EnvProblems}
	if c.DispatchID == "" {
		errs = append(errs, errors.New(schemas.EnvDispatchID+" is required"))
	}
	if c.SpecFile == "" && c.StorageURI == "" {
		errs = append(errs, errors.New("no dispatch spec: set "+schemas.EnvSpecFile+", or "+schemas.EnvStorageURI+" to read dispatches/<id>/spec.json"))
	}
	if !filepath.IsAbs(c.Workspace) {
		errs = append(errs, fmt.Errorf(schemas.EnvWorkspace+" %q must be an absolute path", c.Workspace))
	}
	errs = append(errs, c.Exchange.validate(c.StorageURI != "")...)
	if len(c.Adapters) == 0 {
		errs = append(errs, errors.New("no runtime adapters configured"))
	}
	return errors.Join(errs...)
}
