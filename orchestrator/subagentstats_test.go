package orchestrator

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// statsTasks are task records with every kind of round the stats count.
func statsTasks() []*wire.Task {
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	red, no := "red", "no"
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return []*wire.Task{
		{ID: "t-a", State: wire.StateFinished, CreatedAt: at(0), Owner: "alice",
			Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "painter"}, Labels: map[string]string{wire.BatchLabel: "b1"}},
			Rounds: []wire.Round{
				{N: 1, Attempt: 1, State: wire.StateNeedsInput, QueuedAt: at(0), StartedAt: at(2), EndedAt: at(10),
					Question: &schemas.NeedsInput{Question: "Colour?", Options: []string{"red", "blue"}, Default: &red},
					Answer:   &wire.Answer{Value: "red", WaitMS: 60_000},
					Usage:    &schemas.Usage{Turns: 3, CostUSD: 0.25, InputTokens: 100, OutputTokens: 50, CacheCreationInputTokens: 1000, SessionID: "s"}},
				{N: 2, Attempt: 1, State: wire.StateFailed, QueuedAt: at(70), StartedAt: at(71), EndedAt: at(72),
					Usage: &schemas.Usage{SessionID: "s"}}, // a session id alone is no usage
				{N: 2, Attempt: 2, State: wire.StateFinished, QueuedAt: at(72), RetryAt: at(82), StartedAt: at(85), EndedAt: at(90),
					Usage: &schemas.Usage{Turns: 1, CostUSD: 0.5, InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 2000, Resumed: true}},
			}},
		{ID: "t-b", State: wire.StateExpired, CreatedAt: at(1), Owner: "bob",
			Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "painter"}},
			Rounds: []wire.Round{
				{N: 1, Attempt: 1, State: wire.StateNeedsInput, QueuedAt: at(1), StartedAt: at(4), EndedAt: at(5),
					Question: &schemas.NeedsInput{Question: "Proceed?", Options: []string{"yes", "no"}, Default: &no},
					Answer:   &wire.Answer{Value: "no", WaitMS: 3_600_000, Assumed: true}},
				{N: 2, Attempt: 1, State: wire.StateNeedsInput, QueuedAt: at(3601), StartedAt: at(3602), EndedAt: at(3603),
					Question: &schemas.NeedsInput{Question: "Why?"}},
			}},
		{ID: "t-c", State: wire.StateNeedsInput, CreatedAt: at(2), Owner: "alice",
			Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "linter"}},
			Rounds: []wire.Round{
				{N: 1, Attempt: 1, State: wire.StateNeedsInput, QueuedAt: at(2), StartedAt: at(3), EndedAt: at(4),
					Question: &schemas.NeedsInput{Question: "Which file?", Options: []string{}, Default: &red}},
			}},
		{ID: "t-d", State: wire.StateQueued, CreatedAt: at(3),
			Request: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "linter"}},
			Rounds:  []wire.Round{{N: 1, Attempt: 1, State: wire.StateQueued, QueuedAt: at(3)}}},
	}
}

// The task cache's index keeps what StatsOf reads from the whole record.
func TestTaskCacheKeepsTaskStats(t *testing.T) {
	t.Parallel()
	c := newTaskCache(natstest.Logger(t))
	for i, task := range statsTasks() {
		data, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		c.put(task.ID, data, uint64(i+1))
	}
	c.setReady(true)
	var got []TaskStats
	c.eachStats(taskFilter{}, time.Time{}, func(s *TaskStats) {
		cp := *s
		cp.Rounds = append([]RoundStats(nil), s.Rounds...)
		if s.Usage != nil {
			u := *s.Usage
			cp.Usage = &u
		}
		got = append(got, cp)
	})
	tasks := statsTasks()
	if len(got) != len(tasks) {
		t.Fatalf("eachStats gave %d tasks, want %d", len(got), len(tasks))
	}
	for i, task := range tasks {
		if w := StatsOf(task); !reflect.DeepEqual(got[i], w) {
			t.Errorf("task %s: cache stats\n %+v\nwant StatsOf's\n %+v", task.ID, got[i], w)
		}
	}
	a := StatsOf(tasks[0])
	if a.MaxRound != 2 || a.Usage == nil || a.Usage.Tokens() != 3165 || a.Usage.CostUSD != 0.75 || a.Usage.Turns != 4 {
		t.Errorf("t-a: max round %d, usage %+v; want 2 rounds and the two reporting rounds summed", a.MaxRound, a.Usage)
	}
	if r := a.Rounds[2]; r.ColdStart != 3*time.Second {
		t.Errorf("t-a round 2 attempt 2: cold start %s, want 3s (from the end of the retry backoff)", r.ColdStart)
	}
	if c := StatsOf(tasks[2]); c.Rounds[0].WithOptions || !c.Rounds[0].WithDefault || !c.OpenQuestion {
		t.Errorf("t-c: %+v; want an open question with an empty options list (no options) and a default", c)
	}
	if len(c.names.idx) != 4 {
		t.Errorf("the cache holds %d names, want 4 (sub-agents painter, linter; owners alice, bob)", len(c.names.idx))
	}
}

