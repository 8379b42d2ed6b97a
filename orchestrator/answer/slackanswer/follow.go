package slackanswer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/wire"
)

// follow applies task changes to the messages: answered elsewhere (CLI,
// web, another answerer, the default), closed (cancelled, expired), moved
// on to the next step (escalated), and the task's outcome in its thread.
func (b *Bot) follow() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case c := <-b.changes:
			if c.Task == nil {
				continue
			}
			b.taskChanged(b.ctx, c.Task)
		}
	}
}

// catchUp brings the messages that were open at start up to date with
// their tasks.
func (b *Bot) catchUp(ctx context.Context, open []*message) {
	seen := map[string]bool{}
	for _, m := range open {
		for _, mb := range m.Members {
			if seen[mb.TaskID] {
				continue
			}
			seen[mb.TaskID] = true
			t, err := b.cfg.Service.Get(ctx, mb.TaskID)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				b.log.Warn("read task at start", "task_id", mb.TaskID, "error", err)
				continue
			}
			b.taskChanged(ctx, t)
		}
	}
}

func (b *Bot) taskChanged(ctx context.Context, t *wire.Task) {
	b.mu.Lock()
	ids := slices.Clone(b.byTask[t.ID])
	b.mu.Unlock()
	for _, id := range ids {
		b.sync(ctx, id, t)
	}
	if t.State.Terminal() {
		b.outcome(ctx, t)
	}
}

// sync brings message id up to date with t.
func (b *Bot) sync(ctx context.Context, id string, t *wire.Task) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// A lost claim of the hand-over notice (another bot's write came
	// first) is read again: that bot may have posted it, or changed
	// something else.
	for range 3 {
		if !b.syncOnce(ctx, id, t) {
			return
		}
	}
	b.log.Warn("message keeps changing under the bot; the next task change syncs it", "message", id)
}

// syncOnce is sync on one read of the record; again is true when its
// claim was lost.
func (b *Bot) syncOnce(ctx context.Context, id string, t *wire.Task) (again bool) {
	var m message
	rev, ok, err := b.loadRev(ctx, msgKey(id), &m)
	if err != nil || !ok || m.Done {
		if err != nil {
			b.log.Warn("read message", "message", id, "error", err)
		}
		return false
	}
	changed := false
	var escalated *wire.Decision
	for i := range m.Members {
		mb := &m.Members[i]
		if mb.TaskID != t.ID || mb.settled() {
			continue
		}
		settleFrom(mb, t)
		changed = changed || mb.settled()
		if !m.Escalated {
			if d, ok := timedOut(t, mb.Round, m.Step); ok {
				escalated = &d
			}
		}
	}
	if escalated != nil {
		// Recorded before it is posted: a restart in between loses the
		// notice rather than posting it twice.
		m.Escalated, changed = true, true
		if err := b.claim(ctx, msgKey(m.ID), &m, rev); errors.Is(err, bus.ErrRevision) {
			return true
		} else if err != nil {
			b.log.Warn("keep message", "message", m.ID, "error", err)
			return false
		}
		next := "the route ended"
		if m.Next != "" {
			next = "passed on to `" + m.Next + "`"
		}
		b.reply(ctx, m.ChannelID, threadOf(&m), fmt.Sprintf(":arrow_heading_down: No answer here by %s; %s. An answer given here is still taken while the question is open.", stamp(escalated.At), next))
	}
	if changed {
		b.close(ctx, &m)
	}
	return false
}

// timedOut finds the decision that step timed out on round n.
func timedOut(t *wire.Task, n int, step string) (wire.Decision, bool) {
	for _, r := range t.Rounds {
		if r.N != n {
			continue
		}
		for _, d := range r.Decisions {
			if d.Step == step && d.Result == "timed out" {
				return d, true
			}
		}
	}
	return wire.Decision{}, false
}

func threadOf(m *message) string {
	if m.ThreadTS != "" {
		return m.ThreadTS
	}
	return m.TS
}

// outcome posts how a task ended in each of its threads, once.
func (b *Bot) outcome(ctx context.Context, t *wire.Task) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.threads[t.ID] {
		return
	}
	var th thread
	if ok, err := b.load(ctx, threadKey(t.ID), &th); err != nil || !ok || th.Outcome || len(th.TS) == 0 {
		return
	}
	text := fmt.Sprintf("Task `%s` is *%s*", t.ID, t.State)
	if t.Outcome != nil && t.Outcome.Detail != "" {
		text += ": " + escape(t.Outcome.Detail)
	}
	if u := b.taskURL(t.ID); u != "" {
		text += " · <" + u + "|open>"
	}
	// Recorded before it is posted, as reminders are: a restart in
	// between loses the outcome's post rather than repeating it.
	th.Outcome = true
	if err := b.save(ctx, threadKey(t.ID), th); err != nil {
		b.log.Warn("keep the thread of a task", "task_id", t.ID, "error", err)
		return
	}
	delete(b.threads, t.ID)
	for _, r := range th.TS {
		b.reply(ctx, r.Channel, r.TS, text)
	}
}
