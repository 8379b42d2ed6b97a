package answer_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/answertest"
)

func TestMapMemoryConformance(t *testing.T) {
	t.Parallel()
	answertest.MemoryStore(t, func(t *testing.T) answer.MemoryStore { return &answer.MapMemory{} })
}

func TestMemoryKey(t *testing.T) {
	t.Parallel()
	base := answer.Question{SubagentHash: "h1", Question: "Should I rewrite A or B?", Options: []string{"A", "B"}}
	with := func(f func(q *answer.Question)) answer.Question {
		q := base
		q.Options = append([]string(nil), base.Options...)
		f(&q)
		return q
	}
	tests := []struct {
		name string
		q    answer.Question
		same bool
	}{
		{name: "identical", q: base, same: true},
		{name: "surrounding white space", q: with(func(q *answer.Question) { q.Question = "  Should I rewrite A or B?\n" }), same: true},
		{name: "case", q: with(func(q *answer.Question) { q.Question = "SHOULD i rewrite a or b?" }), same: true},
		{name: "internal white space", q: with(func(q *answer.Question) { q.Question = "Should I\trewrite  A\nor B?" }), same: true},
		{name: "Unicode white space, byte-order mark included", q: with(func(q *answer.Question) {
			q.Question, q.Options = "\ufeffShould I\u3000rewrite A\ufeffor B?\u00a0", []string{"\ufeffA", "B\u2028"}
		}), same: true},
		{name: "trailing punctuation", q: with(func(q *answer.Question) { q.Question = "Should I rewrite A or B ?!…" }), same: true},
		{name: "no trailing punctuation", q: with(func(q *answer.Question) { q.Question = "Should I rewrite A or B" }), same: true},
		{name: "option order", q: with(func(q *answer.Question) { q.Options = []string{"B", "A"} }), same: true},
		{name: "duplicate option", q: with(func(q *answer.Question) { q.Options = []string{"A", "B", "A"} }), same: true},
		{name: "other task and round", q: with(func(q *answer.Question) { q.TaskID, q.Round, q.Context = "t-9", 4, "ctx" }), same: true},
		{name: "other words", q: with(func(q *answer.Question) { q.Question = "Should I rewrite A or C?" }), same: false},
		{name: "inner punctuation", q: with(func(q *answer.Question) { q.Question = "Should I rewrite A, or B?" }), same: false},
		{name: "other options", q: with(func(q *answer.Question) { q.Options = []string{"A", "C"} }), same: false},
		{name: "option case", q: with(func(q *answer.Question) { q.Options = []string{"a", "b"} }), same: false},
		{name: "no options", q: with(func(q *answer.Question) { q.Options = nil }), same: false},
		{name: "other sub-agent definition", q: with(func(q *answer.Question) { q.SubagentHash = "h2" }), same: false},
	}
	want := answer.MemoryKey(base)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("MemoryKey = %q; want 64 hex digits", want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := answer.MemoryKey(tt.q); (got == want) != tt.same {
				t.Errorf("MemoryKey(%+v) == MemoryKey(base) is %v; want %v", tt.q, got == want, tt.same)
			}
		})
	}
}

