package roles

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// maxParkedSeries bounds the per-event info series: the newest parked
// events are listed, the count covers them all.
const maxParkedSeries = 20

// pipelineCollector exposes the orchestrator's event pipeline: what it
// applied, retried, parked and dropped since this process started, and the
// events parked now with their errors (docs/orchestrator.md, "The event
// pipeline").
type pipelineCollector struct {
	stats                                        func() wire.PipelineStats
	parkedEvents                                 func() []wire.ParkedEvent
	applied, retried, parked, dropped, parkedNow *prometheus.Desc
	parkedInfo                                   *prometheus.Desc
}

func newPipelineCollector(o *orchestrator.Orchestrator) *pipelineCollector {
	c := newPipelineCollectorDescs()
	c.stats = o.PipelineStats
	c.parkedEvents = func() []wire.ParkedEvent {
		p, _, _ := o.ParkedEvents(context.Background()) // from memory: cannot fail
		return p
	}
	return c
}

// newPipelineCollectorDescs is the collector without its sources.
func newPipelineCollectorDescs() *pipelineCollector {
	return &pipelineCollector{
		applied: prometheus.NewDesc("agora_events_applied_total", "Lifecycle events applied (or found applied already) by this orchestrator process.", nil, nil),
		retried: prometheus.NewDesc("agora_events_retried_total", "Lifecycle event applies that failed and were handed back for a later delivery.", nil, nil),
		parked:  prometheus.NewDesc("agora_events_parked_total", "Lifecycle events this process gave up on after their last delivery and parked.", nil, nil),
		dropped: prometheus.NewDesc("agora_events_dropped_total", "Lifecycle events that can never apply, dropped: unknown_task (removed, never existed or forged), invalid, unknown_kind.",
			[]string{"reason"}, nil),
		parkedNow: prometheus.NewDesc("agora_events_parked", "Parked lifecycle events waiting for an operator (agora events parked).", nil, nil),
		parkedInfo: prometheus.NewDesc("agora_event_parked_info", "One series per parked event (the newest 20), with its error; the value is 1.",
			[]string{"seq", "kind", "dispatch_id", "error"}, nil),
	}
}

func (c *pipelineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.applied, c.retried, c.parked, c.dropped, c.parkedNow, c.parkedInfo} {
		ch <- d
	}
}

func (c *pipelineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.CounterValue, float64(st.Applied))
	ch <- prometheus.MustNewConstMetric(c.retried, prometheus.CounterValue, float64(st.Retried))
	ch <- prometheus.MustNewConstMetric(c.parked, prometheus.CounterValue, float64(st.Parked))
	for _, reason := range []string{"unknown_task", "invalid", "unknown_kind"} {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped[reason]), reason)
	}
	ch <- prometheus.MustNewConstMetric(c.parkedNow, prometheus.GaugeValue, float64(st.ParkedNow))
	parked := c.parkedEvents()
	if len(parked) > maxParkedSeries {
		parked = parked[len(parked)-maxParkedSeries:]
	}
	for _, p := range parked {
		msg := p.Error
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		ch <- prometheus.MustNewConstMetric(c.parkedInfo, prometheus.GaugeValue, 1, strconv.FormatUint(p.Sequence, 10), string(p.Kind), p.DispatchID, msg)
	}
}