func TestStatsOfTasks(t *testing.T) {
	t.Parallel()
	total, per := &statsAcc{}, map[string]*statsAcc{}
	for _, task := range statsTasks() {
		s := StatsOf(task)
		if per[s.Subagent] == nil {
			per[s.Subagent] = &statsAcc{out: wire.SubagentStats{Subagent: s.Subagent}}
		}
		per[s.Subagent].add(&s)
		total.add(&s)
	}
	st := statsFrom(total, per, 10)
	painter := wire.SubagentStats{Subagent: "painter", Tasks: 2, EndedTasks: 2,
		Questions: 3, QuestionsPerTask: 1.5, WithOptions: 2, WithOptionsShare: 2.0 / 3, WithDefault: 2, WithDefaultShare: 2.0 / 3,
		Answered: 2, AnsweredWithDefault: 2, DefaultTaken: 2, DefaultTakenShare: 1, DefaultAssumed: 1,
		AnswerWait: wire.Durations{Count: 2, MedianMS: 60_000, P90MS: 3_600_000, MaxMS: 3_600_000, TotalMS: 3_660_000},
		Rounds:     4, Dispatches: 5, RoundsPerTask: wire.Distribution{Count: 2, Mean: 2, Median: 2, P90: 2, Max: 2},
		ColdStart: wire.Durations{Count: 5, MedianMS: 2000, P90MS: 3000, MaxMS: 3000, TotalMS: 10_000}, // 2, 1, 3 and 3, 1 s
		Usage: &wire.UsageStats{Tasks: 1, InputTokens: 110, OutputTokens: 55, CacheCreationInputTokens: 1000, CacheReadInputTokens: 2000,
			CostUSD: 0.75, TokensPerTask: 3165, CostPerTaskUSD: 0.75}}
	linter := wire.SubagentStats{Subagent: "linter", Tasks: 2, Questions: 1, QuestionsPerTask: 0.5, WithDefault: 1, WithDefaultShare: 1,
		Rounds: 2, Dispatches: 2, ColdStart: wire.Durations{Count: 1, MedianMS: 1000, P90MS: 1000, MaxMS: 1000, TotalMS: 1000}}
	if len(st.Subagents) != 2 || !jsonEqual(st.Subagents[0], linter) || !jsonEqual(st.Subagents[1], painter) {
		t.Errorf("sub-agents (tied on tasks, so by name):\n got %+v\nwant %+v\n     %+v", st.Subagents, linter, painter)
	}
	if tot := st.Total; tot.Tasks != 4 || tot.Subagent != "" || tot.Questions != 4 || tot.Dispatches != 7 || tot.Usage == nil || tot.Usage.CostPerTaskUSD != 0.75 {
		t.Errorf("total = %+v", tot)
	}
	if st := statsFrom(total, per, 1); len(st.Subagents) != 1 || st.OmittedSubagents != 1 {
		t.Errorf("limit 1: %d listed, %d omitted; want 1 and 1", len(st.Subagents), st.OmittedSubagents)
	}
}

func TestNearestRank(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ n, p, want int }{
		{1, 50, 0}, {1, 90, 0}, {2, 50, 0}, {2, 90, 1}, {3, 50, 1}, {10, 50, 4}, {10, 90, 8}, {11, 90, 9}, {100, 90, 89}, {100, 100, 99},
	} {
		if got := nearestRank(tt.n, tt.p); got != tt.want {
			t.Errorf("nearestRank(%d, %d) = %d, want %d", tt.n, tt.p, got, tt.want)
		}
	}
}
