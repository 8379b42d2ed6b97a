package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/agoradev/agora/internal/egress"
	"github.com/agoradev/agora/schemas"
)

// Environment of `agora-worker egress-proxy`, set by the runner on the
// proxy container of a dispatch with network egress (docs/runner.md).
const (
	// envEgressAllow is the allow-list, entries separated by commas.
	envEgressAllow = schemas.EnvEgressAllow
	// envEgressListen is the proxy's address, default ":3128".
	envEgressListen = schemas.EnvEgressListen
)

// runEgressProxy serves the dispatch's egress proxy until ctx ends (the
// container is stopped). Each decision is a JSON line on stdout, which
// the runner reads; problems go to stderr.
func runEgressProxy(ctx context.Context, environ []string, stdout, stderr io.Writer) int {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var entries []string
	for _, e := range strings.Split(env[envEgressAllow], ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	rules, err := schemas.ParseEgress(entries)
	if err == nil && len(rules) == 0 {
		err = fmt.Errorf("%s is empty: the proxy would deny everything", envEgressAllow)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agora-worker egress-proxy: %v\n", err)
		return 2
	}
	addr := env[envEgressListen]
	if addr == "" {
		addr = ":3128"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "agora-worker egress-proxy: %v\n", err)
		return 1
	}
	p := egress.New(egress.Config{Rules: rules, DispatchID: env[schemas.EnvDispatchID], Log: stdout})
	fmt.Fprintf(stderr, "agora-worker egress-proxy: listening on %s for %d hosts\n", ln.Addr(), len(rules))
	if err := egress.Serve(ctx, ln, p); err != nil {
		fmt.Fprintf(stderr, "agora-worker egress-proxy: %v\n", err)
		return 1
	}
	return 0
}
