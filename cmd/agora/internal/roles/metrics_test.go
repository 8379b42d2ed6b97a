package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// round is a round that ran for d and ended in state.
func round(n int, state wire.State, d time.Duration) wire.Round {
	return wire.Round{N: n, State: state, QueuedAt: t0.Add(-1500 * time.Millisecond), StartedAt: t0, EndedAt: t0.Add(d)}
}

// asked is a round that asked a question, answered after wait (or open).
func asked(n int, wait time.Duration, answered bool) wire.Round {
	r := round(n, wire.StateNeedsInput, 2*time.Second)
	r.Question = &schemas.NeedsInput{Question: "A or B?"}
	if answered {
		r.Answer = &wire.Answer{Value: "A", WaitMS: wait.Milliseconds()}
	}
	return r
}

func tasksForMetrics() []*wire.Task {
	def := "A"
	tasks := []*wire.Task{
		{ID: "done-after-answer", State: wire.StateFinished, Rounds: []wire.Round{
			asked(1, 90*time.Second, true), round(2, wire.StateFinished, 20*time.Second)}},
		{ID: "done-at-once", State: wire.StateFinished, Rounds: []wire.Round{
			round(1, wire.StateFinished, 500*time.Millisecond)}},
		{ID: "waiting", State: wire.StateNeedsInput, Rounds: []wire.Round{asked(1, 0, false)}},
		{ID: "failed", State: wire.StateFailed, Rounds: []wire.Round{
			asked(1, 3*time.Hour, true), asked(2, 2*time.Second, true), round(3, wire.StateFailed, 4000*time.Second)}},
		{ID: "queued", State: wire.StateQueued, Rounds: []wire.Round{{N: 1, State: wire.StateQueued}}},
		{ID: "running", State: wire.StateRunning, Rounds: []wire.Round{{N: 1, State: wire.StateRunning, StartedAt: t0}}},
		// Clocks of two hosts: an end before the start counts as 0s.
		{ID: "skewed", State: wire.StateCancelled, Rounds: []wire.Round{round(1, wire.StateCancelled, -time.Second)}},
	}
	// Two sub-agents: "painter" asks, with a default the first answer
	// takes, and reports usage; "linter" is the rest.
	for _, t := range tasks {
		t.Request.Subagent = schemas.Subagent{Name: "linter", Runtime: schemas.RuntimeExec}
	}
	painter := tasks[0]
	painter.Request.Subagent.Name = "painter"
	painter.Rounds[0].Question.Default = &def
	painter.Rounds[0].Question.Options = []string{"A", "B"}
	painter.Rounds[1].Usage = &schemas.Usage{InputTokens: 10, OutputTokens: 20, CacheReadInputTokens: 300, CostUSD: 0.125}
	return tasks
}

func TestTaskMetricsOf(t *testing.T) {
	t.Parallel()
	m := taskMetricsOf(tasksForMetrics())
	wantStates := map[wire.State]int{wire.StateFinished: 2, wire.StateNeedsInput: 1,
		wire.StateFailed: 1, wire.StateQueued: 1, wire.StateRunning: 1, wire.StateCancelled: 1}
	for _, st := range wire.States {
		if m.byState[st] != wantStates[st] {
			t.Errorf("tasks %s = %d, want %d", st, m.byState[st], wantStates[st])
		}
	}
	if m.openQuestions != 1 {
		t.Errorf("open questions = %d, want 1", m.openQuestions)
	}
	checkHist := func(name string, h *histogram, count uint64, sum float64) {
		t.Helper()
		if h.count != count || h.sum < sum-1e-9 || h.sum > sum+1e-9 {
			t.Errorf("%s: count %d, sum %g; want %d, %g", name, h.count, h.sum, count, sum)
		}
	}
	checkHist("answer wait", m.answerWait, 3, 90+3*3600+2)
	checkHist("rounds per ended task", m.rounds, 4, 2+1+3+1) // finished ×2, failed, cancelled
	checkHist("finished dispatches", m.dispatch[wire.StateFinished], 2, 20.5)
	checkHist("needs_input dispatches", m.dispatch[wire.StateNeedsInput], 4, 8)
	checkHist("failed dispatches", m.dispatch[wire.StateFailed], 1, 4000)
	checkHist("cancelled dispatches", m.dispatch[wire.StateCancelled], 1, 0)
}

