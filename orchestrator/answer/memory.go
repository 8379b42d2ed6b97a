package answer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/agoradev/agora/schemas"
)

// MemoryStore keeps earlier answers by MemoryKey. The orchestrator
// implements it on JetStream KV; MapMemory is the in-process one. Recall
// reports found=false, not an error, for a key never remembered.
type MemoryStore interface {
	Recall(ctx context.Context, key string) (r Reply, found bool, err error)
	Remember(ctx context.Context, key string, r Reply) error
}

// memoryPrefix starts every Reply.By the memory answerer returns.
const memoryPrefix = "memory: "

type memory struct{ store MemoryStore }

// NewMemory returns the memory answerer: it reuses an earlier answer to the
// same question (see MemoryKey) asked by the same sub-agent definition, when
// the task allows it (Question.AllowMemory). It declines otherwise, and when
// the remembered answer is not one of the current options.
func NewMemory(store MemoryStore) Answerer { return memory{store: store} }

// Ask implements Answerer.
func (m memory) Ask(ctx context.Context, q Question) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	if !q.AllowMemory {
		return Reply{}, fmt.Errorf("%w: the task does not allow memory", ErrDecline)
	}
	if q.SubagentHash == "" {
		return Reply{}, fmt.Errorf("%w: the question has no sub-agent hash", ErrDecline)
	}
	r, found, err := m.store.Recall(ctx, MemoryKey(q))
	if err != nil {
		return Reply{}, fmt.Errorf("memory: recall: %w", err)
	}
	if !found {
		return Reply{}, fmt.Errorf("%w: no earlier answer to this question", ErrDecline)
	}
	if schemas.Blank(r.Answer) {
		return Reply{}, fmt.Errorf("%w: the remembered answer is empty", ErrDecline)
	}
	if len(q.Options) > 0 && !containsExact(q.Options, r.Answer) {
		return Reply{}, fmt.Errorf("%w: the remembered answer %q is not one of: %s", ErrDecline, r.Answer, strings.Join(q.Options, ", "))
	}
	by := r.By
	if by == "" {
		by = "an earlier answer"
	}
	return Reply{Answer: r.Answer, By: memoryPrefix + "answered by " + by}, nil
}

// Remember stores an accepted answer to q so the memory answerer can reuse
// it. The orchestrator calls it after every accepted answer, except an
// assumed default. The stored Reply.By records who answered and where
// ("alice on task t-3 round 1"). A reply that came from memory itself is not
// stored again: the original is already there, with its provenance.
func Remember(ctx context.Context, store MemoryStore, q Question, reply Reply) error {
	if strings.HasPrefix(reply.By, memoryPrefix) {
		return nil
	}
	if q.SubagentHash == "" {
		return fmt.Errorf("remember answer: the question has no sub-agent hash")
	}
	a, err := ValidateAnswer(q, reply.Answer)
	if err != nil {
		return fmt.Errorf("remember answer: %w", err)
	}
	by := reply.By
	if by == "" {
		by = "someone"
	}
	r := Reply{Answer: a, By: fmt.Sprintf("%s on task %s round %d", by, q.TaskID, q.Round)}
	if err := store.Remember(ctx, MemoryKey(q), r); err != nil {
		return fmt.Errorf("remember answer: %w", err)
	}
	return nil
}

// MemoryKey is the memory key of q: the hex SHA-256 of the sub-agent hash,
// the normalised question (trimmed, case-folded, internal white space
// collapsed, trailing punctuation dropped) and the set of options (order and
// duplicates ignored). It is 64 characters of [0-9a-f], valid as a
// JetStream KV key and as a NATS subject token.
func MemoryKey(q Question) string {
	opts := optionSet(q.Options)
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	field("agora-memory-v1")
	field(q.SubagentHash)
	field(normalizeQuestion(q.Question))
	for _, o := range opts {
		field(o)
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:])
}

// normalizeQuestion trims, case-folds, collapses internal white space and
// drops trailing punctuation, so "Rewrite A or B?" and " rewrite a  or b "
// are the same question.
func normalizeQuestion(s string) string {
	s = strings.Join(strings.FieldsFunc(foldCase(s), schemas.IsSpace), " ")
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || schemas.IsSpace(r) })
}

// foldCase maps every rune to the smallest rune of its simple case-folding
// orbit, so two strings fold equal exactly when strings.EqualFold says so.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

// MapMemory is a MemoryStore in a map, for tests and single-process use.
// The zero value is ready; it is safe for concurrent use.
type MapMemory struct {
	mu sync.Mutex
	m  map[string]Reply
}

var _ MemoryStore = (*MapMemory)(nil)

// Recall implements MemoryStore.
func (m *MapMemory) Recall(ctx context.Context, key string) (Reply, bool, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[key]
	return r, ok, nil
}

// Remember implements MemoryStore; a later answer replaces an earlier one.
func (m *MapMemory) Remember(ctx context.Context, key string, r Reply) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]Reply)
	}
	m.m[key] = r
	return nil
}
