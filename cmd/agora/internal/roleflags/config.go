package roleflags

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// Config checks the parsed command line and returns the roles' configuration
// it and environ (os.Environ form) say, defaults left to roles but the
// ones a verb has its own of. A demo without --data-dir gets none: the
// demo makes a temporary one.
func (f *Flags) Config(environ []string) (roles.Config, error) {
	if f.declErr != nil {
		return roles.Config{}, f.declErr
	}
	if err := f.fromEnv(environ); err != nil {
		return roles.Config{}, err
	}
	var cfg roles.Config
	var err error
	switch f.verb {
	case Serve:
		cfg, err = f.serve(environ)
	case Runner:
		cfg, err = f.runner(environ)
	case Orchestrator:
		cfg, err = f.orchestrator(environ)
	case Demo:
		return roles.Config{DataDir: f.dataDir, Listen: "127.0.0.1:0", Runner: true, Orchestrator: true, Slots: 2,
			WorkerBinary: f.worker, Busybox: f.busybox, DockerHost: getenv(environ, "DOCKER_HOST")}, nil
	}
	if err != nil {
		return cfg, err
	}
	if cfg.MemoryLimit, err = f.memoryLimit(environ, cgroupMemoryLimit("/")); err != nil {
		return cfg, err
	}
	cfg.NATSAllowAnonymous = f.nats.allowAnonymous
	cfg.AWSEnv = awsEnv(environ)
	if err := cfg.WithDefaults().Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func (f *Flags) serve(environ []string) (roles.Config, error) {
	auth, err := f.nats.auth(environ)
	if err != nil {
		return roles.Config{}, err
	}
	tokens, err := f.readTokens(environ)
	if err != nil {
		return roles.Config{}, err
	}
	if f.noRunner && !f.fs.Changed("max-cpus") {
		f.max.cpus = orchestrator.DefaultMaximums().CPUs // no runner here: this host's cores say nothing
	}
	if err := f.max.check(); err != nil {
		return roles.Config{}, err
	}
	runnerFlags, orchFlags := f.given(roleRunner), f.given(roleOrch)
	switch {
	case f.noRunner && f.runnerOnly:
		return roles.Config{}, errors.New("--no-runner and --runner-only exclude each other: pick the role this process leaves out")
	case f.noRunner && len(runnerFlags) > 0:
		return roles.Config{}, fmt.Errorf("%s configure the runner, which --no-runner leaves out", strings.Join(runnerFlags, ", "))
	case f.runnerOnly && len(orchFlags) > 0:
		return roles.Config{}, fmt.Errorf("%s configure the orchestrator, which --runner-only leaves out", strings.Join(orchFlags, ", "))
	case f.runnerOnly && f.natsURL == "":
		return roles.Config{}, errors.New("--runner-only needs --nats URL: the NATS server the orchestrator uses")
	case f.natsURL != "" && f.natsPort != 0:
		return roles.Config{}, errors.New("--nats-port is the embedded server's port: not with --nats")
	case f.natsURL == "" && f.nats.given():
		return roles.Config{}, errors.New("--nats-creds, --nats-nkey, --nats-user and --nats-tls-… are for the server at --nats; the embedded one uses the identities in <data-dir>/nats-auth")
	case f.natsURL == "" && f.nats.replicas > 1:
		return roles.Config{}, fmt.Errorf("--nats-replicas %d needs --nats: the embedded server is one node", f.nats.replicas)
	case f.natsPort < 0 || f.natsPort > 65535:
		return roles.Config{}, fmt.Errorf("--nats-port %d: want a port, 1-65535 (0: a free one)", f.natsPort)
	}
	if f.compute != computeDocker && !f.measuring() {
		return roles.Config{}, fmt.Errorf("--compute %q: want docker (agora runner --compute ecs runs on ECS)", f.compute)
	}
	if err := f.checkRunner(); err != nil {
		return roles.Config{}, err
	}
	if err := checkRetention(f.retention); err != nil {
		return roles.Config{}, err
	}
	if err := checkCIRoute(f.ciRoute); err != nil {
		return roles.Config{}, err
	}
	slack, err := f.slack.config(f.fs)
	if err != nil {
		return roles.Config{}, err
	}
	if f.runnerOnly {
		slack = nil // $AGORA_SLACK_TOKEN in the environment of a runner
	}
	dataDir := f.dataDir
	if dataDir == "" {
		if dataDir, err = defaultDataDir(environ); err != nil {
			return roles.Config{}, err
		}
	}
	abs, err := filepath.Abs(dataDir) // containers mount paths under it
	if err != nil {
		return roles.Config{}, fmt.Errorf("--data-dir %s: %v", dataDir, err)
	}
	storage := f.storage
	if storage == "" {
		storage = "file://" + filepath.Join(abs, "storage")
	}
	secretsDir := f.secretsDir
	if secretsDir != "" {
		if secretsDir, err = filepath.Abs(secretsDir); err != nil {
			return roles.Config{}, fmt.Errorf("--secrets-dir: %v", err)
		}
	}
	if err := checkStorage(storage); err != nil {
		return roles.Config{}, err
	}
	cfg := roles.Config{
		DataDir:      abs,
		NATSURL:      f.natsURL,
		NATSAuth:     auth,
		NATSReplicas: f.nats.replicas,
		NATSPort:     f.natsPort,
		StorageURI:   storage,
		Listen:       f.listen,
		Tokens:       tokens,
		LocalSecrets: f.localSecrets,
		Orchestrator: !f.runnerOnly,
		Runner:       !f.noRunner,
		Slots:        f.slots,
		Image:        f.image,
		RunnerID:     f.id,
		WorkerEnv:    f.workerEnv,
		SecretsDir:   secretsDir,
		WorkerBinary: f.worker,
		Metrics:      true,
		Max:          f.max.maximums(),
		CIRoute:      f.ciRoute,
		Retention:    f.retention,
		Slack:        slack,
		DockerHost:   getenv(environ, "DOCKER_HOST"),
		// The measuring engine (docs/capacity.md), checked above.
		MeasuringEngine: f.measuring(),
		MeasuringReplay: f.compute == computeReplay,
	}
	f.max.runnerConfig(&cfg)
	if cfg.Orchestrator {
		cfg.Answerers = &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret}
	}
	return cfg, nil
}

