package orchestrator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestOpenEntryRoundTrip: an open task's packed entry gives back, from a
// task record and from a snapshot of it, what its unpacked list view
// gives every reader of the open tasks: the view itself (the pages), the
// questions page's membership and order, the question groups' and the
// stats' open question, the outbox sweep's and recovery's retry and due
// times, and the owner and labels the filters read.
func TestOpenEntryRoundTrip(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	def := "b"
	round := func(state wire.State) wire.Round {
		return wire.Round{N: 1, Attempt: 1, DispatchID: "d-1", State: state, QueuedAt: base, Enqueued: true,
			Result: json.RawMessage(`{"big":"result"}`), Artifacts: []wire.Artifact{{Name: "a.txt", Size: 3}}}
	}
	asked := func(answered bool) wire.Round {
		r := round(wire.StateNeedsInput)
		r.StartedAt, r.EndedAt, r.AskedAt, r.StepDeadline = base.Add(time.Second), base.Add(2*time.Second), base.Add(2*time.Second), base.Add(time.Hour)
		r.Question = &schemas.NeedsInput{Question: "Which one?", Options: []string{"a", "b"}, Context: "both work", Default: &def,
			PartialState: json.RawMessage(`{"notes":"` + strings.Repeat("x", 4096) + `"}`)}
		r.Decisions = []wire.Decision{{StepIndex: 0, Step: "agent:x", Result: "error", Detail: "timed out", At: r.AskedAt},
			{StepIndex: 1, Step: "human=1h", Result: "pending", At: r.AskedAt}}
		if answered {
			r.Answer = &wire.Answer{Value: "a", By: "alice", Channel: "api", At: base.Add(time.Minute), WaitMS: 58_000}
		}
		return r
	}
	retrying := func(at time.Time) wire.Round {
		r := round(wire.StateQueued)
		r.Enqueued, r.Attempt, r.RetryAt = false, 2, at
		r.QueuedAt = base.Add(-time.Minute)
		return r
	}
	notEnqueued := round(wire.StateQueued)
	notEnqueued.Enqueued = false
	running := round(wire.StateRunning)
	running.StartedAt = base.Add(time.Second)
	earlier := round(wire.StateFinished)
	earlier.EndedAt = base
	for _, tt := range []struct {
		name   string
		state  wire.State
		rounds []wire.Round
	}{
		{"queued, enqueued", wire.StateQueued, []wire.Round{round(wire.StateQueued)}},
		{"queued, not enqueued", wire.StateQueued, []wire.Round{notEnqueued}},
		{"queued, retry waiting", wire.StateQueued, []wire.Round{retrying(base.Add(time.Hour))}},
		{"queued, retry due", wire.StateQueued, []wire.Round{retrying(base.Add(-30 * time.Second))}},
		{"queued, no round yet", wire.StateQueued, nil},
		{"running", wire.StateRunning, []wire.Round{running}},
		{"asked", wire.StateNeedsInput, []wire.Round{earlier, asked(false)}},
		{"asked and answered", wire.StateNeedsInput, []wire.Round{asked(true)}},
		{"running, an earlier round asked", wire.StateRunning, []wire.Round{asked(true), running}},
		{"a state this version does not know", "paused", []wire.Round{asked(false)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "k-" + strings.ReplaceAll(tt.name, " ", "-")
			task := &wire.Task{ID: id, Owner: "alice", State: tt.state, Rounds: tt.rounds, CreatedAt: base, UpdatedAt: base.Add(time.Minute),
				Request: wire.SubmitRequest{TaskID: id, Subagent: script("lister", "true"), Labels: map[string]string{wire.BatchLabel: "b-1", "team": "x"},
					Input: json.RawMessage(`{"blob":"` + strings.Repeat("y", 4096) + `"}`)},
				Result: json.RawMessage(`{"big":"result"}`)}
			value, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			// The unpacked view: what the cache kept decoded before.
			var want wire.Task
			if err := json.Unmarshal(value, &want); err != nil {
				t.Fatal(err)
			}
			want.Revision = 7
			ListView(&want)

			fromRecord := newTaskCache(natstest.Logger(t))
			fromRecord.put(id, value, 7)
			fromRecord.setReady(true)
			fromRecord.delivered.Store(7) // as the watch does
			cp, _, ok := fromRecord.capture()
			if !ok || len(cp.entries) != 1 {
				t.Fatalf("capture = %d entries, %v", len(cp.entries), ok)
			}
			data, err := encodeSnapshot(cp)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := decodeSnapshot(data, 1)
			if err != nil {
				t.Fatal(err)
			}
			fromSnapshot := newTaskCache(natstest.Logger(t))
			fromSnapshot.restore(entries, 7)
			fromSnapshot.setReady(true)

			for _, c := range []struct {
				name string
				c    *taskCache
			}{{"from the record", fromRecord}, {"from the snapshot", fromSnapshot}} {
				checkOpenEntry(t, c.name, c.c, id, &want)
			}
		})
	}
}

