package slackanswer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
		if i == 0 || m.IfUnanswered == nil {
			// The consequence shown is kept current: a step passed on, a
			// deadline moved.
			if iu := ifUnanswered(t, mb.Round); iu != nil && !sameConsequence(iu, m.IfUnanswered) {
				m.IfUnanswered, changed = iu, true
			}
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

func sameConsequence(a, b *wire.IfUnanswered) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.At.Equal(b.At) && a.Action == b.Action && a.Default == b.Default && a.Next == b.Next && a.Text == b.Text
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
	text := b.outcomeText(t)
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

// Bounds of the result shown in the outcome message.
const (
	resultLines = 10
	resultWidth = 1500
)

// outcomeText is the message a task's thread gets when it ends: its state
// and why, the first lines of its result (a string as its text, anything
// else as JSON) and where to read the whole.
func (b *Bot) outcomeText(t *wire.Task) string {
	text := fmt.Sprintf("Task `%s` is *%s*", t.ID, t.State)
	if t.Outcome != nil && t.Outcome.Detail != "" {
		d, _ := clipMrkdwn(escape(t.Outcome.Detail), 500)
		text += ": " + d
	}
	u := b.taskURL(t.ID)
	if u != "" {
		text += " · <" + u + "|open>"
	}
	res, cut := resultHead(t.Result)
	switch {
	case res != "":
		text += "\nResult:\n```\n" + res + "\n```"
		if cut {
			text += "\n_The result goes on: read it whole with `agora result " + t.ID + "`"
			if u != "" {
				text += " or on <" + u + "|the task's page>"
			}
			text += "._"
		}
	case t.ResultRef != nil:
		text += fmt.Sprintf("\nResult: %d bytes, too large to show here: read it with `agora result %s`", t.ResultRef.Size, t.ID)
		if u != "" {
			text += " or on <" + u + "|the task's page>"
		}
		text += "."
	}
	return clip(text, fallbackBudget+resultWidth)
}

// resultHead is the first lines of a result, escaped for a code block;
// cut reports whether it goes on.
func resultHead(raw json.RawMessage) (head string, cut bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") == nil {
			s = b.String()
		} else {
			s = string(raw)
		}
	}
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > resultLines {
		lines, cut = lines[:resultLines], true
	}
	s = strings.Join(lines, "\n")
	// A code block ends at the first ```: keep the result's own apart.
	s = strings.ReplaceAll(escape(s), "```", "`\u200b``")
	if width(s) > resultWidth {
		i := fitIndex(s, resultWidth)
		if a := strings.LastIndexByte(s[max(0, i-5):i], '&'); a >= 0 && !strings.Contains(s[max(0, i-5)+a:i], ";") {
			i = max(0, i-5) + a
		}
		s, cut = s[:i]+"…", true
	}
	return s, cut
}
