package stack

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/agoradev/agora/orchestrator/api"
)

// authorizer puts /metrics behind the API's rule, so a scraper needs what
// an API client needs: with tokens, the header Authorization: Bearer
// SECRET of one of them; without, a loopback client that names a loopback
// host. package api keeps its own check unexported; TestMetricsAuthMatchesAPI
// holds the two to the same answers.
type authorizer struct {
	sums [][sha256.Size]byte // the secrets' hashes: every compare takes the same time
	log  *slog.Logger
}

// parseSecrets reads tokens as api.Config.Tokens takes them (SECRET or
// NAME:SECRET, both non-empty) and returns the secrets.
func parseSecrets(tokens []string) ([]string, error) {
	out := make([]string, 0, len(tokens))
	for i, s := range tokens {
		name, secret, named := strings.Cut(s, ":")
		if !named {
			name, secret = "", s
		}
		if secret == "" || named && name == "" {
			return nil, fmt.Errorf("token %d: want SECRET or NAME:SECRET, both non-empty", i+1)
		}
		out = append(out, secret)
	}
	return out, nil
}

func newAuthorizer(tokens []string, log *slog.Logger) (*authorizer, error) {
	secrets, err := parseSecrets(tokens)
	if err != nil {
		return nil, err
	}
	a := &authorizer{log: log}
	for _, s := range secrets {
		a.sums = append(a.sums, sha256.Sum256([]byte(s)))
	}
	return a, nil
}

// wrap serves h to the requests check lets through and an API error body
// to the others.
func (a *authorizer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, msg := a.check(r)
		if status == 0 {
			h.ServeHTTP(w, r)
			return
		}
		a.log.Warn("metrics request refused", "remote_addr", r.RemoteAddr, "error", msg)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agora"`)
		}
		writeJSON(w, status, api.ErrorBody{Error: msg, Code: api.CodeUnauthorized})
	})
}

// check returns 0 for an authorized request, else the status and message
// to refuse it with.
func (a *authorizer) check(r *http.Request) (int, string) {
	if len(a.sums) == 0 {
		if !loopbackPeer(r.RemoteAddr) {
			return http.StatusForbidden, "this API has no tokens and serves loopback clients only; start it with --token to serve the network"
		}
		if !loopbackHost(r.Host) {
			return http.StatusForbidden, fmt.Sprintf("this API has no tokens and answers requests for localhost, 127.0.0.1 or [::1] only, not %q", r.Host)
		}
		return 0, ""
	}
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return http.StatusUnauthorized, "missing bearer token: send the header Authorization: Bearer <token>"
	}
	sum := sha256.Sum256([]byte(secret))
	ok := 0
	for i := range a.sums { // every token, always: no early exit to time
		ok |= subtle.ConstantTimeCompare(sum[:], a.sums[i][:])
	}
	if ok != 1 {
		return http.StatusUnauthorized, "invalid bearer token"
	}
	return 0, ""
}

// loopbackPeer reports whether a request's RemoteAddr is a loopback
// address; one that is no IP address at all (a Unix socket) is local too.
func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return ip.Unmap().IsLoopback()
}

// loopbackHost reports whether a request's Host names the loopback
// interface (so a web page whose name an attacker rebinds to 127.0.0.1
// gets nothing); an empty Host (HTTP/1.0) passes.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v) // api's bodies always encode
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
