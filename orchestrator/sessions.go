package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/bus"
)

// SessionBucket keeps the web sessions ended before their expiry.
const SessionBucket = "agora_sessions"

// MaxSessionTTL bounds a web session and so how long an ended one must
// be remembered: the bucket forgets entries this long after their write.
const MaxSessionTTL = 7 * 24 * time.Hour

// Sessions is the session store every replica shares: a signed-out
// session, or a token's sessions up to a time, refused wherever the
// cookie is replayed (api.SessionStore).
type Sessions struct{ kv *bus.KV }

// OpenSessions opens (creating) the session bucket on b.
func OpenSessions(ctx context.Context, b *bus.Bus) (*Sessions, error) {
	kv, err := b.KeyValueTTL(ctx, SessionBucket, "agora web sessions ended before their expiry", MaxSessionTTL)
	if err != nil {
		return nil, err
	}
	return &Sessions{kv: kv}, nil
}

// EndSession remembers session id as ended. until is its expiry; the
// bucket keeps it MaxSessionTTL, which is longer.
func (s *Sessions) EndSession(ctx context.Context, id string, until time.Time) error {
	if _, err := s.kv.Put(ctx, "session."+id, []byte(until.UTC().Format(time.RFC3339))); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// EndSessionsOf ends every session of holder issued up to before.
func (s *Sessions) EndSessionsOf(ctx context.Context, holder string, before time.Time) error {
	if _, err := s.kv.Put(ctx, "holder."+holder, []byte(strconv.FormatInt(before.UnixNano(), 10))); err != nil {
		return fmt.Errorf("end sessions: %w", err)
	}
	return nil
}

// SessionEnded reports whether session id of holder, issued at issued,
// was signed out, or issued before (or as) its holder signed out everywhere.
func (s *Sessions) SessionEnded(ctx context.Context, id, holder string, issued time.Time) (bool, error) {
	if _, _, err := s.kv.Get(ctx, "session."+id); err == nil {
		return true, nil
	} else if !errors.Is(err, bus.ErrKeyNotFound) {
		return false, err
	}
	data, _, err := s.kv.Get(ctx, "holder."+holder)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	before, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return false, fmt.Errorf("session store: holder %s: %w", holder, err)
	}
	return issued.UnixNano() <= before, nil
}
