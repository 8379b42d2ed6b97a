package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/natsauth"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/runner"
)

const runnerSynopsis = "--nats URL [--storage URI] [--data-dir DIR] [--slots N] [--image IMAGE] [--compute docker|ecs [--ecs-… VALUE]...] [--id ID] [--nats-creds FILE | --nats-nkey FILE | --nats-user USER] [--nats-tls-ca FILE] [--worker-nats URL [--worker-nats-signer FILE]] [--grace DURATION] [--log-cap BYTES] [--secrets-dir DIR] [--max-… LIMIT]..."

// stopTimeout bounds the graceful stop after the first signal. Stopping does
// not wait for containers (they keep running and the next runner process
// adopts them), only for the runner's own goroutines to let go of them.
const stopTimeout = time.Minute

// runnerFlags is the command line of `agora runner`, checked.
type runnerFlags struct {
	natsURL    string
	storageURI string
	dataDir    string
	image      string // "": build or reuse the default worker image
	id         string
	workerNATS string
	natsAuth   natsAuthFlags
	auth       bus.Auth
	signerFile string
	slots      int
	grace      time.Duration
	logCap     int64
	workerEnv  multiFlag
	secretsDir string
	cpus       float64
	memoryMB   int64
	pids       int64
	max        maxFlags
	listen     string
	tokenF     tokenFlags
	tokens     multiFlag
	compute    string
	benchmark  bool
	ecs        ecsFlags
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "strings" }

func runRunner(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora runner", runnerMain(ctx, args, environ, stdout, stderr))
}