func TestMemoryAsk(t *testing.T) {
	t.Parallel()
	earlier := answer.Question{TaskID: "t-3", Round: 1, Subagent: "coder", SubagentHash: "h1", Question: "Rewrite A or B?", Options: []string{"A", "B"}}
	now := earlier
	now.TaskID, now.Round, now.AllowMemory = "t-7", 2, true
	now.Options = []string{"B", "A"}
	tests := []struct {
		name     string
		remember *answer.Reply // stored under MemoryKey(earlier) with Remember
		raw      *answer.Reply // stored as is, bypassing Remember's checks
		ask      func(q answer.Question) answer.Question
		want     string // outcome
		wantBy   string
		wantErr  string
	}{
		{name: "reuses the earlier answer", remember: &answer.Reply{Answer: "B", By: "alice"},
			want: "answered", wantBy: "memory: answered by alice on task t-3 round 1"},
		{name: "task does not allow memory", remember: &answer.Reply{Answer: "B", By: "alice"},
			ask: func(q answer.Question) answer.Question { q.AllowMemory = false; return q }, want: "declined", wantErr: "does not allow memory"},
		{name: "nothing remembered", want: "declined", wantErr: "no earlier answer"},
		{name: "other sub-agent definition", remember: &answer.Reply{Answer: "B", By: "alice"},
			ask: func(q answer.Question) answer.Question { q.SubagentHash = "h2"; return q }, want: "declined"},
		{name: "no sub-agent hash", remember: &answer.Reply{Answer: "B", By: "alice"},
			ask: func(q answer.Question) answer.Question { q.SubagentHash = ""; return q }, want: "declined", wantErr: "no sub-agent hash"},
		{name: "remembered answer not among the options", raw: &answer.Reply{Answer: "b", By: "x"},
			want: "declined", wantErr: `"b" is not one of`},
		{name: "remembered answer empty", raw: &answer.Reply{Answer: " ", By: "x"}, want: "declined", wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			store := &answer.MapMemory{}
			if tt.remember != nil {
				if err := answer.Remember(ctx, store, earlier, *tt.remember); err != nil {
					t.Fatalf("Remember: %v", err)
				}
			}
			if tt.raw != nil {
				if err := store.Remember(ctx, answer.MemoryKey(earlier), *tt.raw); err != nil {
					t.Fatalf("store.Remember: %v", err)
				}
			}
			q := now
			if tt.ask != nil {
				q = tt.ask(q)
			}
			got, err := answer.NewMemory(store).Ask(ctx, q)
			if outcome(err) != tt.want {
				t.Fatalf("Ask = %+v, %v; want %s", got, err, tt.want)
			}
			if tt.wantBy != "" && (got.By != tt.wantBy || got.Answer != tt.remember.Answer) {
				t.Errorf("Ask = %+v; want answer %q by %q", got, tt.remember.Answer, tt.wantBy)
			}
			if tt.wantErr != "" && !regexp.MustCompile(regexp.QuoteMeta(tt.wantErr)).MatchString(err.Error()) {
				t.Errorf("Ask error = %v; want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestRemember(t *testing.T) {
	t.Parallel()
	q := answer.Question{TaskID: "t-3", Round: 2, SubagentHash: "h1", Question: "A or B?", Options: []string{"A", "B"}}
	tests := []struct {
		name    string
		q       answer.Question
		reply   answer.Reply
		want    *answer.Reply // stored; nil: nothing stored
		wantErr bool
	}{
		{name: "stores with provenance", q: q, reply: answer.Reply{Answer: "A", By: "alice"},
			want: &answer.Reply{Answer: "A", By: "alice on task t-3 round 2"}},
		{name: "stores the canonical option", q: q, reply: answer.Reply{Answer: "2", By: "lookup: rules.yaml rule 1"},
			want: &answer.Reply{Answer: "B", By: "lookup: rules.yaml rule 1 on task t-3 round 2"}},
		{name: "unknown answerer", q: q, reply: answer.Reply{Answer: "a"},
			want: &answer.Reply{Answer: "A", By: "someone on task t-3 round 2"}},
		{name: "a memory answer is not stored again", q: q, reply: answer.Reply{Answer: "A", By: "memory: answered by alice on task t-1 round 1"}},
		{name: "invalid answer", q: q, reply: answer.Reply{Answer: "C", By: "bob"}, wantErr: true},
		{name: "no sub-agent hash", q: answer.Question{Question: "A or B?"}, reply: answer.Reply{Answer: "A", By: "bob"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &answer.MapMemory{}
			err := answer.Remember(t.Context(), store, tt.q, tt.reply)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Remember(%+v) = %v; want error %v", tt.reply, err, tt.wantErr)
			}
			got, found, err := store.Recall(t.Context(), answer.MemoryKey(tt.q))
			if err != nil {
				t.Fatalf("Recall: %v", err)
			}
			if tt.want == nil {
				if found {
					t.Errorf("Recall = %+v; want nothing stored", got)
				}
				return
			}
			if !found || got != *tt.want {
				t.Errorf("Recall = %+v, %v; want %+v", got, found, *tt.want)
			}
		})
	}
}

func TestMemoryStoreErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("kv unavailable")
	store := failingStore{err: boom}
	q := answer.Question{SubagentHash: "h", Question: "?", AllowMemory: true}
	if _, err := answer.NewMemory(store).Ask(t.Context(), q); !errors.Is(err, boom) || outcome(err) != "error" {
		t.Errorf("Ask with a failing store = %v; want an error wrapping %v", err, boom)
	}
	if err := answer.Remember(t.Context(), store, q, answer.Reply{Answer: "x", By: "y"}); !errors.Is(err, boom) {
		t.Errorf("Remember with a failing store = %v; want an error wrapping %v", err, boom)
	}
}

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	store := &answer.MapMemory{}
	q := answer.Question{TaskID: "t-1", Round: 1, SubagentHash: "h", Question: "A or B?", Options: []string{"A", "B"}, AllowMemory: true}
	if err := answer.Remember(t.Context(), store, q, answer.Reply{Answer: "B", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	answertest.Answerer(t, answer.NewMemory(store), q, time.Second)
}

type failingStore struct{ err error }

func (f failingStore) Recall(context.Context, string) (answer.Reply, bool, error) {
	return answer.Reply{}, false, f.err
}
func (f failingStore) Remember(context.Context, string, answer.Reply) error { return f.err }
