package orchestrator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agoradev/agora/wire"
)

// statsAsker asks a question with options and a default in round 1, a
// free-text one in round 2, and finishes in round 3.
const statsAsker = `
set -e
n=$(cat .agora/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .agora/n
case $n in
1) agora-worker ask "Which colour?" --option red --option blue --default red ;;
2) agora-worker ask "Anything else?" ;;
esac
`

// TestStatsOfABatch runs a batch of real tasks through the whole stack
// and reads their stats: three of a sub-agent that asks twice — one
// answered with the default, one with the other option, one left to take
// the default and then expire — and one of a sub-agent that asks nothing,
// submitted by another token. The numbers come from the records the
// rounds left; each caller sees the stats of the tasks it may see.
func TestStatsOfABatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	batch := map[string]string{wire.BatchLabel: "b-stats"}
	sub := script("stats-asker", statsAsker)

	answered := []struct{ first, second string }{{"red", "no"}, {"blue", "yes, tidy up"}}
	var ids []string
	for _, a := range answered {
		task := s.submit(wire.SubmitRequest{Subagent: sub, Labels: batch})
		ids = append(ids, task.ID)
		for round, value := range []string{a.first, a.second} {
			task = s.waitRound(task.ID, round+1, wire.StateNeedsInput)
			if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: value, By: "alice", Channel: "cli"}); err != nil {
				t.Fatalf("answer round %d of %s: %v", round+1, task.ID, err)
			}
		}
	}
	// Nobody answers: round 1 takes its default after a second, round 2
	// has none and expires.
	lapsed := s.submit(wire.SubmitRequest{Subagent: sub, Labels: batch, Route: "human=1s"})
	bobs := WithIdentity(ctx, Identity{Name: "bob"})
	plain, err := s.orch.Submit(bobs, wire.SubmitRequest{TaskID: "t-stats-plain-" + lapsed.ID, Subagent: script("stats-plain", "true"), Labels: batch})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if task := s.waitState(id, wire.StateFinished, wire.StateFailed, wire.StateExpired); task.State != wire.StateFinished {
			t.Fatalf("task %s ended %s: %+v", id, task.State, task.Outcome)
		}
	}
	if task := s.waitState(lapsed.ID, wire.StateFinished, wire.StateFailed, wire.StateExpired); task.State != wire.StateExpired {
		t.Fatalf("unanswered task ended %s: %+v", task.State, task.Outcome)
	}
	s.waitState(plain.ID, wire.StateFinished, wire.StateFailed)

	st, err := s.orch.Stats(ctx, wire.StatsOptions{Label: wire.BatchLabel + "=b-stats"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Subagents) != 2 || st.Subagents[0].Subagent != "stats-asker" || st.Subagents[1].Subagent != "stats-plain" {
		t.Fatalf("sub-agents = %+v, want stats-asker then stats-plain", st.Subagents)
	}
	got := st.Subagents[0]
	if got.AnswerWait.Count != 5 || got.AnswerWait.MaxMS < 1000 || got.AnswerWait.MedianMS > got.AnswerWait.P90MS || got.AnswerWait.P90MS > got.AnswerWait.MaxMS {
		t.Errorf("answer wait = %+v, want 5 waits, the longest the default's second or more, median ≤ p90 ≤ max", got.AnswerWait)
	}
	if c := got.ColdStart; c.Count != 8 || c.MaxMS <= 0 || c.MaxMS > 120_000 {
		t.Errorf("cold start = %+v, want one of each of the 8 dispatches, above 0 and under 2 minutes", c)
	}
	got.AnswerWait, got.ColdStart = wire.Durations{}, wire.Durations{}
	want := wire.SubagentStats{Subagent: "stats-asker", Tasks: 3, EndedTasks: 3,
		Questions: 6, QuestionsPerTask: 2, WithOptions: 3, WithOptionsShare: 0.5, WithDefault: 3, WithDefaultShare: 0.5,
		Answered: 5, AnsweredWithDefault: 3, DefaultTaken: 2, DefaultTakenShare: 2.0 / 3, DefaultAssumed: 1,
		Rounds: 8, Dispatches: 8, RoundsPerTask: wire.Distribution{Count: 3, Mean: 8.0 / 3, Median: 3, P90: 3, Max: 3}}
	if !jsonEqual(got, want) {
		t.Errorf("stats-asker:\n got %+v\nwant %+v", got, want)
	}
	if tot := st.Total; tot.Tasks != 4 || tot.Questions != 6 || tot.Dispatches != 9 || tot.ColdStart.Count != 9 || tot.Usage != nil {
		t.Errorf("total = %+v, want 4 tasks, 6 questions, 9 dispatches each with a cold start, no usage (exec reports none)", tot)
	}

	// Scope: bob sees his one task, an answerer every one, eve none.
	for _, tt := range []struct {
		who   Identity
		tasks int
	}{{Identity{Name: "bob"}, 1}, {Identity{Name: "carol", Answerer: true}, 4}, {Identity{Name: "eve"}, 0}} {
		st, err := s.orch.Stats(WithIdentity(ctx, tt.who), wire.StatsOptions{})
		if err != nil || st.Total.Tasks != tt.tasks || len(st.Subagents) != min(tt.tasks, 2) {
			t.Errorf("Stats as %s = %+v, %v; want %d tasks", tt.who.Name, st.Total, err, tt.tasks)
		}
	}
	// Filters: one sub-agent, a limit, a time after every task.
	if st, err := s.orch.Stats(ctx, wire.StatsOptions{Subagent: "stats-plain"}); err != nil || st.Total.Tasks != 1 || st.Total.Rounds != 1 || st.Total.Questions != 0 {
		t.Errorf("Stats(stats-plain) = %+v, %v; want its one task of one round", st.Total, err)
	}
	if st, err := s.orch.Stats(ctx, wire.StatsOptions{Limit: 1}); err != nil || len(st.Subagents) != 1 || st.OmittedSubagents != 1 || st.Total.Tasks != 4 {
		t.Errorf("Stats(limit 1) = %d sub-agents, %d omitted, %d tasks, %v; want 1, 1 and 4", len(st.Subagents), st.OmittedSubagents, st.Total.Tasks, err)
	}
	if st, err := s.orch.Stats(ctx, wire.StatsOptions{Since: time.Now().Add(time.Hour)}); err != nil || st.Total.Tasks != 0 {
		t.Errorf("Stats(since an hour ahead) = %+v, %v; want none", st.Total, err)
	}
}

// waitRound polls the task until its current round is n and in state.
func (s *stack) waitRound(id string, n int, state wire.State) *wire.Task {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		t, err := s.orch.Get(context.Background(), id)
		if err != nil {
			s.t.Fatal(err)
		}
		if r := currentRound(t); r != nil && r.N == n && t.State == state {
			return t
		}
		if t.State.Terminal() || time.Now().After(deadline) {
			data, _ := json.MarshalIndent(t, "", "  ")
			s.t.Fatalf("task %s is %s, want round %d %s:\n%s", id, t.State, n, state, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