// checkOpenEntry compares what c answers of the open task id with what
// its unpacked list view want says.
func checkOpenEntry(t *testing.T, from string, c *taskCache, id string, want *wire.Task) {
	t.Helper()
	e := c.byID[id]
	if e == nil || e.open == nil || c.open[id] != e {
		t.Fatalf("%s: %s is not an open entry", from, id)
	}
	got, err := e.open.task()
	if err != nil {
		t.Fatalf("%s: the view does not decode: %v", from, err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s: the packed view decodes to\n%s\nwant the list view\n%s", from, g, w)
	}
	r := currentRound(want)
	listed := want.State == wire.StateNeedsInput && r != nil && r.Question != nil
	if a, ok := c.asking[id]; ok != listed || ok && (sortKey{a.asked, id} != keyOf(r.AskedAt, id) || a.e != e) {
		t.Errorf("%s: on the questions page %v (%+v), want %v", from, ok, a, listed)
	}
	if first := c.firstAsked(10, true, "", nil); len(first) != len(c.asking) {
		t.Errorf("%s: firstAsked = %d, want %d", from, len(first), len(c.asking))
	}
	if first := c.firstAsked(10, false, "alice", nil); len(first) != len(c.asking) {
		t.Errorf("%s: firstAsked of its owner = %d, want %d", from, len(first), len(c.asking))
	}
	if first := c.firstAsked(10, false, "bob", nil); len(first) != 0 {
		t.Errorf("%s: firstAsked of another owner = %d, want 0", from, len(first))
	}
	waits := want.State == wire.StateNeedsInput && r != nil && r.Question != nil && r.Answer == nil
	if got := e.open.waitsOnQuestion(e.state()); got != waits {
		t.Errorf("%s: waitsOnQuestion = %v, want %v", from, got, waits)
	}
	c.eachStats(taskFilter{}, time.Time{}, func(s *TaskStats) {
		if s.OpenQuestion != waits {
			t.Errorf("%s: stats say open question %v, want %v", from, s.OpenQuestion, waits)
		}
	})
	qs := c.openQuestions(true, "", "")
	if len(qs) != map[bool]int{true: 1}[waits] {
		t.Fatalf("%s: openQuestions = %d, want %v", from, len(qs), waits)
	}
	if waits {
		q := qs[0]
		if q.key != keyOf(r.AskedAt, id) || q.batch != want.Request.Labels[wire.BatchLabel] || q.subagent != want.Request.Subagent.Name ||
			q.group != QuestionGroupKey(r.Question.Question, r.Question.Options) || q.failures != stepFailures(r) || int(q.round) != r.N ||
			!time.Unix(0, q.asked).Equal(r.AskedAt) {
			t.Errorf("%s: the open question is %+v (batch %q, sub-agent %q, group %q, failures %q, round %d); want the view's", from, q.key, q.batch, q.subagent, q.group, q.failures, q.round)
		}
		for _, f := range []struct {
			all          bool
			owner, batch string
			want         int
		}{{false, "alice", "b-1", 1}, {false, "bob", "", 0}, {true, "", "b-2", 0}, {false, "", "", 0}} {
			if got := len(c.openQuestions(f.all, f.owner, f.batch)); got != f.want {
				t.Errorf("%s: openQuestions(%v, %q, %q) = %d, want %d", from, f.all, f.owner, f.batch, got, f.want)
			}
		}
	}
	if e.open.has(openRound) != (r != nil) {
		t.Errorf("%s: has a round %v, want %v", from, e.open.has(openRound), r != nil)
	}
	if r == nil {
		return
	}
	if e.open.has(openEnqueued) != r.Enqueued {
		t.Errorf("%s: enqueued %v, want %v", from, e.open.has(openEnqueued), r.Enqueued)
	}
	base := want.CreatedAt
	for _, now := range []time.Time{base.Add(-2 * time.Hour), base, base.Add(time.Second), base.Add(2 * time.Hour)} {
		if got, want := e.open.waitingRetry(now), waitingRetry(r, now); got != want {
			t.Errorf("%s: waitingRetry at %s = %v, want %v", from, now, got, want)
		}
		for _, minAge := range []time.Duration{0, 10 * time.Second, time.Hour} {
			got := e.open.due <= now.UnixNano()-int64(minAge)
			if want := now.Sub(later(r.QueuedAt, r.RetryAt)) >= minAge; got != want {
				t.Errorf("%s: due by %s with minAge %s = %v, want %v", from, now, minAge, got, want)
			}
		}
	}
	if r.RetryAt.IsZero() != (e.open.retryAt == 0) || !r.RetryAt.IsZero() && !time.Unix(0, e.open.retryAt).Equal(r.RetryAt) {
		t.Errorf("%s: retry at %d, want %s", from, e.open.retryAt, r.RetryAt)
	}
	c.eachOpen(func(o openTask) {
		if o.id != id || o.owner != want.Owner || !labelIs(o.labels, wire.BatchLabel, want.Request.Labels[wire.BatchLabel]) || o.state != want.State {
			t.Errorf("%s: eachOpen gives %s of %q in %s, labels %q; want %s of %q in %s", from, o.id, o.owner, o.state, o.labels, id, want.Owner, want.State)
		}
	})
}

// TestKeepFirst: keepFirst keeps the n smallest keys offered, in order,
// whatever order they come in.
func TestKeepFirst(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct{ offered, n int }{{0, 5}, {3, 5}, {5, 5}, {200, 5}, {200, 101}, {50, 1}, {10, 0}} {
		var all []sortKey
		var first []keyedOpen
		for i := range tt.offered {
			k := sortKey{int64(rng.IntN(20)), fmt.Sprintf("t-%03d", i)}
			all = append(all, k)
			first = keepFirst(first, tt.n, keyedOpen{key: k})
		}
		slices.SortFunc(all, func(a, b sortKey) int { return a.compare(b) })
		want := all[:min(tt.n, len(all))]
		var got []sortKey
		for _, f := range first {
			got = append(got, f.key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("keepFirst of %d keys, n %d = %v, want %v", tt.offered, tt.n, got, want)
		}
	}
}
