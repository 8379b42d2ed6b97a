// Package roleflags declares every command-line flag that configures a
// role — the flags of agora serve, agora runner, agora orchestrator and
// agora demo — once, on the verb's pflag set: its name, its help on each
// verb that takes it, its default, the environment variable that fills it
// when it is not given and the role it configures. After the verb parses
// its command line, Config checks it and turns it, with the environment,
// into the composition root's roles.Config. So cmd/agora's role verbs
// parse, call roles and print, and import nothing below the root.
//
// Every error Config returns is a mistake in the command line or the
// environment (the verb exits 2); nothing outside the process is touched
// but the tokens file it reads.
package roleflags

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/runner"
)

// Verb is a command that runs roles; each takes its own share of the flags.
type Verb int

const (
	// Serve is agora serve: every role in one process.
	Serve Verb = iota
	// Runner is agora runner: the runner alone, on a NATS server.
	Runner
	// Orchestrator is agora orchestrator: the orchestrator and its API.
	Orchestrator
	// Demo is agora demo: everything on a throw-away data dir.
	Demo
)

func (v Verb) String() string {
	return [...]string{"agora serve", "agora runner", "agora orchestrator", "agora demo"}[v]
}

// Annotations on a declared flag: the environment variables that fill it
// when the command line does not (the first one set wins), and, on agora
// serve, the role it configures (--no-runner and --runner-only refuse the
// flags of the role they leave out).
const (
	envAnnotation  = "agora-env"
	roleAnnotation = "agora-role"
	roleRunner     = "runner"
	roleOrch       = "orchestrator"
)

// Flags is the command line of one role verb: Register declares it on the
// verb's flag set, the verb parses, Config reads it.
type Flags struct {
	verb Verb
	fs   *flag.FlagSet

	dataDir, natsURL, storage, listen string
	natsPort                          int
	tokens                            []string
	tokensFile                        string
	localSecrets                      []string

	noRunner, runnerOnly bool
	slots                int
	image, id, worker    string
	busybox              string
	workerEnv            []string
	secretsDir           string

	rules, webhookSecret, ciRoute string

	workerNATS, signerFile, compute string
	grace                           time.Duration
	logCap                          int64
	cpus                            float64
	memoryMB, pids                  int64

	nats  natsAuthFlags
	max   maxFlags
	slack slackFlags
	ecs   ecsFlags
}

// Compute providers of agora runner --compute.
const (
	computeDocker = "docker"
	computeECS    = "ecs"
)

