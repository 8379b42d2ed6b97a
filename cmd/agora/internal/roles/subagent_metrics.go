package roles

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agoradev/agora/orchestrator"
)

// maxSubagentSeries bounds the values of the subagent label: the sub-agents
// with the most stored tasks keep their name, the others are counted
// together as otherSubagents. A sub-agent's name is whatever a submitter
// wrote, so without a bound one client could make every scrape grow.
const maxSubagentSeries = 50

// otherSubagents is the subagent label of the sub-agents past
// maxSubagentSeries.
const otherSubagents = "_other"

// coldStartBuckets: from a warm engine's second to a long wait for a slot.
var coldStartBuckets = []float64{0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300, 900, 3600}

// tokenKinds are the values of agora_subagent_tokens_total's kind label.
var tokenKinds = []string{"input", "output", "cache_creation", "cache_read"}

// subagentDescs are the per-sub-agent families (docs/stats.md).
type subagentDescs struct {
	tasks, questions, withOptions, withDefault, defaultTaken, defaultAssumed,
	answerWait, rounds, coldStart, tokens, cost *prometheus.Desc
}

func newSubagentDescs() subagentDescs {
	l := []string{"subagent"}
	return subagentDescs{
		tasks:          prometheus.NewDesc("agora_subagent_tasks", "Stored tasks, by sub-agent.", l, nil),
		questions:      prometheus.NewDesc("agora_subagent_questions_total", "Questions the stored tasks' rounds asked, by sub-agent.", l, nil),
		withOptions:    prometheus.NewDesc("agora_subagent_questions_with_options_total", "Questions that gave options, by sub-agent.", l, nil),
		withDefault:    prometheus.NewDesc("agora_subagent_questions_with_default_total", "Questions that gave a default, by sub-agent.", l, nil),
		defaultTaken:   prometheus.NewDesc("agora_subagent_defaults_taken_total", "Answers that are the question's default, whoever gave them, by sub-agent.", l, nil),
		defaultAssumed: prometheus.NewDesc("agora_subagent_defaults_assumed_total", "Defaults taken because nobody answered, by sub-agent.", l, nil),
		answerWait:     prometheus.NewDesc("agora_subagent_answer_wait_seconds", "Time from a question to its accepted answer, by sub-agent.", l, nil),
		rounds:         prometheus.NewDesc("agora_subagent_task_rounds", "Rounds per ended task (retries of a round count once), by sub-agent.", l, nil),
		coldStart:      prometheus.NewDesc("agora_subagent_cold_start_seconds", "Time from a dispatch being queued to its dispatch.started (slot wait, container start, worker start), by sub-agent.", l, nil),
		tokens:         prometheus.NewDesc("agora_subagent_tokens_total", "Tokens the runtime reported, by sub-agent and kind (input, output, cache_creation, cache_read).", []string{"subagent", "kind"}, nil),
		cost:           prometheus.NewDesc("agora_subagent_cost_usd_total", "Cost in US dollars the runtime reported, by sub-agent.", l, nil),
	}
}

func (d subagentDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.tasks, d.questions, d.withOptions, d.withDefault, d.defaultTaken, d.defaultAssumed,
		d.answerWait, d.rounds, d.coldStart, d.tokens, d.cost}
}

// subagentMetrics is what one scrape reports about one sub-agent's tasks.
type subagentMetrics struct {
	tasks                                                             int
	questions, withOptions, withDefault, defaultTaken, defaultAssumed int
	answerWait, rounds, coldStart                                     *histogram
	tokens                                                            [4]int64 // in tokenKinds' order
	cost                                                              float64
}

func newSubagentMetrics() *subagentMetrics {
	return &subagentMetrics{answerWait: newHistogram(answerWaitBuckets), rounds: newHistogram(roundBuckets),
		coldStart: newHistogram(coldStartBuckets)}
}

func (m *subagentMetrics) add(t *orchestrator.TaskStats) {
	m.tasks++
	if t.State.Terminal() {
		m.rounds.observe(float64(t.MaxRound))
	}
	for _, r := range t.Rounds {
		if r.Started {
			m.coldStart.observe(max(r.ColdStart.Seconds(), 0))
		}
		if !r.Asked {
			continue
		}
		m.questions++
		m.withOptions += b2i(r.WithOptions)
		m.withDefault += b2i(r.WithDefault)
		if r.Answered {
			m.answerWait.observe(float64(r.AnswerWaitMS) / 1000)
			m.defaultTaken += b2i(r.DefaultTaken)
			m.defaultAssumed += b2i(r.Assumed)
		}
	}
	if u := t.Usage; u != nil {
		m.tokens[0] += u.InputTokens
		m.tokens[1] += u.OutputTokens
		m.tokens[2] += u.CacheCreationInputTokens
		m.tokens[3] += u.CacheReadInputTokens
		m.cost += u.CostUSD
	}
}

// merge adds o's counts to m.
func (m *subagentMetrics) merge(o *subagentMetrics) {
	m.tasks += o.tasks
	m.questions += o.questions
	m.withOptions += o.withOptions
	m.withDefault += o.withDefault
	m.defaultTaken += o.defaultTaken
	m.defaultAssumed += o.defaultAssumed
	m.answerWait.merge(o.answerWait)
	m.rounds.merge(o.rounds)
	m.coldStart.merge(o.coldStart)
	for i := range m.tokens {
		m.tokens[i] += o.tokens[i]
	}
	m.cost += o.cost
}

func (m *subagentMetrics) collect(ch chan<- prometheus.Metric, d subagentDescs, name string) {
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, name)
	}
	counter := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, name)
	}
	gauge(d.tasks, float64(m.tasks))
	counter(d.questions, float64(m.questions))
	counter(d.withOptions, float64(m.withOptions))
	counter(d.withDefault, float64(m.withDefault))
	counter(d.defaultTaken, float64(m.defaultTaken))
	counter(d.defaultAssumed, float64(m.defaultAssumed))
	ch <- m.answerWait.metric(d.answerWait, name)
	ch <- m.rounds.metric(d.rounds, name)
	ch <- m.coldStart.metric(d.coldStart, name)
	for i, kind := range tokenKinds {
		ch <- prometheus.MustNewConstMetric(d.tokens, prometheus.CounterValue, float64(m.tokens[i]), name, kind)
	}
	counter(d.cost, m.cost)
}

// bySubagent returns the series to expose: the maxSubagentSeries
// sub-agents with the most tasks (then by name) under their own names,
// the rest together under otherSubagents.
func bySubagent(per map[string]*subagentMetrics) ([]string, map[string]*subagentMetrics) {
	names := make([]string, 0, len(per))
	for name := range per {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(per[b].tasks, per[a].tasks), cmp.Compare(a, b))
	})
	if len(names) <= maxSubagentSeries {
		return names, per
	}
	out := make(map[string]*subagentMetrics, maxSubagentSeries+1)
	other := newSubagentMetrics()
	for i, name := range names {
		if i < maxSubagentSeries {
			out[name] = per[name]
			continue
		}
		other.merge(per[name])
	}
	// A sub-agent named like the bucket of the others joins it.
	if own, ok := out[otherSubagents]; ok {
		other.merge(own)
	}
	out[otherSubagents] = other
	kept := slices.DeleteFunc(names[:maxSubagentSeries], func(n string) bool { return n == otherSubagents })
	return append(kept, otherSubagents), out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