// parseRunnerFlags reads and checks the flags without touching anything
// outside the process, so every mistake is reported before connecting.
func parseRunnerFlags(args, environ []string, stdout io.Writer) (runnerFlags, error) {
	var f runnerFlags
	fs := flag.NewFlagSet("agora runner", flag.ContinueOnError)
	fs.StringVar(&f.natsURL, "nats", "", "the `URL` of the NATS server (with JetStream), e.g. nats://127.0.0.1:4222; required")
	fs.StringVar(&f.storageURI, "storage", "", "object storage at `URI`: file:///abs/dir or s3://bucket/prefix (default file://<data-dir>/storage)")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep dispatch specs and workspaces on this host in `DIR` (default $AGORA_DATA_DIR/runner, else ~/.agora/runner)")
	fs.IntVar(&f.slots, "slots", runner.DefaultSlots, "run at most `N` dispatches at once")
	fs.StringVar(&f.image, "image", "", "run dispatches in the worker `IMAGE` (default: build or reuse it as 'agora image build' does)")
	fs.StringVar(&f.id, "id", "", "name this runner `ID`; keep it across restarts so the next process adopts the containers (default: made once and kept in <data-dir>/runner-id, as agora serve does)")
	fs.StringVar(&f.listen, "listen", "", "serve Prometheus /metrics on `ADDR`, e.g. 127.0.0.1:7071 (default: none)")
	f.tokenF.register(fs, "accept metrics bearer token `NAME:SECRET` (repeatable); required when --listen is off loopback")
	fs.StringVar(&f.workerNATS, "worker-nats", "", "let workers publish their own events to NATS at `URL`, which containers must reach (default: the runner relays them from stdout)")
	f.natsAuth.register(fs)
	fs.StringVar(&f.compute, "compute", computeDocker, "run dispatches on `PROVIDER`: docker (this host's engine) or ecs (AWS ECS tasks: the --ecs-… flags, docs/ecs.md); process, the measuring engine, only with --benchmark-engine")
	registerBenchmarkEngine(fs, &f.benchmark)
	f.ecs.register(fs)
	fs.StringVar(&f.signerFile, "worker-nats-signer", "", "mint each --worker-nats worker its own NATS user, allowed only its dispatch's events and logs, with the account's scoped signing key seed in `FILE` (an agora serve's <data-dir>/nats-auth/worker-signer.nk); needs --nats-creds")
	fs.DurationVar(&f.grace, "grace", runner.DefaultGrace, "wait `DURATION` between SIGTERM and SIGKILL when stopping a container")
	fs.Int64Var(&f.logCap, "log-cap", runner.DefaultLogCap, "keep at most `BYTES` of each dispatch's output in storage")
	fs.Var(&f.workerEnv, "worker-env", "give every worker `KEY=VALUE` (repeatable), e.g. a proxy setting; never passed on to sub-agents (AWS credentials are not needed: the runner stages S3 and resolves aws-sm: refs itself)")
	fs.StringVar(&f.secretsDir, "secrets-dir", "", "copy the local:NAME secrets a dispatch references from the store in `DIR` (default $AGORA_DATA_DIR/secrets, else ~/.agora/secrets, where 'agora secret set' writes)")
	fs.Float64Var(&f.cpus, "cpus", float64(roles.DefaultResources.NanoCPUs)/1e9, "default CPU limit of a dispatch container, in `CPUS` (0: none)")
	fs.Int64Var(&f.memoryMB, "memory-mb", roles.DefaultResources.MemoryBytes>>20, "default memory limit of a dispatch container, in `MB` (0: none)")
	fs.Int64Var(&f.pids, "pids", roles.DefaultResources.PidsLimit, "default process limit of a dispatch container, `N` (0: none)")
	f.max.register(fs, false, true)
	if err := parseFlags(fs, runnerSynopsis, args, stdout); err != nil {
		return f, err
	}
	if err := f.max.check(); err != nil {
		return f, err
	}
	var err error
	if f.auth, err = f.natsAuth.auth(environ); err != nil {
		return f, err
	}
	switch {
	case f.natsURL == "":
		return f, usagef("--nats is required: the URL of the NATS server, e.g. --nats nats://127.0.0.1:4222")
	case f.signerFile != "" && f.workerNATS == "":
		return f, usagef("--worker-nats-signer mints credentials for --worker-nats: give both")
	case f.signerFile != "" && f.natsAuth.creds == "":
		return f, usagef("--worker-nats-signer needs --nats-creds: the workers' users belong to the runner's account")
	case f.compute != computeDocker && f.compute != computeECS && f.compute != computeProcess:
		return f, usagef("--compute %q: want docker or ecs", f.compute)
	case f.compute == computeECS && f.image == "":
		return f, usagef("--compute ecs needs --image: an image ECS pulls (e.g. from ECR); nothing is built for ECS")
	case f.slots < 1:
		return f, usagef("--slots must be at least 1")
	case f.grace < time.Second:
		return f, usagef("--grace must be at least 1s (Docker counts it in seconds)")
	case f.logCap < 1:
		return f, usagef("--log-cap must be at least 1 (bytes of output kept per dispatch)")
	case f.cpus < 0 || f.memoryMB < 0 || f.pids < 0:
		return f, usagef("--cpus, --memory-mb and --pids must not be negative (0 means no limit)")
	case f.memoryMB > 0 && f.memoryMB < 6:
		return f, usagef("--memory-mb must be at least 6 (Docker's minimum), or 0 for no limit")
	case f.memoryMB > f.max.memoryMB:
		return f, usagef("--memory-mb %d is over --max-memory-mb %d", f.memoryMB, f.max.memoryMB)
	case f.pids > f.max.pids:
		return f, usagef("--pids %d is over --max-pids %d", f.pids, f.max.pids)
	}
	if err := checkMeasuringEngine(f.compute, f.benchmark, f.image); err != nil {
		return f, err
	}
	if f.compute == computeECS {
		e := f.ecs.config(environ, f.grace)
		if err := e.Engine.WithDefaults().Validate(); err != nil {
			return f, usagef("%v", err)
		}
	}
	tokens, err := f.tokenF.tokens(environ)
	if err != nil {
		return f, err
	}
	f.tokens = tokens
	if f.listen != "" {
		if err := api.CheckBind(f.listen, f.tokens); err != nil {
			return f, usagef("%v", err)
		}
	}
	for _, kv := range f.workerEnv {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return f, usagef("--worker-env %q: want KEY=VALUE", kv)
		}
	}
	base, baseErr := defaultDataDir(environ) // $AGORA_DATA_DIR, else ~/.agora
	if f.dataDir == "" {
		if baseErr != nil {
			return f, baseErr
		}
		f.dataDir = filepath.Join(base, "runner")
	}
	// Containers mount paths under it: make it absolute.
	abs, err := filepath.Abs(f.dataDir)
	if err != nil {
		return f, usagef("--data-dir %s: %v", f.dataDir, err)
	}
	f.dataDir = abs
	if f.secretsDir == "" && baseErr == nil {
		f.secretsDir = filepath.Join(base, "secrets")
	}
	if f.secretsDir != "" {
		if f.secretsDir, err = filepath.Abs(f.secretsDir); err != nil {
			return f, usagef("--secrets-dir: %v", err)
		}
	}
	if f.storageURI == "" {
		f.storageURI = "file://" + filepath.Join(f.dataDir, "storage")
	}
	if u, err := url.Parse(f.storageURI); err != nil || (u.Scheme != "file" && u.Scheme != "s3") {
		return f, usagef("--storage %q: want file:///abs/dir or s3://bucket/prefix", f.storageURI)
	}
	if f.compute == computeECS && f.ecs.config(environ, f.grace).Engine.WithDefaults().Fargate() {
		// Its dispatches get no host files: the worker reads them from S3
		// with the task role (docs/ecs.md, "The runner on Fargate").
		switch {
		case !strings.HasPrefix(f.storageURI, "s3://"):
			return f, usagef("the runner on Fargate needs S3 storage: its dispatches get no host files and read theirs from storage; give --storage s3://bucket/prefix (docs/ecs.md)")
		case f.ecs.taskRole == "":
			return f, usagef("the runner on Fargate needs --ecs-task-role: the worker reads and writes its dispatch's files in S3 with that role (docs/ecs.md, \"IAM\")")
		}
	}
	return f, nil
}

