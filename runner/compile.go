package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/schemas"
)

// Paths inside every dispatch container.
const (
	containerSpecDir   = "/agora"
	containerSpecFile  = "/agora/spec.json"
	containerWorkspace = "/workspace"
	// LabelRunner names the runner that owns a container.
	LabelRunner = "agora.runner"
)

// hostPaths are where one dispatch's files live on this host.
type hostPaths struct {
	// SpecDir holds spec.json, mounted read-only at /agora.
	SpecDir string
	// Workspace is mounted at /workspace.
	Workspace string
	// StageDir is the dispatch's staged store (see stage.go), mounted at
	// the same path and given to the worker as its storage. The storage
	// itself is never mounted.
	StageDir string
	// Secrets is what the dispatch's env bundles need from the runner: its
	// local secrets and the aws-sm values resolved on this host, mounted
	// read-only.
	Secrets dispatchSecrets
	// KeyDir holds the file with the dispatch's event key, mounted at
	// /run/agora/key for the worker to read and delete (eventkey.go); ""
	// for none.
	KeyDir string
	// NATSCreds reports that KeyDir holds the worker's NATS credentials
	// (natscreds.go).
	NATSCreds bool
	// CancelDir is where the runner creates the cancel marker before it
	// stops the container for a cancel, mounted read-only at
	// /run/agora/cancel (cancel.go); "" for none.
	CancelDir string
	// Remote replaces all of the above when the engine cannot mount this
	// host's files (Config.NoHostMounts, exchange.go).
	Remote *remoteFiles
}

// compileContainer turns a dispatch request into the container that runs
// it. Pure: the same request, config and paths give the same spec (golden
// tests hold it), and everything that touches the host happens elsewhere.
func compileContainer(req *schemas.DispatchRequest, cfg Config, p hostPaths) compute.ContainerSpec {
	spec := &req.Spec
	image := req.Image
	if image == "" {
		image = cfg.Image
	}
	// The worker's grace for the runtime must end before the engine's
	// SIGKILL, or the cancelled event is never written.
	workerGrace := cfg.Grace - 2*time.Second
	if workerGrace < time.Second {
		workerGrace = time.Second
	}
	if p.Remote != nil {
		return compileRemote(req, cfg, *p.Remote, image, workerGrace)
	}
	env := []string{
		schemas.EnvDispatchID + "=" + spec.DispatchID,
		schemas.EnvSpecFile + "=" + containerSpecFile,
		schemas.EnvWorkspace + "=" + containerWorkspace,
		schemas.EnvStorageURI + "=" + workerStorage(cfg, p),
		schemas.EnvGraceSeconds + "=" + strconv.Itoa(int(workerGrace/time.Second)),
		"HOME=/tmp",
	}
	network := req.NetworkMode()
	if workerPublishes(cfg, req) {
		env = append(env, schemas.EnvNATSURL+"="+cfg.WorkerNATSURL)
		if p.KeyDir != "" && p.NATSCreds {
			env = append(env, schemas.EnvNATSCredsFile+"="+containerNATSCredsFile)
		}
	}
	env = append(env, artifactEnv(cfg)...)
	if p.Secrets.Dir != "" {
		env = append(env, schemas.EnvSecretsDir+"="+containerSecretsDir)
	}
	if p.KeyDir != "" {
		env = append(env, schemas.EnvEventKeyFile+"="+containerKeyFile)
	}
	if p.CancelDir != "" {
		env = append(env, schemas.EnvCancelFile+"="+containerCancelFile)
	}
	// The operator's worker environment goes in a file beside the key, never
	// into the container's environment (eventkey.go).
	if p.KeyDir != "" && len(cfg.WorkerEnv) > 0 {
		env = append(env, schemas.EnvWorkerEnvFile+"="+containerWorkerEnvFile)
	}

	mounts := []compute.Mount{
		{Source: p.SpecDir, Target: containerSpecDir, ReadOnly: true},
		{Source: p.Workspace, Target: containerWorkspace},
	}
	if p.StageDir != "" {
		mounts = append(mounts, compute.Mount{Source: p.StageDir, Target: p.StageDir})
	}
	if p.KeyDir != "" {
		mounts = append(mounts, compute.Mount{Source: p.KeyDir, Target: containerKeyDir})
	}
	if p.CancelDir != "" {
		mounts = append(mounts, compute.Mount{Source: p.CancelDir, Target: containerCancelDir, ReadOnly: true})
	}
	if p.Secrets.Dir != "" {
		mounts = append(mounts, compute.Mount{Source: p.Secrets.Dir, Target: containerSecretsDir, ReadOnly: true})
	}
	res := containerResources(req, cfg) // limits.go: checked, at most the maximums
	var userNetwork string
	var dns []string
	if network == schemas.NetworkEgress {
		// The dispatch's internal network, whose only way out is its
		// proxy (egress.go).
		network, userNetwork, dns = "", egressName(cfg.ID, spec.DispatchID), []string{unreachableDNS}
		env = append(env, egressEnv()...)
	}
	return compute.ContainerSpec{
		Name:        containerName(cfg.ID, spec.DispatchID),
		Image:       image,
		Env:         env,
		Labels:      containerLabels(spec, cfg),
		User:        ContainerUser,
		WorkingDir:  containerWorkspace,
		Mounts:      mounts,
		NetworkMode: network,
		Network:     userNetwork,
		DNS:         dns,
		Resources:   res,
		Init:        true,
		StopTimeout: cfg.Grace,
	}
}

