package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

const orchestratorSynopsis = "--nats URL [--nats-creds FILE | --nats-nkey FILE | --nats-user USER] [--nats-tls-ca FILE] [--storage URI] [--listen ADDR] [--token NAME:SECRET[:ROLE]]... [--local-secrets NAME=SECRET,…]... [--rules FILE] [--webhook-secret S] [--ci-route ROUTE] [--slack-token T --slack-signing-secret S [--public-url URL]] [--max-… LIMIT]..."

type orchestratorFlags struct {
	natsURL, storageURI, listen, rules, webhookSecret string
	ciRoute                                           *string
	tokenF                                            tokenFlags
	tokens, localSecrets                              multiFlag
	max                                               maxFlags
	natsAuth                                          natsAuthFlags
	slack                                             slackFlags
}

func runOrchestrator(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora orchestrator", orchestratorMain(ctx, args, environ, stdout, stderr))
}

func parseOrchestratorFlags(args, environ []string, stdout io.Writer) (orchestratorFlags, error) {
	var f orchestratorFlags
	fs := flag.NewFlagSet("agora orchestrator", flag.ContinueOnError)
	fs.StringVar(&f.natsURL, "nats", "", "the `URL` of the NATS server (with JetStream); required")
	f.natsAuth.register(fs)
	fs.StringVar(&f.storageURI, "storage", "", "object storage `URI` the runners use (file:///dir or s3://bucket/prefix), for remove and agent answers")
	fs.StringVar(&f.listen, "listen", roles.DefaultListen, "serve the HTTP API and /metrics on `ADDR`")
	f.tokenF.register(fs, "accept API bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback")
	fs.Var(&f.localSecrets, "local-secrets", "let token `NAME=SECRET[,SECRET]` (or NAME=*) name those local: secrets in its env bundles (repeatable; admins may use all)")
	fs.StringVar(&f.rules, "rules", "", "lookup rules `FILE` (JSON or YAML) for the lookup answerer")
	fs.StringVar(&f.webhookSecret, "webhook-secret", "", "HMAC `SECRET` that signs webhook answerer requests")
	f.ciRoute = ciRouteFlag(fs)
	f.max.register(fs, true, false)
	f.slack.register(fs)
	if err := parseFlags(fs, orchestratorSynopsis, args, stdout); err != nil {
		return f, err
	}
	if err := f.max.check(); err != nil {
		return f, err
	}
	if err := checkCIRoute(*f.ciRoute); err != nil {
		return f, err
	}
	if f.natsURL == "" {
		return f, usagef("--nats is required: the URL of the NATS server, e.g. --nats nats://127.0.0.1:4222")
	}
	var err error
	if f.tokens, err = f.tokenF.tokens(environ); err != nil {
		return f, err
	}
	if err := api.CheckBind(f.listen, f.tokens); err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

// orchestratorMain runs the roles package with the orchestrator role only:
// the same defaults as agora serve --no-runner, /metrics beside the API.
func orchestratorMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, err := parseOrchestratorFlags(args, environ, stdout)
	if err != nil {
		return err
	}
	auth, err := f.natsAuth.auth(environ)
	if err != nil {
		return err
	}
	slackCfg, err := f.slack.config(environ) // before connecting: a mistake is reported at once
	if err != nil {
		return err
	}
	// Only for the defaults: with a remote NATS and no runner, nothing
	// is kept on this host.
	dataDir, _ := defaultDataDir(environ)
	log := newLogger(stderr)
	max := f.max.maximums()
	s, err := roles.Start(ctx, f.natsAuth.config(roles.Config{
		DataDir:      dataDir,
		NATSURL:      f.natsURL,
		NATSAuth:     auth,
		NATSReplicas: f.natsAuth.replicas,
		StorageURI:   f.storageURI,
		NoStorage:    f.storageURI == "",
		AWSEnv:       awsVariables(environ),
		Listen:       f.listen,
		Tokens:       f.tokens,
		LocalSecrets: f.localSecrets,
		Orchestrator: true,
		WrapHTTP:     apiCheck(environ, stderr),
		Answerers:    &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret, Logger: log},
		Max:          max,
		CIRoute:      *f.ciRoute,
		Metrics:      true,
		Logger:       log,
		Slack:        slackCfg,
	}))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agora orchestrator: API on %s (metrics at /metrics)\n", s.URL())
	select {
	case <-ctx.Done():
	case <-s.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	return errors.Join(s.Err(), s.Stop(sctx))
}

// ciRouteFlag declares --ci-route, an orchestrator's setting that serve
// and orchestrator share.
func ciRouteFlag(fs *flag.FlagSet) *string {
	return fs.String("ci-route", "", "the `ROUTE` of a task submitted from CI (agora dispatch under CI=true) that names none (default "+
		wire.DefaultCIRoute+"): a pipeline step waits at most its steps' timeouts for a person, then the question's default is taken or the task expires")
}

// checkCIRoute refuses a --ci-route that does not parse, with an example.
func checkCIRoute(route string) error {
	if route == "" {
		return nil
	}
	if _, err := wire.ParseRoute(route); err != nil {
		return usagef("--ci-route %q: %v; e.g. --ci-route %s", route, err, wire.DefaultCIRoute)
	}
	return nil
}