// runnerMain runs one runner until ctx is done, then stops it gracefully:
// its containers keep running for the next runner process with the same id.
// It is the roles package with the runner role only, so it gets the same
// defaults (runner id, Docker check, metrics) as agora serve.
func runnerMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, err := parseRunnerFlags(args, environ, stdout)
	if err != nil {
		return err
	}
	if f.image == "" && f.compute != computeECS {
		// Before connecting: a missing binary is the likeliest mistake.
		if _, err = workerBinary("", "--image IMAGE"); err != nil {
			return err
		}
	}
	log := newLogger(stderr)
	if u, err := url.Parse(f.workerNATS); err == nil && isLoopback(u.Hostname()) {
		log.Warn("--worker-nats names a loopback address, which containers cannot reach: events then reach NATS only when the runner recovers them from stdout after each container ends", "worker_nats", f.workerNATS)
	}
	var signer *natsauth.Signer
	if f.signerFile != "" {
		var err error
		if signer, err = natsauth.LoadSigner(f.signerFile, f.natsAuth.creds); err != nil {
			return err
		}
	}
	res := f.defaultResources()
	max := f.max.maximums()
	var ecsCfg *roles.ECSConfig
	if f.compute == computeECS {
		ecsCfg = f.ecs.config(environ, f.grace)
	}
	s, err := roles.Start(ctx, f.natsAuth.config(roles.Config{
		// The runner's own directory holds its lock and runner-id too, so
		// a serve on ~/.agora and a runner on ~/.agora/runner never clash.
		DataDir:           f.dataDir,
		RunnerDataDir:     f.dataDir,
		NATSURL:           f.natsURL,
		NATSAuth:          f.auth,
		NATSReplicas:      f.natsAuth.replicas,
		StorageURI:        f.storageURI,
		Runner:            true,
		Slots:             f.slots,
		Image:             f.image,
		RunnerID:          f.id,
		WorkerNATSURL:     f.workerNATS,
		WorkerNATSSigner:  signer,
		Grace:             f.grace,
		LogCap:            f.logCap,
		WorkerEnv:         f.workerEnv,
		SecretsDir:        f.secretsDir,
		AWSEnv:            awsVariables(environ),
		Resources:         &res,
		Max:               max,
		MaxWorkspaceBytes: f.max.workspaceMB << 20,
		EgressUplink:      f.max.egressUplink,
		MaxArtifacts:      f.max.artifacts,
		MaxArtifactBytes:  f.max.artifactsMB << 20,
		Listen:            f.listen,
		Tokens:            f.tokens,
		Metrics:           f.listen != "",
		DockerHost:        getenv(environ, "DOCKER_HOST"),
		ECS:               ecsCfg,
		MeasuringEngine:   f.compute == computeProcess,
		Logger:            log,
	}))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agora runner: runner %s with %d slots\n", s.RunnerID(), s.Config().Slots)
	if f.listen != "" {
		fmt.Fprintf(stdout, "agora runner: metrics on %s/metrics\n", s.URL())
	}
	select {
	case <-ctx.Done():
		log.Info("stopping: running containers keep running and the next runner with this id adopts them (signal again to exit at once)",
			slog.String("cause", context.Cause(ctx).Error()))
	case <-s.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return errors.Join(s.Err(), s.Stop(stopCtx))
}

// defaultResources are --cpus, --memory-mb and --pids, checked against
// their maximums already, CPUs capped at --max-cpus (the default 2 on a
// host with one core), so no conversion wraps.
func (f runnerFlags) defaultResources() compute.Resources {
	nano, _ := units.NanoCPUs(min(f.cpus, f.max.cpus))
	mem, _ := units.MiB(f.memoryMB)
	return compute.Resources{NanoCPUs: nano, MemoryBytes: mem, PidsLimit: f.pids}
}

// isLoopback reports whether host names this machine's loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