func TestTaskCollectorExposition(t *testing.T) {
	t.Parallel()
	c := newTaskCollector(nil, slog.New(slog.DiscardHandler))
	c.stats = func(_ context.Context, fn func(*orchestrator.TaskStats)) error {
		for _, t := range tasksForMetrics() {
			s := orchestrator.StatsOf(t)
			fn(&s)
		}
		return nil
	}
	got := expose(t, c, http.StatusOK)
	for _, want := range []string{
		`agora_tasks{state="expired"} 0`, // every state, zeros too
		`agora_tasks{state="finished"} 2`,
		`agora_open_questions 1`,
		`agora_answer_wait_seconds_bucket{le="60"} 1`,  // 2s
		`agora_answer_wait_seconds_bucket{le="300"} 2`, // and 90s
		`agora_answer_wait_seconds_bucket{le="14400"} 3`,
		`agora_task_rounds_bucket{le="1"} 2`,
		`agora_task_rounds_bucket{le="3"} 4`,
		`agora_dispatch_duration_seconds_bucket{outcome="failed",le="3600"} 0`,
		`agora_dispatch_duration_seconds_bucket{outcome="failed",le="7200"} 1`,
		`agora_dispatch_duration_seconds_count{outcome="finished"} 2`,
		`agora_subagent_tasks{subagent="linter"} 6`,
		`agora_subagent_tasks{subagent="painter"} 1`,
		`agora_subagent_questions_total{subagent="linter"} 3`,
		`agora_subagent_questions_total{subagent="painter"} 1`,
		`agora_subagent_questions_with_options_total{subagent="painter"} 1`,
		`agora_subagent_questions_with_default_total{subagent="linter"} 0`,
		`agora_subagent_defaults_taken_total{subagent="painter"} 1`,
		`agora_subagent_defaults_assumed_total{subagent="painter"} 0`,
		`agora_subagent_answer_wait_seconds_bucket{subagent="painter",le="300"} 1`,
		`agora_subagent_task_rounds_bucket{subagent="linter",le="1"} 2`,
		`agora_subagent_task_rounds_count{subagent="linter"} 3`,
		`agora_subagent_cold_start_seconds_bucket{subagent="painter",le="1"} 0`,
		`agora_subagent_cold_start_seconds_bucket{subagent="painter",le="2"} 2`,
		`agora_subagent_tokens_total{kind="cache_read",subagent="painter"} 300`,
		`agora_subagent_tokens_total{kind="output",subagent="linter"} 0`,
		`agora_subagent_cost_usd_total{subagent="painter"} 0.125`,
	} {
		if !strings.Contains(got, "\n"+want+"\n") {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}

	// A failed read of the tasks is the scrape's error, not zeros.
	c.stats = func(context.Context, func(*orchestrator.TaskStats)) error { return errors.New("nats: timeout") }
	if got := expose(t, c, http.StatusInternalServerError); !strings.Contains(got, "list tasks: nats: timeout") {
		t.Errorf("scrape with a failed list = %q; want the error", got)
	}
}

// TestTaskCollectorFromCache: the collector of a real orchestrator, which
// reads the task cache's stats (ended tasks are not kept decoded), exposes
// what computing from the whole tasks does.
func TestTaskCollectorFromCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := bustest.Bus(t)
	o, err := orchestrator.New(orchestrator.Config{Bus: b, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	kv, err := b.KeyValue(ctx, orchestrator.TaskBucket, "agora tasks, one key per task id")
	if err != nil {
		t.Fatal(err)
	}
	tasks := tasksForMetrics()
	for i, task := range tasks {
		task.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		for n := range task.Rounds {
			task.Rounds[n].StepDeadline = time.Now().Add(time.Hour) // no route step ends the open question
			task.Rounds[n].AskedAt = time.Now()
		}
		data, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, task.ID, data); err != nil {
			t.Fatal(err)
		}
	}
	waitStats(t, o, len(tasks))
	want := newTaskCollector(nil, slog.New(slog.DiscardHandler))
	want.stats = func(_ context.Context, fn func(*orchestrator.TaskStats)) error {
		for _, task := range tasksForMetrics() {
			s := orchestrator.StatsOf(task)
			fn(&s)
		}
		return nil
	}
	if got, want := expose(t, newTaskCollector(o, slog.New(slog.DiscardHandler)), http.StatusOK), expose(t, want, http.StatusOK); got != want {
		t.Errorf("exposition from the orchestrator:\n%s\nwant, from the whole tasks:\n%s", got, want)
	}
}

// expose serves c alone in the text format and returns the body.
func expose(t *testing.T, c prometheus.Collector, wantStatus int) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != wantStatus {
		t.Errorf("scrape = %d, want %d: %s", rec.Code, wantStatus, rec.Body)
	}
	return rec.Body.String()
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	base := Config{DataDir: t.TempDir(), Orchestrator: true, Runner: true, Metrics: true}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no role", func(c *Config) { c.Orchestrator, c.Runner = false, false }, "no role"},
		{"runner only with metrics on loopback", func(c *Config) { c.Orchestrator = false }, ""},
		{"port with a URL", func(c *Config) { c.NATSURL, c.NATSPort = "nats://n:4222", 4222 }, "not with a NATS URL"},
		{"port out of range", func(c *Config) { c.NATSPort = 70000 }, "out of range"},
		{"replicas on a cluster", func(c *Config) { c.NATSURL, c.NATSReplicas = "nats://a:4222,nats://b:4222", 3 }, ""},
		{"replicas on the embedded server", func(c *Config) { c.NATSReplicas = 3 }, "the embedded server is one node"},
		{"replicas out of range", func(c *Config) { c.NATSURL, c.NATSReplicas = "nats://n:4222", 6 }, "out of range 1-5"},
		{"network without tokens", func(c *Config) { c.Listen = "0.0.0.0:7070" }, "without --token"},
		{"network with a token", func(c *Config) { c.Listen, c.Tokens = "0.0.0.0:7070", []string{"ci:s"} }, ""},
		{"runner only, no metrics, network", func(c *Config) { c.Orchestrator, c.Metrics, c.Listen = false, false, ":7070" }, ""},
		{"token without a secret", func(c *Config) { c.Tokens = []string{"ci:"} }, "token 1: want SECRET or NAME:SECRET"},
	}
	for _, tt := range tests {
		c := base
		tt.change(&c)
		err := c.WithDefaults().Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
	c := Config{DataDir: "rel"}.WithDefaults()
	if !strings.HasPrefix(c.DataDir, "/") || c.StorageURI != "file://"+c.DataDir+"/storage" || c.Listen != DefaultListen ||
		*c.Resources != DefaultResources {
		t.Errorf("WithDefaults = %+v", c)
	}
}

func TestLockDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "in use by another agora (pid ") {
		t.Errorf("second lock = %v; want in use, naming the pid", err)
	}
	if err := unlockDataDir(f); err != nil {
		t.Fatal(err)
	}
	f, err = lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := unlockDataDir(f); err != nil {
		t.Fatal(err)
	}
}

func TestPipelineCollectorExposition(t *testing.T) {
	t.Parallel()
	c := newPipelineCollectorDescs()
	c.stats = func() wire.PipelineStats {
		return wire.PipelineStats{Applied: 40, Retried: 3, Parked: 1, ParkedNow: 1,
			Dropped: map[string]uint64{"unknown_task": 2, "invalid": 1}}
	}
	c.parkedEvents = func() []wire.ParkedEvent {
		return []wire.ParkedEvent{{Sequence: 12, Kind: "dispatch.finished", DispatchID: "t-1-r1", Error: "decode task t-1: bad"}}
	}
	got := expose(t, c, http.StatusOK)
	for _, want := range []string{
		`agora_events_applied_total 40`,
		`agora_events_retried_total 3`,
		`agora_events_parked_total 1`,
		`agora_events_dropped_total{reason="unknown_task"} 2`,
		`agora_events_dropped_total{reason="unknown_kind"} 0`,
		`agora_events_parked 1`,
		`agora_event_parked_info{dispatch_id="t-1-r1",error="decode task t-1: bad",kind="dispatch.finished",seq="12"} 1`,
	} {
		if !strings.Contains(got, "\n"+want+"\n") {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(got)
	}
}

// TestSubagentSeriesBounded: past maxSubagentSeries sub-agents, the ones
// with the fewest tasks are counted together under _other, so a client
// naming a new sub-agent per task cannot grow the scrape without bound.
func TestSubagentSeriesBounded(t *testing.T) {
	t.Parallel()
	m := newTaskMetrics()
	for i := range maxSubagentSeries + 20 {
		for range 1 + min(i, 1) { // sub-agent 0 has one task, the others two
			m.add(&orchestrator.TaskStats{State: wire.StateFinished, Subagent: fmt.Sprintf("s-%03d", i), MaxRound: 1,
				Rounds: []orchestrator.RoundStats{{Asked: true}}})
		}
	}
	names, per := bySubagent(m.subagents)
	if len(names) != maxSubagentSeries+1 || names[len(names)-1] != otherSubagents || len(per) != len(names) {
		t.Fatalf("bySubagent gave %d names (last %q), %d series; want %d, the last %s", len(names), names[len(names)-1], len(per), maxSubagentSeries+1, otherSubagents)
	}
	if names[0] != "s-001" || slices.Contains(names, "s-000") {
		t.Errorf("names = %v; want the most tasks first, then by name, and s-000 (one task) folded into %s", names, otherSubagents)
	}
	tasks, questions := 0, 0
	for _, s := range per {
		tasks += s.tasks
		questions += s.questions
	}
	if want := 2*(maxSubagentSeries+20) - 1; tasks != want || questions != want || per[otherSubagents].tasks != 2*20-1 {
		t.Errorf("series hold %d tasks, %d questions, %s %d; want %d of each, %d in %s", tasks, questions, otherSubagents, per[otherSubagents].tasks, want, 2*20-1, otherSubagents)
	}
}
