package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// Browser sessions: the web inbox logs a person in with the same token the
// API takes, once, and then carries a cookie instead of the secret. The
// cookie is "v2.<issued, unix ns>.<expiry, unix s>.<mac>", the MAC keyed with the token's
// secret hash, so every orchestrator behind a load balancer accepts it and
// removing a token from the configuration ends its sessions at once. What
// ends a session earlier — signing out, or out everywhere — is kept in a
// SessionStore every replica shares (JetStream KV), until the session
// would have expired anyway.

// ErrLogin is a login with a secret that is no configured token.
var ErrLogin = errors.New("that is not a token this agora accepts")

// sessionVersion prefixes every session value, so its format can change.
// v1 values (no issue time) are no longer accepted: sign in again.
const sessionVersion = "v2"

// SessionStore keeps which sessions have ended before their expiry, for
// every replica alike. A session is named by ID (a hash of its cookie
// value); a token's sessions by Holder (a hash of its secret's hash).
type SessionStore interface {
	// EndSession ends the session id until until (its expiry).
	EndSession(ctx context.Context, id string, until time.Time) error
	// EndSessionsOf ends every session of holder issued before before.
	EndSessionsOf(ctx context.Context, holder string, before time.Time) error
	// SessionEnded reports whether session id of holder, issued at
	// issued, has been ended.
	SessionEnded(ctx context.Context, id, holder string, issued time.Time) (bool, error)
}

// Session is a signed-in browser: who it is, the cookie value that proves
// it and when it ends.
type Session struct {
	Identity orchestrator.Identity
	Value    string
	Issued   time.Time
	Expires  time.Time
	// key signs the session's CSRF tokens.
	key []byte
}

// id names the session in a SessionStore; holder names its token's.
func (s Session) id() string     { return shortHash([]byte(s.Value)) }
func (s Session) holder() string { return shortHash(s.key) }

func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// UseSessionStore makes a's sessions end when signed out, on every replica
// that shares store. Without one, signing out only clears the cookie.
func (a *Auth) UseSessionStore(store SessionStore) { a.sessions = store }

// Revocable reports whether signing out ends a session everywhere.
func (a *Auth) Revocable() bool { return a.sessions != nil }

// EndSession ends s on every replica (signing out); s's cookie is refused
// from now on, wherever it is replayed.
func (a *Auth) EndSession(ctx context.Context, s Session) error {
	if a.sessions == nil || s.Expires.IsZero() {
		return nil // no store, or not a cookie session (bearer, loopback)
	}
	return a.sessions.EndSession(ctx, s.id(), s.Expires)
}

// EndSessionsOf ends every session of s's token issued up to now, on
// every replica (signing out everywhere).
func (a *Auth) EndSessionsOf(ctx context.Context, s Session, now time.Time) error {
	if a.sessions == nil {
		return errors.New("this agora keeps no session store: remove the token to end its sessions")
	}
	return a.sessions.EndSessionsOf(ctx, s.holder(), now)
}

// CSRF is the token a form of this session carries: a MAC of the session
// value, so a page of another origin, which cannot read the cookie, cannot
// make one.
func (s Session) CSRF() string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("agora-csrf|" + s.Value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether token is this session's CSRF token.
func (s Session) CheckCSRF(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF())) == 1
}

// Open reports whether the API takes requests without a token (loopback
// only): the web inbox then needs no login either.
func (a *Auth) Open() bool { return len(a.tokens) == 0 }

