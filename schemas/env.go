package schemas

// The worker's environment: the variables whoever starts agora-worker (a
// runner, a CI job) sets and the worker reads. docs/contract.md ("Worker
// environment") says what each means, and a test keeps that table and
// these names in step. Runners and the worker use these constants, never
// the literal names, so the two sides cannot drift apart.
const (
	EnvDispatchID              = "AGORA_DISPATCH_ID" // required
	EnvSpecFile                = "AGORA_SPEC_FILE"
	EnvStorageURI              = "AGORA_STORAGE_URI"
	EnvWorkspace               = "AGORA_WORKSPACE"
	EnvNATSURL                 = "AGORA_NATS_URL"
	EnvNATSCredsFile           = "AGORA_NATS_CREDS_FILE"
	EnvDisableNeedsInputHelper = "AGORA_DISABLE_NEEDS_INPUT_HELPER"
	EnvSetupTimeoutSeconds     = "AGORA_SETUP_TIMEOUT_SECONDS"
	EnvGraceSeconds            = "AGORA_GRACE_SECONDS"
	EnvPublishWindowSeconds    = "AGORA_PUBLISH_WINDOW_SECONDS"
	EnvPassthroughEnv          = "AGORA_PASSTHROUGH_ENV"
	EnvClaudePermissionMode    = "AGORA_CLAUDE_PERMISSION_MODE" // passed on to the runtime as well
	EnvLogLevel                = "AGORA_LOG_LEVEL"
	EnvSecretsDir              = "AGORA_SECRETS_DIR"
	EnvEventKeyFile            = "AGORA_EVENT_KEY_FILE"
	EnvWorkerEnvFile           = "AGORA_WORKER_ENV_FILE"
	EnvCancelFile              = "AGORA_CANCEL_FILE"
	EnvExchangeKey             = "AGORA_EXCHANGE_KEY" // the exchange's prefix; its objects are the Exchange* names
	EnvCancelKey               = "AGORA_CANCEL_KEY"
	EnvRestoreURI              = "AGORA_RESTORE_URI"
	EnvRestoreSHA256           = "AGORA_RESTORE_SHA256"
	EnvSnapshotWorkspace       = "AGORA_SNAPSHOT_WORKSPACE"
	EnvMaxWorkspaceBytes       = "AGORA_MAX_WORKSPACE_BYTES"
	EnvMaxArtifacts            = "AGORA_MAX_ARTIFACTS"
	EnvMaxArtifactsBytes       = "AGORA_MAX_ARTIFACTS_BYTES"
	EnvSecretsTimeoutSeconds   = "AGORA_SECRETS_TIMEOUT_SECONDS"
	// EnvPrefetchedSecretPrefix and 20 upper-case hex digits name an aws-sm:
	// ref's value that the platform injected (internal/secrets.PrefetchedEnv).
	EnvPrefetchedSecretPrefix = "AGORA_SECRET_"
)

// The environment of `agora-worker egress-proxy`, which a runner sets on a
// dispatch's egress proxy container (docs/runner.md), with EnvDispatchID.
const (
	EnvEgressAllow  = "AGORA_EGRESS_ALLOW"  // the allow-list, entries separated by commas
	EnvEgressListen = "AGORA_EGRESS_LISTEN" // the proxy's address, default ":3128"
)

// The runtime's dispatch variables: what the worker adds to the runtime's
// environment (docs/contract.md, "What the runtime sees"), besides
// EnvDispatchID and EnvWorkspace.
const (
	EnvTaskID         = "AGORA_TASK_ID"
	EnvRound          = "AGORA_ROUND"
	EnvInputFile      = "AGORA_INPUT_FILE"
	EnvNeedsInputFile = "AGORA_NEEDS_INPUT_FILE"
	EnvSubagent       = "AGORA_SUBAGENT"
	// EnvAnswer and EnvResumeFile are set on resumed rounds only.
	EnvAnswer     = "AGORA_ANSWER"
	EnvResumeFile = "AGORA_RESUME_FILE"
)
