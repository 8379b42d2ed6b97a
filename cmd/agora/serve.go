package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
)

const serveSynopsis = "[--data-dir DIR] [--nats URL [--nats-creds FILE | --nats-nkey FILE | --nats-user USER] [--nats-tls-ca FILE] | --nats-port N] [--storage URI] [--listen ADDR] [--token NAME:SECRET[:ROLE]]... [--local-secrets NAME=SECRET,…]... " +
	"[--slots N] [--no-runner | --runner-only] [--image IMAGE | --compute process --benchmark-engine] [--worker PATH] [--id ID] [--worker-env KEY=VALUE]... [--secrets-dir DIR] [--rules FILE] [--webhook-secret S] [--ci-route ROUTE] [--slack-token T --slack-signing-secret S [--public-url URL]] [--max-… LIMIT]..."

// serveFlags is the command line of `agora serve`, checked.
type serveFlags struct {
	cfg                  roles.Config
	rules, webhookSecret string
}

func runServe(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora serve", serveMain(ctx, args, environ, stdout, stderr))
}

// parseServeFlags reads and checks the flags without touching anything
// outside the process, so every mistake is reported before starting.
func parseServeFlags(args, environ []string, stdout io.Writer) (serveFlags, error) {
	var (
		f                      serveFlags
		noRunner, runnerOnly   bool
		tokenF                 tokenFlags
		workerEnv              multiFlag
		localSecrets           multiFlag
		dataDir, storageURI    string
		natsURL, listen        string
		image, id              string
		natsPort, slots        int
		computeF               string
		benchmark              bool
		rules, webhookSecret   string
		slackF                 slackFlags
		runnerFlagsGiven       []string
		orchestratorFlagsGiven []string
	)
	fs := flag.NewFlagSet("agora serve", flag.ContinueOnError)
	fs.StringVar(&dataDir, "data-dir", "", "keep all state in `DIR`: JetStream, storage, workspaces, secrets (default $AGORA_DATA_DIR, else ~/.agora)")
	fs.StringVar(&natsURL, "nats", "", "use the NATS server (with JetStream) at `URL` instead of the embedded one")
	var natsAuth natsAuthFlags
	natsAuth.register(fs)
	fs.IntVar(&natsPort, "nats-port", 0, "listen for NATS clients on loopback port `N` (embedded server only; default: a free port)")
	fs.StringVar(&storageURI, "storage", "", "object storage at `URI`: file:///abs/dir or s3://bucket/prefix (default file://<data-dir>/storage)")
	fs.StringVar(&listen, "listen", "", "serve the HTTP API and /metrics on `ADDR` (default $AGORA_LISTEN, else "+roles.DefaultListen+")")
	tokenF.register(fs, "accept API and metrics bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback")
	fs.Var(&localSecrets, "local-secrets", "let token `NAME=SECRET[,SECRET]` (or NAME=*) name those local: secrets in its env bundles (repeatable; admins may use all)")
	fs.IntVar(&slots, "slots", 4, "run at most `N` dispatches at once")
	fs.BoolVar(&noRunner, "no-runner", false, "run no runner here: runners on other hosts take the dispatches")
	fs.BoolVar(&runnerOnly, "runner-only", false, "run the runner only (and /metrics), for the orchestrator at --nats")
	fs.StringVar(&image, "image", "", "run dispatches in the worker `IMAGE` (default: build or reuse it as 'agora image build' does)")
	fs.StringVar(&id, "id", "", "name the runner `ID`; keep it across restarts so the next process adopts the containers (default: made once and kept in <data-dir>/runner-id)")
	fs.Var(&workerEnv, "worker-env", "give every worker `KEY=VALUE` (repeatable), e.g. a proxy setting; never passed on to sub-agents (AWS credentials are not needed: the runner stages S3 and resolves aws-sm: refs itself)")
	var secretsDir string
	fs.StringVar(&secretsDir, "secrets-dir", "", "copy the local:NAME secrets a dispatch references from the store in `DIR` (default <data-dir>/secrets, where 'agora secret set' writes)")
	fs.StringVar(&rules, "rules", "", "lookup rules `FILE` (JSON or YAML) for the lookup answerer")
	fs.StringVar(&webhookSecret, "webhook-secret", "", "HMAC `SECRET` that signs webhook answerer requests")
	ciRoute := ciRouteFlag(fs)
	fs.StringVar(&computeF, "compute", computeDocker, "run dispatches on `PROVIDER`: docker (this host's engine); process, the measuring engine, only with --benchmark-engine (docs/capacity.md)")
	registerBenchmarkEngine(fs, &benchmark)
	var workerPath string
	fs.StringVar(&workerPath, "worker", "", "build the worker image from the agora-worker at `PATH` (default: next to agora)")
	var max maxFlags
	max.register(fs, true, true)
	slackF.register(fs)
	if err := parseFlags(fs, serveSynopsis, args, stdout); err != nil {
		return f, err
	}
	auth, err := natsAuth.auth(environ)
	if err != nil {
		return f, err
	}
	tokens, err := tokenF.tokens(environ)
	if err != nil {
		return f, err
	}
	cpusGiven := false
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case slices.Contains([]string{"slots", "image", "id", "worker-env", "worker", "secrets-dir", "compute", "benchmark-engine"}, fl.Name),
			slices.Contains(maxFlagsRunner, fl.Name):
			runnerFlagsGiven = append(runnerFlagsGiven, "--"+fl.Name)
		case slices.Contains([]string{"rules", "webhook-secret", "public-url", "ci-route"}, fl.Name), slices.Contains(maxFlagsOrchestrator, fl.Name),
			strings.HasPrefix(fl.Name, "slack-"):
			orchestratorFlagsGiven = append(orchestratorFlagsGiven, "--"+fl.Name)
		case fl.Name == "max-cpus":
			cpusGiven = true
		}
	})
	if noRunner && !cpusGiven {
		max.cpus = orchestrator.DefaultMaximums().CPUs // no runner here: this host's cores say nothing
	}
	if err := max.check(); err != nil {
		return f, err
	}
	switch {
	case noRunner && runnerOnly:
		return f, usagef("--no-runner and --runner-only exclude each other: pick the role this process leaves out")
	case noRunner && len(runnerFlagsGiven) > 0:
		return f, usagef("%s configure the runner, which --no-runner leaves out", strings.Join(runnerFlagsGiven, ", "))
	case runnerOnly && len(orchestratorFlagsGiven) > 0:
		return f, usagef("%s configure the orchestrator, which --runner-only leaves out", strings.Join(orchestratorFlagsGiven, ", "))
	case runnerOnly && natsURL == "":
		return f, usagef("--runner-only needs --nats URL: the NATS server the orchestrator uses")
	case natsURL != "" && natsPort != 0:
		return f, usagef("--nats-port is the embedded server's port: not with --nats")
	case natsURL == "" && natsAuth.given:
		return f, usagef("--nats-creds, --nats-nkey, --nats-user and --nats-tls-… are for the server at --nats; the embedded one uses the identities in <data-dir>/nats-auth")
	case natsURL == "" && natsAuth.replicas > 1:
		return f, usagef("--nats-replicas %d needs --nats: the embedded server is one node", natsAuth.replicas)
	case natsPort < 0 || natsPort > 65535:
		return f, usagef("--nats-port %d: want a port, 1-65535 (0: a free one)", natsPort)
	case slots < 1:
		return f, usagef("--slots must be at least 1")
	case computeF != computeDocker && computeF != computeProcess:
		return f, usagef("--compute %q: want docker (agora runner --compute ecs runs on ECS)", computeF)
	}
	if err := checkMeasuringEngine(computeF, benchmark, image); err != nil {
		return f, err
	}
	for _, kv := range workerEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return f, usagef("--worker-env %q: want KEY=VALUE", kv)
		}
	}
	if err := checkCIRoute(*ciRoute); err != nil {
		return f, err
	}
	slackCfg, err := slackF.config(environ)
	if err != nil {
		return f, err
	}
	if runnerOnly {
		slackCfg = nil // $AGORA_SLACK_TOKEN in the environment of a runner
	}
	if listen == "" {
		listen = getenv(environ, "AGORA_LISTEN") // the serve image sets it
	}
	if dataDir == "" {
		var err error
		if dataDir, err = defaultDataDir(environ); err != nil {
			return f, err
		}
	}
	abs, err := filepath.Abs(dataDir) // containers mount paths under it
	if err != nil {
		return f, usagef("--data-dir %s: %v", dataDir, err)
	}
	if storageURI == "" {
		storageURI = "file://" + filepath.Join(abs, "storage")
	}
	if secretsDir != "" {
		if secretsDir, err = filepath.Abs(secretsDir); err != nil {
			return f, usagef("--secrets-dir: %v", err)
		}
	}
	if u, err := url.Parse(storageURI); err != nil || (u.Scheme != "file" && u.Scheme != "s3") {
		return f, usagef("--storage %q: want file:///abs/dir or s3://bucket/prefix", storageURI)
	}
	f = serveFlags{rules: rules, webhookSecret: webhookSecret, cfg: natsAuth.config(roles.Config{
		DataDir:           abs,
		NATSURL:           natsURL,
		NATSAuth:          auth,
		NATSReplicas:      natsAuth.replicas,
		NATSPort:          natsPort,
		StorageURI:        storageURI,
		Listen:            listen,
		Tokens:            tokens,
		LocalSecrets:      localSecrets,
		Orchestrator:      !runnerOnly,
		Runner:            !noRunner,
		Slots:             slots,
		Image:             image,
		RunnerID:          id,
		WorkerEnv:         workerEnv,
		SecretsDir:        secretsDir,
		AWSEnv:            awsVariables(environ),
		WorkerBinary:      workerPath,
		Metrics:           true,
		Max:               max.maximums(),
		MaxWorkspaceBytes: max.workspaceMB << 20,
		CIRoute:           *ciRoute,
		EgressUplink:      max.egressUplink,
		MaxArtifacts:      max.artifacts,
		MaxArtifactBytes:  max.artifactsMB << 20,
		Slack:             slackCfg,
		MeasuringEngine:   computeF == computeProcess,
	})}
	if err := f.cfg.WithDefaults().Validate(); err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