// Login checks secret against the tokens and returns a session that lasts
// ttl from now. It fails with ErrLogin for a secret that is no token.
// Failed logins count against client (ClientOf) with failed bearer tokens:
// past the limit Login fails with an error RateLimited recognises.
func (a *Auth) Login(client, secret string, now time.Time, ttl time.Duration) (Session, error) {
	if a.Open() {
		return Session{}, errors.New("this agora has no tokens: no login is needed (loopback only)")
	}
	if err := a.failures.check(client, now); err != nil {
		return Session{}, err
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	match := -1
	for i := range a.tokens { // every token, always: no early exit to time
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].Sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		a.failures.failed(client, now)
		return Session{}, ErrLogin
	}
	issued, exp := now, now.Add(ttl).Truncate(time.Second)
	stamp := strconv.FormatInt(issued.UnixNano(), 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	value := sessionVersion + "." + stamp + "." + sessionMAC(a.tokens[match].Sum[:], stamp)
	return Session{Identity: a.identity(match), Value: value, Issued: issued, Expires: exp, key: a.tokens[match].Sum[:]}, nil
}

// SessionOf authenticates a browser request: the session cookie (or, as
// for the API, a bearer token; or nothing, on loopback, when there are no
// tokens). It fails with a 401 requestError when the request carries no
// valid session.
func (a *Auth) SessionOf(r *http.Request, cookie string, now time.Time) (Session, error) {
	if a.Open() || r.Header.Get("Authorization") != "" {
		i, err := a.match(r)
		if err != nil {
			return Session{}, err
		}
		if i < 0 {
			return Session{Identity: orchestrator.Identity{Admin: true}, Value: "loopback", key: a.openKey()}, nil
		}
		return Session{Identity: a.identity(i), Value: "bearer", key: a.tokens[i].Sum[:]}, nil
	}
	c, err := r.Cookie(cookie)
	if err != nil {
		return Session{}, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "not signed in: sign in with your agora token"}
	}
	version, rest, _ := strings.Cut(c.Value, ".")
	issuedText, rest, _ := strings.Cut(rest, ".")
	expText, mac, _ := strings.Cut(rest, ".")
	issuedUnix, ierr := strconv.ParseInt(issuedText, 10, 64)
	expUnix, eerr := strconv.ParseInt(expText, 10, 64)
	if version != sessionVersion || ierr != nil || eerr != nil {
		return Session{}, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "the session cookie is not one of agora's: sign in again"}
	}
	stamp := issuedText + "." + expText
	issued, exp := time.Unix(0, issuedUnix), time.Unix(expUnix, 0)
	match := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(mac), []byte(sessionMAC(a.tokens[i].Sum[:], stamp))) == 1 {
			match = i
		}
	}
	switch {
	case match < 0:
		return Session{}, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "the session is not valid (its token was removed?): sign in again"}
	case !now.Before(exp):
		return Session{}, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "the session has expired: sign in again"}
	}
	sess := Session{Identity: a.identity(match), Value: c.Value, Issued: issued, Expires: exp, key: a.tokens[match].Sum[:]}
	if a.sessions != nil {
		ended, err := a.sessions.SessionEnded(r.Context(), sess.id(), sess.holder(), issued)
		if err != nil {
			return Session{}, &requestError{http.StatusServiceUnavailable, wire.CodeInternal, "the session cannot be checked right now: " + err.Error()}
		}
		if ended {
			return Session{}, &requestError{http.StatusUnauthorized, wire.CodeUnauthorized, "the session was signed out: sign in again"}
		}
	}
	return sess, nil
}

// identity is the identity of token i, as authenticate gives it.
func (a *Auth) identity(i int) orchestrator.Identity {
	t := a.tokens[i]
	return orchestrator.Identity{Name: t.Name, Admin: t.Admin || t.Name == "", Answerer: t.Answerer,
		LocalSecrets: a.local[t.Name]}
}

// openKey signs the CSRF tokens of an API without tokens: random per
// process, which is all there is (loopback, one process).
func (a *Auth) openKey() []byte {
	a.openOnce.Do(func() {
		a.open = make([]byte, 32)
		_, _ = rand.Read(a.open) // crypto/rand.Read never fails
	})
	return a.open
}

func sessionMAC(key []byte, stamp string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "agora-session|%s|%s", sessionVersion, stamp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// RequestErrorStatus returns the HTTP status and message of an error from
// SessionOf or Login, for a caller outside this package that writes its own
// pages.
func RequestErrorStatus(err error) (int, string) {
	if re, ok := errors.AsType[*requestError](err); ok {
		return re.status, re.msg
	}
	if errors.Is(err, ErrLogin) {
		return http.StatusUnauthorized, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}