// Register declares on fs the flags of the verb v, each with its help as
// v shows it, and returns where their values go.
func Register(fs *flag.FlagSet, v Verb) *Flags {
	f := &Flags{verb: v, fs: fs}
	takes := func(verbs ...Verb) bool { return slices.Contains(verbs, v) }
	help := func(byVerb map[Verb]string) string { return byVerb[v] }

	// Where the state is, and the bus and storage the roles share.
	if takes(Serve, Runner, Demo) {
		fs.StringVar(&f.dataDir, "data-dir", "", help(map[Verb]string{
			Serve:  "keep all state in `DIR`: JetStream, storage, workspaces, secrets (default $AGORA_DATA_DIR, else ~/.agora)",
			Runner: "keep dispatch specs and workspaces on this host in `DIR` (default $AGORA_DATA_DIR/runner, else ~/.agora/runner)",
			Demo:   "keep the demo's state in `DIR` (default: a temporary directory, removed afterwards)",
		}))
	}
	if takes(Serve, Runner, Orchestrator) {
		fs.StringVar(&f.natsURL, "nats", "", help(map[Verb]string{
			Serve:        "use the NATS server (with JetStream) at `URL` instead of the embedded one",
			Runner:       "the `URL` of the NATS server (with JetStream), e.g. nats://127.0.0.1:4222; required",
			Orchestrator: "the `URL` of the NATS server (with JetStream); required",
		}))
		f.nats.register(fs)
		fs.StringVar(&f.storage, "storage", "", help(map[Verb]string{
			Serve:        "object storage at `URI`: file:///abs/dir or s3://bucket/prefix (default file://<data-dir>/storage)",
			Runner:       "object storage at `URI`: file:///abs/dir or s3://bucket/prefix (default file://<data-dir>/storage)",
			Orchestrator: "object storage `URI` the runners use (file:///dir or s3://bucket/prefix), for remove and agent answers",
		}))
		// The runner's listener serves /metrics only and is off by
		// default; the orchestrator's default is written out; only
		// serve, which the serve image runs, reads $AGORA_LISTEN.
		listenDefault := ""
		if v == Orchestrator {
			listenDefault = roles.DefaultListen
		}
		fs.StringVar(&f.listen, "listen", listenDefault, help(map[Verb]string{
			Serve:        "serve the HTTP API and /metrics on `ADDR` (default $AGORA_LISTEN, else " + roles.DefaultListen + ")",
			Runner:       "serve Prometheus /metrics on `ADDR`, e.g. 127.0.0.1:7071 (default: none)",
			Orchestrator: "serve the HTTP API and /metrics on `ADDR`",
		}))
		if v == Serve {
			env(fs, "listen", "AGORA_LISTEN")
		}
		fs.StringArrayVar(&f.tokens, "token", nil, help(map[Verb]string{
			Serve:        "accept API and metrics bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback",
			Runner:       "accept metrics bearer token `NAME:SECRET` (repeatable); required when --listen is off loopback",
			Orchestrator: "accept API bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback",
		})+"; --tokens-file or $AGORA_TOKENS keep it out of the process list")
		fs.StringVar(&f.tokensFile, "tokens-file", "", "accept the tokens in `FILE`, one a line: NAME:SECRET[:ROLE] or NAME:sha256=HEX[:ROLE] ('agora token create' makes one), # comments; mode 0600 or stricter (default $AGORA_TOKENS_FILE)")
		env(fs, "tokens-file", "AGORA_TOKENS_FILE")
	}
	if takes(Serve) {
		fs.IntVar(&f.natsPort, "nats-port", 0, "listen for NATS clients on loopback port `N` (embedded server only; default: a free port)")
		fs.BoolVar(&f.noRunner, "no-runner", false, "run no runner here: runners on other hosts take the dispatches")
		fs.BoolVar(&f.runnerOnly, "runner-only", false, "run the runner only (and /metrics), for the orchestrator at --nats")
	}

	// The runner's.
	if takes(Serve, Runner) {
		fs.IntVar(&f.slots, "slots", runner.DefaultSlots, "run at most `N` dispatches at once")
		fs.StringVar(&f.image, "image", "", "run dispatches in the worker `IMAGE` (default: build or reuse it as 'agora image build' does)")
		fs.StringVar(&f.id, "id", "", help(map[Verb]string{
			Serve:  "name the runner `ID`; keep it across restarts so the next process adopts the containers (default: made once and kept in <data-dir>/runner-id)",
			Runner: "name this runner `ID`; keep it across restarts so the next process adopts the containers (default: made once and kept in <data-dir>/runner-id, as agora serve does)",
		}))
		fs.StringArrayVar(&f.workerEnv, "worker-env", nil, "give every worker `KEY=VALUE` (repeatable), e.g. a proxy setting; never passed on to sub-agents (AWS credentials are not needed: the runner stages S3 and resolves aws-sm: refs itself)")
		fs.StringVar(&f.secretsDir, "secrets-dir", "", help(map[Verb]string{
			Serve:  "copy the local:NAME secrets a dispatch references from the store in `DIR` (default <data-dir>/secrets, where 'agora secret set' writes)",
			Runner: "copy the local:NAME secrets a dispatch references from the store in `DIR` (default $AGORA_DATA_DIR/secrets, else ~/.agora/secrets, where 'agora secret set' writes)",
		}))
		role(fs, roleRunner, "slots", "image", "id", "worker-env", "secrets-dir")
	}
	if takes(Serve, Demo) {
		fs.StringVar(&f.worker, "worker", "", "build the worker image from the agora-worker at `PATH` (default: next to agora)")
		role(fs, roleRunner, "worker")
	}
	if takes(Demo) {
		fs.StringVar(&f.busybox, "busybox", "", "the static busybox at `PATH` becomes /bin/sh in the worker image (default "+images.DefaultBusybox+")")
	}
	if takes(Runner) {
		fs.StringVar(&f.workerNATS, "worker-nats", "", "let workers publish their own events to NATS at `URL`, which containers must reach (default: the runner relays them from stdout)")
		fs.StringVar(&f.signerFile, "worker-nats-signer", "", "mint each --worker-nats worker its own NATS user, allowed only its dispatch's events and logs, with the account's scoped signing key seed in `FILE` (an agora serve's <data-dir>/nats-auth/worker-signer.nk); needs --nats-creds")
		fs.StringVar(&f.compute, "compute", computeDocker, "run dispatches on `PROVIDER`: docker (this host's engine) or ecs (AWS ECS tasks: the --ecs-… flags, docs/ecs.md)")
		f.ecs.register(fs)
		fs.DurationVar(&f.grace, "grace", runner.DefaultGrace, "wait `DURATION` between SIGTERM and SIGKILL when stopping a container")
		fs.Int64Var(&f.logCap, "log-cap", runner.DefaultLogCap, "keep at most `BYTES` of each dispatch's output in storage")
		fs.Float64Var(&f.cpus, "cpus", float64(roles.DefaultResources.NanoCPUs)/1e9, "default CPU limit of a dispatch container, in `CPUS` (0: none)")
		fs.Int64Var(&f.memoryMB, "memory-mb", roles.DefaultResources.MemoryBytes>>20, "default memory limit of a dispatch container, in `MB` (0: none)")
		fs.Int64Var(&f.pids, "pids", roles.DefaultResources.PidsLimit, "default process limit of a dispatch container, `N` (0: none)")
	}

	// The orchestrator's.
	if takes(Serve, Orchestrator) {
		fs.StringArrayVar(&f.localSecrets, "local-secrets", nil, "let token `NAME=SECRET[,SECRET]` (or NAME=*) name those local: secrets in its env bundles (repeatable; admins may use all)")
		fs.StringVar(&f.rules, "rules", "", "lookup rules `FILE` (JSON or YAML) for the lookup answerer")
		fs.StringVar(&f.webhookSecret, "webhook-secret", "", "HMAC `SECRET` that signs webhook answerer requests")
		fs.StringVar(&f.ciRoute, "ci-route", "", "the `ROUTE` of a task submitted from CI (agora dispatch under CI=true) that names none (default "+
			orchestrator.DefaultCIRoute+"): a pipeline step waits at most its steps' timeouts for a person, then the question's default is taken or the task expires")
		role(fs, roleOrch, "rules", "webhook-secret", "ci-route")
		f.slack.register(fs)
	}
	if takes(Serve, Runner, Orchestrator) {
		f.max.register(fs, v != Runner, v != Orchestrator)
	}
	return f
}