// compileRemote is compileContainer for an engine without host mounts:
// every file travels through storage (exchange.go), the worker's events
// through its output (relayed: it gets no NATS credentials), and the
// env bundles' aws-sm secrets are resolved by the platform at start.
func compileRemote(req *schemas.DispatchRequest, cfg Config, rf remoteFiles, image string, workerGrace time.Duration) compute.ContainerSpec {
	spec := &req.Spec
	env := []string{
		schemas.EnvDispatchID + "=" + spec.DispatchID,
		schemas.EnvWorkspace + "=" + containerWorkspace,
		schemas.EnvStorageURI + "=" + cfg.StorageURI,
		schemas.EnvExchangeKey + "=" + rf.Exchange,
		schemas.EnvCancelKey + "=" + rf.Exchange + "/" + schemas.ExchangeCancel,
		schemas.EnvGraceSeconds + "=" + strconv.Itoa(int(workerGrace/time.Second)),
		"HOME=/tmp",
	}
	if cfg.MaxWorkspaceBytes > 0 {
		env = append(env, schemas.EnvMaxWorkspaceBytes+"="+strconv.FormatInt(cfg.MaxWorkspaceBytes, 10))
	}
	env = append(env, artifactEnv(cfg)...)
	if !req.Fresh() {
		env = append(env, schemas.EnvSnapshotWorkspace+"=true")
	}
	if rf.Restore != nil {
		env = append(env, schemas.EnvRestoreURI+"="+rf.Restore.URI, schemas.EnvRestoreSHA256+"="+rf.Restore.SHA256)
	}
	return compute.ContainerSpec{
		Name:        containerName(cfg.ID, spec.DispatchID),
		Image:       image,
		Env:         env,
		Secrets:     rf.Secrets,
		Labels:      containerLabels(spec, cfg),
		User:        ContainerUser,
		WorkingDir:  containerWorkspace,
		ScratchDirs: []string{containerWorkspace},
		NetworkMode: req.NetworkMode(),
		Resources:   containerResources(req, cfg),
		Init:        true,
		StopTimeout: cfg.Grace,
	}
}

func containerLabels(spec *schemas.DispatchSpec, cfg Config) map[string]string {
	labels := map[string]string{
		compute.LabelDispatchID: spec.DispatchID,
		compute.LabelRound:      strconv.Itoa(spec.EffectiveRound()),
		LabelRunner:             cfg.ID,
	}
	if spec.TaskID != "" {
		labels[compute.LabelTaskID] = spec.TaskID
	}
	return labels
}

// containerName is unique per dispatch and runner, so a second create for
// the same dispatch by the same runner fails instead of starting it twice,
// while another agora installation sharing the Docker engine (its own
// runner id, task ids that may repeat ours) never collides with it. Claims
// guarantee that only one runner ever creates a dispatch's container. The
// runner id enters as a short hash: it may hold characters Docker refuses
// in names, and the name stays readable.
func containerName(runnerID, dispatchID string) string {
	sum := sha256.Sum256([]byte(runnerID))
	return "agora-" + dispatchID + "-" + hex.EncodeToString(sum[:4])
}

// workerPublishes reports whether a host-mounted dispatch's worker
// publishes its own events: only with --worker-nats, and not from a
// container without a network, nor one whose only way out is its egress
// proxy. Otherwise the runner relays them from its output.
func workerPublishes(cfg Config, req *schemas.DispatchRequest) bool {
	network := req.NetworkMode()
	return cfg.WorkerNATSURL != "" && network != schemas.NetworkNone && network != schemas.NetworkEgress
}

// workerStorage is the worker's AGORA_STORAGE_URI: the staged store when
// there is one, else the storage itself.
func workerStorage(cfg Config, p hostPaths) string {
	if p.StageDir != "" {
		return "file://" + p.StageDir
	}
	return cfg.StorageURI
}

// artifactEnv tells the worker this runner's artifact caps when they are
// not the contract's defaults, which the worker applies by itself.
func artifactEnv(cfg Config) []string {
	var env []string
	if cfg.MaxArtifacts > 0 && cfg.MaxArtifacts != schemas.DefaultMaxArtifacts {
		env = append(env, schemas.EnvMaxArtifacts+"="+strconv.Itoa(cfg.MaxArtifacts))
	}
	if cfg.MaxArtifactBytes > 0 && cfg.MaxArtifactBytes != schemas.DefaultMaxArtifactBytes {
		env = append(env, schemas.EnvMaxArtifactsBytes+"="+strconv.FormatInt(cfg.MaxArtifactBytes, 10))
	}
	return env
}
