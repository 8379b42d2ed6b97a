package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
)

// TestServerIsNATS: --server pointed at a NATS port (the easy mistake
// with `agora serve --nats-port`) says so in one line instead of printing
// the INFO line NATS greets with.
func TestServerIsNATS(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	addr := strings.TrimPrefix(ns.ClientURL(), "nats://")
	for _, args := range [][]string{
		{"status", "--server", addr},
		{"cancel", "t-1", "--server", "http://" + addr},
		{"subagent", "list", "--server", addr},
		{"dispatch", "--command", "true", "--wait", "--server", addr},
	} {
		r := agora(t, nil, args...)
		r.want(t, strings.Join(args, " "), 1, nil, []string{
			"http://" + addr + " answered, but not as an agora API: it speaks NATS, not HTTP (is this the NATS port?)",
			"'agora serve --listen' says (default 127.0.0.1:7070)"})
		if strings.Contains(r.stderr, "server_id") || strings.Contains(r.stderr, "INFO") {
			t.Errorf("agora %s printed what NATS sent: %q", strings.Join(args, " "), r.stderr)
		}
	}
	agora(t, nil, "status", "--server", "https://"+addr).want(t, "https to the NATS port", 1, nil,
		[]string{"answered, but not as an agora API: it speaks NATS, not HTTPS"})

	plain := httptest.NewServer(nil)
	t.Cleanup(plain.Close)
	agora(t, nil, "status", "--server", strings.Replace(plain.URL, "http://", "https://", 1)).want(t, "https to an http server", 1, nil,
		[]string{"answered in plain HTTP, not HTTPS; use " + plain.URL + "\n"})
}

// TestTokenWithName: a client given the server's NAME:SECRET (as
// AGORA_TOKEN=ci:… read in docs/ci.md) is told to send the SECRET alone,
// which works.
func TestTokenWithName(t *testing.T) {
	t.Parallel()
	h, err := api.NewHandler(api.Config{Service: &apitest.Service{}, Tokens: []string{"ci:s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, h, openapitest.Lenient))
	t.Cleanup(srv.Close)
	agora(t, []string{"AGORA_SERVER=" + srv.URL, "AGORA_TOKEN=ci:s3cret"}, "events", "parked").want(t, "AGORA_TOKEN=NAME:SECRET", 1, nil,
		[]string{"refused the token (invalid bearer token): a client sends only the SECRET of the server's --token NAME:SECRET, so if \"ci:\" is the token's name, drop it"})
	agora(t, []string{"AGORA_SERVER=" + srv.URL, "AGORA_TOKEN=wrong"}, "events", "parked").want(t, "a wrong token", 1, nil,
		[]string{"refused the request", "pass --token or set AGORA_TOKEN"})
}