// env records on the flag name the environment variables that fill it
// when the command line does not, in order.
func env(fs *flag.FlagSet, name string, vars ...string) {
	if err := fs.SetAnnotation(name, envAnnotation, vars); err != nil {
		panic(err) // a declaration mistake, caught by every test
	}
}

// role records that the flags configure one role of agora serve.
func role(fs *flag.FlagSet, r string, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, roleAnnotation, []string{r}); err != nil {
			panic(err) // a declaration mistake, caught by every test
		}
	}
}

// fromEnv fills every flag the command line left out from the first of its
// environment variables that is set. A flag so filled is not Changed: the
// checks that ask what was typed still see only the command line.
func (f *Flags) fromEnv(environ []string) error {
	var errs []error
	f.fs.VisitAll(func(fl *flag.Flag) {
		if fl.Changed {
			return
		}
		for _, name := range fl.Annotations[envAnnotation] {
			if v := getenv(environ, name); v != "" {
				if err := fl.Value.Set(v); err != nil {
					errs = append(errs, fmt.Errorf("$%s %q: %v (it fills --%s)", name, v, err, fl.Name))
				}
				return
			}
		}
	})
	return errors.Join(errs...)
}

// given are the flags of role r typed on the command line, as --NAME.
func (f *Flags) given(r string) []string {
	var out []string
	f.fs.Visit(func(fl *flag.Flag) {
		if slices.Contains(fl.Annotations[roleAnnotation], r) {
			out = append(out, "--"+fl.Name)
		}
	})
	return out
}

// Config checks the parsed command line and returns the roles' configuration
// it and environ (os.Environ form) say, defaults left to roles but the
// ones a verb has its own of. A demo without --data-dir gets none: the
// demo makes a temporary one.
func (f *Flags) Config(environ []string) (roles.Config, error) {
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
	if err := f.checkRunner(); err != nil {
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
		Slack:        slack,
		DockerHost:   getenv(environ, "DOCKER_HOST"),
	}
	f.max.runnerConfig(&cfg)
	if cfg.Orchestrator {
		cfg.Answerers = &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret}
	}
	return cfg, nil
}

// checkRunner checks the runner flags serve and runner share.
func (f *Flags) checkRunner() error {
	if f.slots < 1 {
		return errors.New("--slots must be at least 1")
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
	case f.compute != computeDocker && f.compute != computeECS:
		return roles.Config{}, fmt.Errorf("--compute %q: want docker or ecs", f.compute)
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
		Metrics:      true,
		Slack:        slack,
	}, nil
}

// checkCIRoute refuses a --ci-route that does not parse, with an example.
func checkCIRoute(route string) error {
	if route == "" {
		return nil
	}
	if _, err := answer.ParseRoute(route); err != nil {
		return fmt.Errorf("--ci-route %q: %v; e.g. --ci-route %s", route, err, orchestrator.DefaultCIRoute)
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
