// Package answertest holds the conformance suites of the answer seam: every
// MemoryStore (MapMemory, the orchestrator's JetStream KV store) and every
// Answerer (the built-in ones, plugged-in ones such as Slack) runs them in
// its own tests. A test helper: what it may import, docs/architecture.md.
package answertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
)

// MemoryStore runs the MemoryStore conformance suite; newStore returns an
// empty store, cleaned up by t.Cleanup.
func MemoryStore(t *testing.T, newStore func(t *testing.T) answer.MemoryStore) {
	t.Helper()
	ctx := t.Context()
	q := answer.Question{TaskID: "t-1", Round: 1, Subagent: "coder", SubagentHash: "sha256-abc", Question: "A or B?", Options: []string{"A", "B"}}
	key := answer.MemoryKey(q)

	t.Run("recall of an unknown key is not found", func(t *testing.T) {
		s := newStore(t)
		r, found, err := s.Recall(ctx, key)
		if err != nil || found {
			t.Fatalf("Recall(unknown) = %+v, %v, %v; want not found, no error", r, found, err)
		}
	})
	t.Run("remember then recall", func(t *testing.T) {
		s := newStore(t)
		want := answer.Reply{Answer: "B", By: "alice on task t-1 round 1"}
		if err := s.Remember(ctx, key, want); err != nil {
			t.Fatalf("Remember: %v", err)
		}
		got, found, err := s.Recall(ctx, key)
		if err != nil || !found || got != want {
			t.Fatalf("Recall = %+v, %v, %v; want %+v, true, nil", got, found, err, want)
		}
	})
	t.Run("a later answer replaces an earlier one", func(t *testing.T) {
		s := newStore(t)
		for _, a := range []string{"A", "B"} {
			if err := s.Remember(ctx, key, answer.Reply{Answer: a, By: "bob"}); err != nil {
				t.Fatalf("Remember(%s): %v", a, err)
			}
		}
		got, found, err := s.Recall(ctx, key)
		if err != nil || !found || got.Answer != "B" {
			t.Fatalf("Recall = %+v, %v, %v; want answer B", got, found, err)
		}
	})
	t.Run("keys are independent", func(t *testing.T) {
		s := newStore(t)
		other := q
		other.SubagentHash = "sha256-def"
		if err := s.Remember(ctx, key, answer.Reply{Answer: "A", By: "carol"}); err != nil {
			t.Fatalf("Remember: %v", err)
		}
		if r, found, err := s.Recall(ctx, answer.MemoryKey(other)); err != nil || found {
			t.Fatalf("Recall(other key) = %+v, %v, %v; want not found", r, found, err)
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		s := newStore(t)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 8 {
			wg.Go(func() {
				k := answer.MemoryKey(answer.Question{SubagentHash: "h", Question: fmt.Sprint("q", i)})
				if err := s.Remember(ctx, k, answer.Reply{Answer: fmt.Sprint(i), By: "x"}); err != nil {
					errs <- err
					return
				}
				r, found, err := s.Recall(ctx, k)
				if err != nil || !found || r.Answer != fmt.Sprint(i) {
					errs <- fmt.Errorf("Recall(q%d) = %+v, %v, %v", i, r, found, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
	t.Run("cancelled context is an error", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.Recall(cctx, key); err == nil {
			t.Errorf("Recall(cancelled ctx): no error")
		}
		if err := s.Remember(cctx, key, answer.Reply{Answer: "A"}); err == nil {
			t.Errorf("Remember(cancelled ctx): no error")
		}
	})
}

// Answerer checks the Answerer contract for a and a question q it can be
// asked: with a cancelled context Ask returns promptly with an error wrapping
// context.Canceled; with a live one (bounded by timeout) it returns a valid
// Reply naming who answered, or an error — ErrDecline, ErrPending or another.
func Answerer(t *testing.T, a answer.Answerer, q answer.Question, timeout time.Duration) {
	t.Helper()
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r, err := a.Ask(ctx, q)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Ask(cancelled ctx) = %+v, %v; want an error wrapping context.Canceled", r, err)
		}
	})
	t.Run("reply or error", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		r, err := a.Ask(ctx, q)
		if err != nil {
			if r != (answer.Reply{}) {
				t.Errorf("Ask = %+v with error %v; want a zero Reply with an error", r, err)
			}
			return
		}
		if r.By == "" {
			t.Errorf("Ask = %+v; want By naming who answered", r)
		}
		canon, verr := answer.ValidateAnswer(q, r.Answer)
		if verr != nil || canon != r.Answer {
			t.Errorf("Ask answered %q: ValidateAnswer = %q, %v; want the canonical answer", r.Answer, canon, verr)
		}
	})
}
