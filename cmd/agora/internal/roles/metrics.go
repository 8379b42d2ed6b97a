package roles

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/wire"
)

// scrapeTimeout bounds the read of the tasks behind one scrape
// (Prometheus's own default scrape timeout).
const scrapeTimeout = 10 * time.Second

// Histogram buckets. A human answers in minutes to days; a dispatch runs
// for seconds to its 1h default timeout; a task allows 10 rounds by default.
var (
	answerWaitBuckets = []float64{1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600}
	dispatchBuckets   = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 2 * 3600}
	roundBuckets      = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}
)

// dispatchOutcomes are the states a round ends its dispatch in: the values
// of agora_dispatch_duration_seconds's outcome label.
var dispatchOutcomes = []wire.State{wire.StateFinished, wire.StateNeedsInput,
	wire.StateFailed, wire.StateCancelled}

// metricsHandler serves the stack's metrics in the Prometheus exposition
// format, behind the API's own token rule (api.Auth).
func (s *Stack) metricsHandler(auth *api.Auth) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if s.orch != nil {
		cs = append(cs, newTaskCollector(s.orch, s.log), newPipelineCollector(s.orch))
	}
	if s.runner != nil {
		cs = append(cs, runnerCollectors(s.runner, s.cfg.RunnerID, s.cfg.Slots)...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      promLogger{s.log},
		ErrorHandling: promhttp.ContinueOnError, // a failed task read still serves the runner's and the process's metrics
		Timeout:       scrapeTimeout + 5*time.Second,
	})
	return auth.Wrap(h, s.log.With("endpoint", "/metrics")), nil
}

// runnerCollectors are the slot gauges of the runner in this process.
func runnerCollectors(r *runner.Runner, id string, slots int) []prometheus.Collector {
	labels := prometheus.Labels{"runner": id}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_runner_slots", ConstLabels: labels,
			Help: "Dispatches this runner may run at once (--slots)."},
			func() float64 { return float64(slots) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agora_runner_slots_in_use", ConstLabels: labels,
			Help: "Dispatches this runner is running now."},
			// Active, not InUse: InUse also counts the slot held while
			// waiting for the next request.
			func() float64 { return float64(len(r.Active())) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agora_runner_egress_denied_total", ConstLabels: labels,
			Help: "Requests the egress proxies of this runner's dispatches refused (network egress), since it started."},
			func() float64 { return float64(r.EgressDenied()) }),
	}
}

// taskCollector derives the task metrics from the stored tasks at every
// scrape, as kube-state-metrics does from the Kubernetes API: the numbers
// are the same from every orchestrator replica and survive restarts, and
// there is nothing to keep in step with the task store. It reads each
// task's TaskStats from the orchestrator's task cache, which keeps those
// few numbers for every task (finished ones too) without the task's body,
// so a scrape decodes nothing (Orchestrator.EachTaskStats). The
// histograms count the rounds and tasks still stored: `agora rm` lowers
// them, which Prometheus reads as a counter reset.
type taskCollector struct {
	stats                                        func(context.Context, func(*orchestrator.TaskStats)) error
	log                                          *slog.Logger
	tasks, questions, answerWait, rounds, dispat *prometheus.Desc
	sub                                          subagentDescs
}

func newTaskCollector(o *orchestrator.Orchestrator, log *slog.Logger) *taskCollector {
	c := &taskCollector{
		log: log,
		tasks: prometheus.NewDesc("agora_tasks", "Tasks by state.",
			[]string{"state"}, nil),
		questions: prometheus.NewDesc("agora_open_questions", "Questions waiting for an answer.",
			nil, nil),
		answerWait: prometheus.NewDesc("agora_answer_wait_seconds", "Time from a question to its accepted answer (or assumed default), over the answered rounds of the stored tasks.",
			nil, nil),
		rounds: prometheus.NewDesc("agora_task_rounds", "Rounds per ended task (finished, failed, cancelled or expired).",
			nil, nil),
		dispat: prometheus.NewDesc("agora_dispatch_duration_seconds", "Run time of dispatches, from dispatch.started to their terminal event, by how they ended.",
			[]string{"outcome"}, nil),
		sub: newSubagentDescs(),
	}
	if o != nil {
		c.stats = o.EachTaskStats
	}
	return c
}