// serveMain runs the stack until ctx is done (the first SIGINT or SIGTERM),
// then stops it gracefully: running containers keep running and the next
// `agora serve` on the data dir adopts them.
func serveMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, environ, stdout)
	if err != nil {
		return err
	}
	cfg := f.cfg
	if cfg.Runner && cfg.Image == "" {
		// Before connecting: a missing binary is the likeliest mistake.
		orFlag := "--image IMAGE, --worker PATH or --no-runner"
		if cfg.WorkerBinary != "" {
			orFlag = "--worker"
		}
		if cfg.WorkerBinary, err = roles.WorkerBinary(cfg.WorkerBinary, orFlag); err != nil {
			return err
		}
	}
	log := newLogger(stderr)
	cfg.Logger = log
	if cfg.Orchestrator {
		cfg.Answerers = &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret, Logger: log}
	}
	cfg.DockerHost = getenv(environ, "DOCKER_HOST") // roles connects and pings once
	s, err := roles.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Orchestrator {
		fmt.Fprintf(stdout, "agora serve: API on %s (metrics at /metrics)\n", s.URL())
	} else {
		fmt.Fprintf(stdout, "agora serve: metrics on %s/metrics\n", s.URL())
	}
	if sc := cfg.Slack; sc != nil && cfg.Orchestrator {
		if sc.SocketMode {
			fmt.Fprintf(stdout, "agora serve: Slack interactions over Socket Mode\n")
		} else {
			fmt.Fprintf(stdout, "agora serve: Slack interactions at %s%s\n", s.URL(), roles.SlackPath)
		}
	}
	if cfg.NATSURL == "" {
		fmt.Fprintf(stdout, "agora serve: NATS on %s (embedded, JetStream in %s, credentials in %s)\n", s.NATSURL(), filepath.Join(cfg.DataDir, "nats"), s.NATSCredsDir())
	} else {
		fmt.Fprintf(stdout, "agora serve: NATS on %s\n", s.NATSURL())
	}
	if r := s.Runner(); r != nil {
		fmt.Fprintf(stdout, "agora serve: runner %s with %d slots\n", s.RunnerID(), s.Config().Slots)
	}
	select {
	case <-ctx.Done():
		log.Info("stopping: running containers keep running and the next agora serve on this data dir adopts them (signal again to exit at once)",
			slog.String("cause", context.Cause(ctx).Error()))
	case <-s.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return errors.Join(s.Err(), s.Stop(stopCtx))
}
