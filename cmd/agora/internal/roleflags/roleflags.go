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
	"slices"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/wire"
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
	verb    Verb
	fs      *flag.FlagSet
	declErr error // a mistake in Register's annotations

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
	retention                     time.Duration

	workerNATS, signerFile, compute string
	// benchmark allows --compute process, the measuring engine.
	benchmark      bool
	grace          time.Duration
	logCap         int64
	cpus           float64
	memoryMB, pids int64

	memLimit string

	nats  natsAuthFlags
	max   maxFlags
	slack slackFlags
	ecs   ecsFlags
}

// Compute providers of agora runner --compute.
const (
	computeDocker = "docker"
	computeECS    = "ecs"
	// computeProcess is the measuring engine (internal/compute/procbench):
	// the worker binary as a plain process, no container. Never a default.
	computeProcess = "process" // procbench.Name
	// computeReplay is the measuring engine replaying a recorded worker
	// run per dispatch shape (procbench.ReplayName). Never a default.
	computeReplay = "replay"
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
			f.env("listen", "AGORA_LISTEN")
		}
		fs.StringArrayVar(&f.tokens, "token", nil, help(map[Verb]string{
			Serve:        "accept API and metrics bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback",
			Runner:       "accept metrics bearer token `NAME:SECRET` (repeatable); required when --listen is off loopback",
			Orchestrator: "accept API bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback",
		})+"; --tokens-file or $AGORA_TOKENS keep it out of the process list")
		fs.StringVar(&f.tokensFile, "tokens-file", "", "accept the tokens in `FILE`, one a line: NAME:SECRET[:ROLE] or NAME:sha256=HEX[:ROLE] ('agora token create' makes one), # comments; mode 0600 or stricter (default $AGORA_TOKENS_FILE)")
		f.env("tokens-file", "AGORA_TOKENS_FILE")
	}
	if takes(Serve, Runner, Orchestrator) {
		fs.StringVar(&f.memLimit, "memory-limit", memoryLimitAuto, "keep this process's Go memory under `SIZE`, e.g. 900MiB: a soft limit (the garbage is collected sooner near it), not a cap; auto: 90% of the process's cgroup memory limit when it has one, else none ($GOMEMLIMIT, when set, instead); off: none (default $AGORA_MEMORY_LIMIT, else auto)")
		f.env("memory-limit", "AGORA_MEMORY_LIMIT")
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
		f.role(roleRunner, "slots", "image", "id", "worker-env", "secrets-dir")
	}
	if takes(Serve, Demo) {
		fs.StringVar(&f.worker, "worker", "", "build the worker image from the agora-worker at `PATH` (default: next to agora)")
		f.role(roleRunner, "worker")
	}
	if takes(Serve) {
		fs.StringVar(&f.compute, "compute", computeDocker, "run dispatches on `PROVIDER`: docker (this host's engine); process or replay, the measuring engine, only with --benchmark-engine (docs/capacity.md)")
	}
	if takes(Serve, Runner) {
		fs.BoolVar(&f.benchmark, "benchmark-engine", false, "allow --compute process or replay: every dispatch runs as a plain, unisolated process of this host (or replays one), for measuring agora only (docs/capacity.md)")
	}
	if takes(Serve) {
		f.role(roleRunner, "compute", "benchmark-engine")
	}
	if takes(Demo) {
		fs.StringVar(&f.busybox, "busybox", "", "the static busybox at `PATH` becomes /bin/sh in the worker image (default "+images.DefaultBusybox+")")
	}
	if takes(Runner) {
		fs.StringVar(&f.workerNATS, "worker-nats", "", "let workers publish their own events to NATS at `URL`, which containers must reach (default: the runner relays them from stdout)")
		fs.StringVar(&f.signerFile, "worker-nats-signer", "", "mint each --worker-nats worker its own NATS user, allowed only its dispatch's events and logs, with the account's scoped signing key seed in `FILE` (an agora serve's <data-dir>/nats-auth/worker-signer.nk); needs --nats-creds")
		fs.StringVar(&f.compute, "compute", computeDocker, "run dispatches on `PROVIDER`: docker (this host's engine) or ecs (AWS ECS tasks: the --ecs-… flags, docs/ecs.md); process or replay, the measuring engine, only with --benchmark-engine (docs/capacity.md)")
		f.ecs.register(f)
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
			wire.DefaultCIRoute+"): a pipeline step waits at most its steps' timeouts for a person, then the question's default is taken or the task expires")
		fs.DurationVar(&f.retention, "task-retention", orchestrator.DefaultRetention, "remove a task that ended (finished, failed, cancelled), with its outputs, `DURATION` after its last change (default $AGORA_TASK_RETENTION, else 168h; 1m to 8760h); open tasks are never removed")
		f.env("task-retention", "AGORA_TASK_RETENTION")
		f.role(roleOrch, "rules", "webhook-secret", "ci-route", "task-retention")
		f.slack.register(f)
	}
	if takes(Serve, Runner, Orchestrator) {
		f.max.register(f, v != Runner, v != Orchestrator)
	}
	return f
}

// env records on the flag name the environment variables that fill it
// when the command line does not, in order.
func (f *Flags) env(name string, vars ...string) {
	f.annotate(name, envAnnotation, vars...)
}

// role records that the flags configure the role r of agora serve.
func (f *Flags) role(r string, names ...string) {
	for _, n := range names {
		f.annotate(n, roleAnnotation, r)
	}
}

// annotate sets an annotation on a declared flag. Naming an undeclared one
// is a mistake in Register, which Config reports (every test sees it).
func (f *Flags) annotate(name, key string, values ...string) {
	if err := f.fs.SetAnnotation(name, key, values); err != nil {
		f.declErr = errors.Join(f.declErr, fmt.Errorf("declare --%s: %w", name, err))
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
