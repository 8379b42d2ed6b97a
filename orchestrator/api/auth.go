package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/apitoken"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// ParseTokensFile is apitoken.ParseFile, for the roles that read a
// --tokens-file.
func ParseTokensFile(r io.Reader) ([]string, error) { return apitoken.ParseFile(r) }

// Auth is the API's one rule for who may call it, exported so every other
// endpoint a process serves beside the API (/metrics) applies the very same
// rule: with tokens, the header Authorization: Bearer SECRET of one of
// them; without, a loopback peer that names a loopback host.
type Auth struct {
	tokens []apitoken.Token
	// local are the local secrets each token name may use.
	local map[string][]string
	// open signs browser sessions' CSRF tokens when there are no tokens.
	openOnce sync.Once
	open     []byte
	// sessions, when set, ends sessions before they expire (sign-out).
	sessions SessionStore
	// failures limits wrong secrets per client.
	failures failures
}

// NewAuth reads tokens as Config.Tokens takes them: SECRET,
// NAME:SECRET or NAME:SECRET:ROLE[,ROLE], each part non-empty, no secret
// twice.
func NewAuth(tokens []string) (*Auth, error) {
	parsed, err := apitoken.Parse(tokens)
	if err != nil {
		return nil, err
	}
	return &Auth{tokens: parsed}, nil
}

// NewAuthLocal is NewAuth with the operator's grants of local secrets:
// each NAME=SECRET[,SECRET] (or NAME=* for all) lets the token NAME name
// those local: secrets in its env bundles.
func NewAuthLocal(tokens, localSecrets []string) (*Auth, error) {
	a, err := NewAuth(tokens)
	if err != nil {
		return nil, err
	}
	a.local, err = parseLocalSecrets(localSecrets, a.tokens)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// parseLocalSecrets reads NAME=SECRET[,SECRET] grants; NAME must be a
// configured token's name.
func parseLocalSecrets(raw []string, tokens []apitoken.Token) (map[string][]string, error) {
	out := map[string][]string{}
	for _, g := range raw {
		name, list, ok := strings.Cut(g, "=")
		if !ok || name == "" || list == "" {
			return nil, fmt.Errorf("api: local secrets %q: want NAME=SECRET[,SECRET] or NAME=*", g)
		}
		if !slices.ContainsFunc(tokens, func(t apitoken.Token) bool { return t.Name == name }) {
			return nil, fmt.Errorf("api: local secrets %q: no token is named %s", g, name)
		}
		for s := range strings.SplitSeq(list, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out[name] = append(out[name], s)
			}
		}
	}
	return out, nil
}

// Wrap serves h to the requests Auth lets through and refuses the others
// with the API's error body (401 with WWW-Authenticate, or 403), logging
// each refusal to log.
func (a *Auth) Wrap(h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.authenticate(r); err != nil {
			log.Warn("request refused", "method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr, "error", err)
			if after, ok := RateLimited(err); ok {
				w.Header().Set("Retry-After", after)
				writeBody(w, http.StatusTooManyRequests, wire.ErrorBody{Error: err.Error(), Code: wire.CodeRateLimited})
				return
			}
			re, _ := errors.AsType[*requestError](err)
			if re.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="agora"`)
			}
			writeBody(w, re.status, wire.ErrorBody{Error: re.msg, Code: re.code})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// authenticate returns the identity of r's token. An unnamed token, and
// the operator on loopback of an API without tokens, is an admin: it acts
// on every task, as before tokens had roles. An API without tokens takes
// any request from a loopback peer that names a loopback host (so a web
// page whose name an attacker rebinds to 127.0.0.1 gets nothing).
func (a *Auth) authenticate(r *http.Request) (orchestrator.Identity, error) {
	i, err := a.match(r)
	if err != nil {
		return orchestrator.Identity{}, err
	}
	if i < 0 {
		return orchestrator.Identity{Admin: true}, nil
	}
	return a.identity(i), nil
}

// match returns the index of r's token, -1 when the API has none.
func (a *Auth) match(r *http.Request) (int, error) {
	if len(a.tokens) == 0 {
		if !loopbackPeer(r.RemoteAddr) {
			return -1, &requestError{http.StatusForbidden, wire.CodeUnauthorized,
				"this API has no tokens and serves loopback clients only; start it with --token to serve the network"}
		}
		if !loopbackHost(r.Host) {
			return -1, &requestError{http.StatusForbidden, wire.CodeUnauthorized, fmt.Sprintf(
				"this API has no tokens and answers requests for localhost, 127.0.0.1 or [::1] only, not %q", r.Host)}
		}
		return -1, nil
	}
	scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return -1, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized,
			"missing bearer token: send the header Authorization: Bearer <token>"}
	}
	client, now := ClientOf(r), time.Now()
	if err := a.failures.check(client, now); err != nil {
		return -1, err
	}
	sum := sha256.Sum256([]byte(secret))
	match := -1
	for i := range a.tokens { // every token, always: no early exit to time
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].Sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		a.failures.failed(client, now)
		return -1, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "invalid bearer token"}
	}
	return match, nil
}

// loopbackPeer reports whether a request's RemoteAddr is a loopback
// address. One that is no IP address at all (a Unix socket) is local too.
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
// interface: localhost or a loopback address, any port. An empty Host
// (HTTP/1.0) passes.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	}
	return host == "" || isLoopbackName(host)
}

// isLoopbackName: localhost, 127.0.0.0/8 or ::1.
func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CheckBind refuses to serve a non-loopback address without tokens: call
// it with the listen address and Config.Tokens before listening. Loopback
// is 127.0.0.0/8, ::1 and "localhost"; every other host, including an empty
// one (":8080", every interface), needs a token.
func CheckBind(addr string, tokens []string) error {
	if len(tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if isLoopbackName(host) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without --token: the API would be open to the network", addr)
}

// writeBody writes v as the JSON body of a response with status.
func writeBody(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v) // the API's bodies always encode
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
