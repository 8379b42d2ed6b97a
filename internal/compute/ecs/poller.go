package ecs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agoradev/agora/internal/compute"
)

// poller describes every waited-for task in one DescribeTasks call (per 100
// tasks) each poll interval and hands each waiter its task once STOPPED.
// Its goroutine runs only while someone waits.
type poller struct {
	e *Engine

	mu      sync.Mutex
	waiters map[string][]chan result
	running bool
	// missing counts the consecutive polls that found a task MISSING.
	missing map[string]int
}

// missingPolls is how many polls in a row a task may be MISSING before its
// waiters get ErrNotFound: DescribeTasks is eventually consistent, and a
// task launched a moment ago may not be visible yet.
const missingPolls = 5

type result struct {
	task *types.Task
	err  error
}

func newPoller(e *Engine) *poller {
	return &poller{e: e, waiters: map[string][]chan result{}, missing: map[string]int{}}
}

// wait blocks until the task arn has stopped, or ctx ends.
func (p *poller) wait(ctx context.Context, arn string) (*types.Task, error) {
	ch := make(chan result, 1)
	p.mu.Lock()
	p.waiters[arn] = append(p.waiters[arn], ch)
	if !p.running {
		p.running = true
		go p.loop()
	}
	p.mu.Unlock()
	select {
	case r := <-ch:
		return r.task, r.err
	case <-ctx.Done():
		p.mu.Lock()
		p.waiters[arn] = slices.DeleteFunc(p.waiters[arn], func(c chan result) bool { return c == ch })
		if len(p.waiters[arn]) == 0 {
			delete(p.waiters, arn)
			delete(p.missing, arn)
		}
		p.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// loop polls until nobody waits.
func (p *poller) loop() {
	t := time.NewTicker(p.e.cfg.PollInterval)
	defer t.Stop()
	failures := 0
	for range t.C {
		p.mu.Lock()
		arns := make([]string, 0, len(p.waiters))
		for arn := range p.waiters {
			arns = append(arns, arn)
		}
		if len(arns) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		slices.Sort(arns)
		for batch := range slices.Chunk(arns, 100) {
			ctx, cancel := p.e.callContext(context.Background())
			tasks, err := p.e.describe(ctx, batch)
			cancel()
			if err != nil {
				failures++
				p.e.cfg.Logger.Warn("describe waited-for tasks", "tasks", len(batch), "error", err, "failures", failures)
				continue
			}
			failures = 0
			for _, arn := range batch {
				t, ok := tasks[arn]
				switch {
				case !ok && p.miss(arn) < missingPolls:
				case !ok || !managed(t):
					p.deliver(arn, result{err: fmt.Errorf("task %s: %w", arn, compute.ErrNotFound)})
				case aws.ToString(t.LastStatus) == "STOPPED":
					p.deliver(arn, result{task: t})
				default:
					p.mu.Lock()
					delete(p.missing, arn)
					p.mu.Unlock()
				}
			}
		}
	}
}

// miss counts one more poll that found arn MISSING and returns the count.
func (p *poller) miss(arn string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.missing[arn]++
	return p.missing[arn]
}

func (p *poller) deliver(arn string, r result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.missing, arn)
	for _, ch := range p.waiters[arn] {
		ch <- r
	}
	delete(p.waiters, arn)
}