// measuring reports --compute process or replay: the measuring engine.
func (f *Flags) measuring() bool {
	return f.compute == computeProcess || f.compute == computeReplay
}

// checkRunner checks the runner flags serve and runner share.
func (f *Flags) checkRunner() error {
	if f.slots < 1 {
		return errors.New("--slots must be at least 1")
	}
	// The measuring engine runs sub-agents with the operator's own
	// rights: asked for twice, or refused.
	switch {
	case f.measuring() && !f.benchmark:
		return fmt.Errorf("--compute %s runs every dispatch as a plain, unisolated process of this host, for measuring agora only (docs/capacity.md): add --benchmark-engine to ask for it", f.compute)
	case f.benchmark && !f.measuring():
		return errors.New("--benchmark-engine goes with --compute process or replay only")
	case f.measuring() && f.image != "":
		return fmt.Errorf("--compute %s runs the agora-worker binary, not an image: drop --image", f.compute)
	}
	for _, kv := range f.workerEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("--worker-env %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

func (f *Flags) runner(environ []string) (roles.Config, error) {
	if err := f.max.check(); err != nil {
		return roles.Config{}, err
	}
	auth, err := f.nats.auth(environ)
	if err != nil {
		return roles.Config{}, err
	}
	switch {
	case f.natsURL == "":
		return roles.Config{}, errors.New("--nats is required: the URL of the NATS server, e.g. --nats nats://127.0.0.1:4222")
	case f.signerFile != "" && f.workerNATS == "":
		return roles.Config{}, errors.New("--worker-nats-signer mints credentials for --worker-nats: give both")
	case f.signerFile != "" && f.nats.creds == "":
		return roles.Config{}, errors.New("--worker-nats-signer needs --nats-creds: the workers' users belong to the runner's account")
	case f.compute != computeDocker && f.compute != computeECS && !f.measuring():
		return roles.Config{}, fmt.Errorf("--compute %q: want docker or ecs", f.compute)
	case f.compute == computeReplay && f.workerNATS != "":
		return roles.Config{}, errors.New("--compute replay prints each dispatch's events for the runner to relay; it cannot publish them: drop --worker-nats")
	case f.compute == computeECS && f.image == "":
		return roles.Config{}, errors.New("--compute ecs needs --image: an image ECS pulls (e.g. from ECR); nothing is built for ECS")
	case f.slots < 1:
		return roles.Config{}, errors.New("--slots must be at least 1")
	case f.grace < time.Second:
		return roles.Config{}, errors.New("--grace must be at least 1s (Docker counts it in seconds)")
	case f.logCap < 1:
		return roles.Config{}, errors.New("--log-cap must be at least 1 (bytes of output kept per dispatch)")
	case f.cpus < 0 || f.memoryMB < 0 || f.pids < 0:
		return roles.Config{}, errors.New("--cpus, --memory-mb and --pids must not be negative (0 means no limit)")
	case f.memoryMB > 0 && f.memoryMB < 6:
		return roles.Config{}, errors.New("--memory-mb must be at least 6 (Docker's minimum), or 0 for no limit")
	case f.memoryMB > f.max.memoryMB:
		return roles.Config{}, fmt.Errorf("--memory-mb %d is over --max-memory-mb %d", f.memoryMB, f.max.memoryMB)
	case f.pids > f.max.pids:
		return roles.Config{}, fmt.Errorf("--pids %d is over --max-pids %d", f.pids, f.max.pids)
	}
	var ecsCfg *roles.ECSConfig
	if f.compute == computeECS {
		ecsCfg = f.ecs.config(f.grace)
		if err := ecsCfg.Engine.WithDefaults().Validate(); err != nil {
			return roles.Config{}, err
		}
	}
	tokens, err := f.readTokens(environ)
	if err != nil {
		return roles.Config{}, err
	}
	if err := f.checkRunner(); err != nil {
		return roles.Config{}, err
	}
	// The runner's own directory holds its lock and runner-id too, so a
	// serve on ~/.agora and a runner on ~/.agora/runner never clash.
	base, baseErr := defaultDataDir(environ)
	dataDir := f.dataDir
	if dataDir == "" {
		if baseErr != nil {
			return roles.Config{}, baseErr
		}
		dataDir = filepath.Join(base, "runner")
	}
	abs, err := filepath.Abs(dataDir) // containers mount paths under it
	if err != nil {
		return roles.Config{}, fmt.Errorf("--data-dir %s: %v", dataDir, err)
	}
	secretsDir := f.secretsDir
	if secretsDir == "" && baseErr == nil {
		secretsDir = filepath.Join(base, "secrets")
	}
	if secretsDir != "" {
		if secretsDir, err = filepath.Abs(secretsDir); err != nil {
			return roles.Config{}, fmt.Errorf("--secrets-dir: %v", err)
		}
	}
	storage := f.storage
	if storage == "" {
		storage = "file://" + filepath.Join(abs, "storage")
	}
	if err := checkStorage(storage); err != nil {
		return roles.Config{}, err
	}
	if ecsCfg != nil && ecsCfg.Engine.WithDefaults().Fargate() {
		// Its dispatches get no host files: the worker reads them from S3
		// with the task role (docs/ecs.md, "The runner on Fargate").
		switch {
		case !strings.HasPrefix(storage, "s3://"):
			return roles.Config{}, errors.New("the runner on Fargate needs S3 storage: its dispatches get no host files and read theirs from storage; give --storage s3://bucket/prefix (docs/ecs.md)")
		case f.ecs.taskRole == "":
			return roles.Config{}, errors.New("the runner on Fargate needs --ecs-task-role: the worker reads and writes its dispatch's files in S3 with that role (docs/ecs.md, \"IAM\")")
		}
	}
	res := f.resources()
	cfg := roles.Config{
		DataDir:              abs,
		RunnerDataDir:        abs,
		NATSURL:              f.natsURL,
		NATSAuth:             auth,
		NATSReplicas:         f.nats.replicas,
		StorageURI:           storage,
		Runner:               true,
		Slots:                f.slots,
		Image:                f.image,
		RunnerID:             f.id,
		WorkerNATSURL:        f.workerNATS,
		WorkerNATSSignerFile: f.signerFile,
		Grace:                f.grace,
		LogCap:               f.logCap,
		WorkerEnv:            f.workerEnv,
		SecretsDir:           secretsDir,
		Resources:            &res,
		Max:                  f.max.maximums(),
		Listen:               f.listen,
		Tokens:               tokens,
		Metrics:              f.listen != "",
		DockerHost:           getenv(environ, "DOCKER_HOST"),
		ECS:                  ecsCfg,
		MeasuringEngine:      f.measuring(),
		MeasuringReplay:      f.compute == computeReplay,
	}
	f.max.runnerConfig(&cfg)
	return cfg, nil
}

// resources are --cpus, --memory-mb and --pids, checked against their
// maximums already, CPUs capped at --max-cpus (the default 2 on a host
// with one core), so no conversion wraps.
func (f *Flags) resources() compute.Resources {
	nano, _ := units.NanoCPUs(min(f.cpus, f.max.cpus))
	mem, _ := units.MiB(f.memoryMB)
	return compute.Resources{NanoCPUs: nano, MemoryBytes: mem, PidsLimit: f.pids}
}

func (f *Flags) orchestrator(environ []string) (roles.Config, error) {
	if err := f.max.check(); err != nil {
		return roles.Config{}, err
	}
	if err := checkRetention(f.retention); err != nil {
		return roles.Config{}, err
	}
	if err := checkCIRoute(f.ciRoute); err != nil {
		return roles.Config{}, err
	}
	if f.natsURL == "" {
		return roles.Config{}, errors.New("--nats is required: the URL of the NATS server, e.g. --nats nats://127.0.0.1:4222")
	}
	tokens, err := f.readTokens(environ)
	if err != nil {
		return roles.Config{}, err
	}
	auth, err := f.nats.auth(environ)
	if err != nil {
		return roles.Config{}, err
	}
	slack, err := f.slack.config(f.fs)
	if err != nil {
		return roles.Config{}, err
	}
	// Only for the defaults: with a remote NATS and no runner, nothing is
	// kept on this host.
	dataDir, _ := defaultDataDir(environ)
	return roles.Config{
		DataDir:      dataDir,
		NATSURL:      f.natsURL,
		NATSAuth:     auth,
		NATSReplicas: f.nats.replicas,
		StorageURI:   f.storage,
		NoStorage:    f.storage == "",
		Listen:       f.listen,
		Tokens:       tokens,
		LocalSecrets: f.localSecrets,
		Orchestrator: true,
		Answerers:    &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret},
		Max:          f.max.maximums(),
		CIRoute:      f.ciRoute,
		Retention:    f.retention,
		Metrics:      true,
		Slack:        slack,
	}, nil
}

// checkRetention refuses a --task-retention out of bounds, naming the flag
// and its variable.
func checkRetention(d time.Duration) error {
	if err := orchestrator.CheckRetention(d); err != nil {
		return fmt.Errorf("--task-retention (or $AGORA_TASK_RETENTION): %w", err)
	}
	return nil
}

// checkCIRoute refuses a --ci-route that does not parse, with an example.
func checkCIRoute(route string) error {
	if route == "" {
		return nil
	}
	if _, err := wire.ParseRoute(route); err != nil {
		return fmt.Errorf("--ci-route %q: %v; e.g. --ci-route %s", route, err, wire.DefaultCIRoute)
	}
	return nil
}

// checkStorage refuses a storage URI of a scheme agora has no store for.
func checkStorage(uri string) error {
	if u, err := url.Parse(uri); err != nil || (u.Scheme != "file" && u.Scheme != "s3") {
		return fmt.Errorf("--storage %q: want file:///abs/dir or s3://bucket/prefix", uri)
	}
	return nil
}

// defaultDataDir is roles.DefaultDataDir in environ, or why there is none.
func defaultDataDir(environ []string) (string, error) {
	dir := roles.DefaultDataDir(func(k string) string { return getenv(environ, k) })
	if dir == "" {
		return "", errors.New("HOME is not set, so there is no default --data-dir; pass --data-dir DIR or set AGORA_DATA_DIR")
	}
	return dir, nil
}

// awsEnv are the AWS_* lines of environ: S3 storage and the runner's
// aws-sm: secret refs use them, on this host only.
func awsEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// getenv looks key up in environ (os.Environ form); the last one wins.
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
