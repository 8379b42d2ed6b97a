package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/registry"
)

const orchestratorSynopsis = "--nats URL [--nats-creds FILE | --nats-nkey FILE | --nats-user USER] [--nats-tls-ca FILE] [--storage URI] [--listen ADDR] [--token NAME:SECRET[:ROLE]]... [--local-secrets NAME=SECRET,…]... [--rules FILE] [--webhook-secret S] [--max-… LIMIT]..."

type orchestratorFlags struct {
	natsURL, storageURI, listen, rules, webhookSecret string
	tokens, localSecrets                              multiFlag
	max                                               maxFlags
	natsAuth                                          natsAuthFlags
}

func runOrchestrator(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, "agora orchestrator", orchestratorMain(ctx, args, environ, stdout, stderr))
}

func parseOrchestratorFlags(args []string, stdout io.Writer) (orchestratorFlags, error) {
	var f orchestratorFlags
	fs := flag.NewFlagSet("agora orchestrator", flag.ContinueOnError)
	fs.StringVar(&f.natsURL, "nats", "", "the `URL` of the NATS server (with JetStream); required")
	f.natsAuth.register(fs)
	fs.StringVar(&f.storageURI, "storage", "", "object storage `URI` the runners use (file:///dir or s3://bucket/prefix), for remove and agent answers")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7070", "serve the HTTP API on `ADDR`")
	fs.Var(&f.tokens, "token", "accept API bearer token `NAME:SECRET[:ROLE]` (repeatable; a named token sees its own tasks only, roles admin or answerer widen that; an unnamed SECRET is an admin); required off loopback")
	fs.Var(&f.localSecrets, "local-secrets", "let token `NAME=SECRET[,SECRET]` (or NAME=*) name those local: secrets in its env bundles (repeatable; admins may use all)")
	fs.StringVar(&f.rules, "rules", "", "lookup rules `FILE` (JSON or YAML) for the lookup answerer")
	fs.StringVar(&f.webhookSecret, "webhook-secret", "", "HMAC `SECRET` that signs webhook answerer requests")
	f.max.register(fs, true, false)
	if err := parseFlags(fs, orchestratorSynopsis, args, stdout); err != nil {
		return f, err
	}
	if err := f.max.check(); err != nil {
		return f, err
	}
	if f.natsURL == "" {
		return f, usagef("--nats is required: the URL of the NATS server, e.g. --nats nats://127.0.0.1:4222")
	}
	if err := api.CheckBind(f.listen, f.tokens); err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

func orchestratorMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, err := parseOrchestratorFlags(args, stdout)
	if err != nil {
		return err
	}
	auth, err := f.natsAuth.auth(environ)
	if err != nil {
		return err
	}
	log := newLogger(stderr)
	b, err := bus.Connect(ctx, f.natsURL, bus.Options{Name: "agora orchestrator", Logger: log, Auth: auth})
	if err != nil {
		return err
	}
	defer b.Close()
	if !b.Connected() {
		return fmt.Errorf("NATS at %s is not reachable (or refused the credentials); start it, or pass the right --nats and its credentials (--nats-creds, …)", f.natsURL)
	}
	var store storage.Store
	if f.storageURI != "" {
		if store, err = storage.Open(ctx, f.storageURI, storage.Options{Logger: log}); err != nil {
			return err
		}
	}
	// The registry keeps its bundles in object storage: without --storage
	// only inline sub-agents can be submitted.
	var reg *registry.Registry
	var apiReg api.Registry
	if store != nil {
		if reg, err = registry.Open(ctx, b, store); err != nil {
			return fmt.Errorf("open the registry: %w", err)
		}
		apiReg = reg
	}
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Store: store, Logger: log, Registry: reg, Max: f.max.maximums(),
		Answerers: &answer.Resolver{RulesFile: f.rules, WebhookSecret: f.webhookSecret, Logger: log}})
	if err != nil {
		return err
	}
	if err := o.Start(ctx); err != nil {
		return err
	}
	h, err := api.NewHandler(api.Config{Service: o, Registry: apiReg, Tokens: f.tokens, LocalSecrets: f.localSecrets, Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	// Event streams end when this context does, so Shutdown is not held up
	// by a client following /v1/events.
	streams, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return streams }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("orchestrator ready", "api", "http://"+ln.Addr().String(), "nats", f.natsURL, "auth", len(f.tokens) > 0)
	fmt.Fprintf(stdout, "agora orchestrator: API on http://%s\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve the API: %w", err)
		}
	}
	endStreams()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return o.Stop(sctx)
}