func (c *taskCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{c.tasks, c.questions, c.answerWait, c.rounds, c.dispat}, c.sub.all()...) {
		ch <- d
	}
}

func (c *taskCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	m := newTaskMetrics()
	if err := c.stats(ctx, m.add); err != nil {
		c.log.Warn("metrics: list tasks", "error", err)
		ch <- prometheus.NewInvalidMetric(c.tasks, fmt.Errorf("list tasks: %w", err))
		return
	}
	for _, st := range wire.States {
		ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(m.byState[st]), string(st))
	}
	ch <- prometheus.MustNewConstMetric(c.questions, prometheus.GaugeValue, float64(m.openQuestions))
	ch <- m.answerWait.metric(c.answerWait)
	ch <- m.rounds.metric(c.rounds)
	for _, out := range dispatchOutcomes {
		ch <- m.dispatch[out].metric(c.dispat, string(out))
	}
	names, per := bySubagent(m.subagents)
	for _, name := range names {
		per[name].collect(ch, c.sub, name)
	}
}

// taskMetrics is what one scrape reports about the tasks.
type taskMetrics struct {
	byState       map[wire.State]int
	openQuestions int
	answerWait    *histogram
	rounds        *histogram
	dispatch      map[wire.State]*histogram
	// subagents are the per-sub-agent numbers, by name (subagent_metrics.go).
	subagents map[string]*subagentMetrics
	last      *subagentMetrics
	lastName  string
}

func newTaskMetrics() *taskMetrics {
	m := &taskMetrics{
		byState:    map[wire.State]int{},
		answerWait: newHistogram(answerWaitBuckets),
		rounds:     newHistogram(roundBuckets),
		dispatch:   map[wire.State]*histogram{},
		subagents:  map[string]*subagentMetrics{},
	}
	for _, out := range dispatchOutcomes {
		m.dispatch[out] = newHistogram(dispatchBuckets)
	}
	return m
}

// add counts one task.
func (m *taskMetrics) add(t *orchestrator.TaskStats) {
	m.byState[t.State]++
	if t.State.Terminal() {
		m.rounds.observe(float64(len(t.Rounds)))
	}
	for _, r := range t.Rounds {
		if r.Answered {
			m.answerWait.observe(float64(r.AnswerWaitMS) / 1000)
		}
		if h := m.dispatch[r.State]; h != nil && r.Ended {
			h.observe(max(r.Ran.Seconds(), 0))
		}
	}
	if t.OpenQuestion {
		m.openQuestions++
	}
	// Tasks of one sub-agent tend to come together: the last one's
	// numbers are at hand without a map lookup.
	sm := m.last
	if sm == nil || m.lastName != t.Subagent {
		if sm = m.subagents[t.Subagent]; sm == nil {
			sm = newSubagentMetrics()
			m.subagents[t.Subagent] = sm
		}
		m.last, m.lastName = sm, t.Subagent
	}
	sm.add(t)
}

// taskMetricsOf computes the task metrics of tasks.
func taskMetricsOf(tasks []*wire.Task) *taskMetrics {
	m := newTaskMetrics()
	for _, t := range tasks {
		s := orchestrator.StatsOf(t)
		m.add(&s)
	}
	return m
}

// histogram accumulates observations for a constant Prometheus histogram.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.count++
	h.sum += v
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
			return
		}
	}
}

func (h *histogram) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(h.bounds))
	var n uint64
	for i, b := range h.bounds {
		n += h.counts[i]
		cum[b] = n
	}
	return prometheus.MustNewConstHistogram(d, h.count, h.sum, cum, labels...)
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) { l.log.Error("metrics: " + fmt.Sprint(v...)) }

// merge adds o's observations to h (the same bounds).
func (h *histogram) merge(o *histogram) {
	h.count += o.count
	h.sum += o.sum
	for i := range h.counts {
		h.counts[i] += o.counts[i]
	}
}
