package slackanswer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agoradev/agora/internal/bus"
)

// maxReminders bounds the reminders of one message: with a short interval
// on a long step, only the last maxReminders before the timeout are
// posted.
const maxReminders = 24

// reminderDue says which reminder of a message is due at now, if one is.
// The reminders' slots are counted back from the step's deadline:
// deadline−every, deadline−2·every, … — so the last one always comes
// `every` before the hand-over to the next step — keeping those after the
// message was posted, at most maxReminders of them. The slot due is the
// latest one at or before now; it is due when no reminder was posted for
// it or a later slot (last). Slots missed while the bot was down are not
// caught up: one reminder is posted for the latest. left is how many
// slots remain after this one (0: the last reminder here).
func reminderDue(posted, deadline time.Time, every time.Duration, last, now time.Time) (slot time.Time, left int, ok bool) {
	if every <= 0 || deadline.IsZero() || !now.Before(deadline) {
		return time.Time{}, 0, false
	}
	k := int((deadline.Sub(now) + every - 1) / every) // ceil: deadline−k·every ≤ now
	if k > maxReminders {
		return time.Time{}, 0, false
	}
	slot = deadline.Add(-time.Duration(k) * every)
	if !slot.After(posted) || !slot.After(last) {
		return time.Time{}, 0, false
	}
	return slot, k - 1, true
}

// remindEvery is the interval of a message's reminders: the step's
// remind=, or a quarter of its timeout (reminders at a quarter, half and
// three quarters of it).
func remindEvery(target Target, posted, deadline time.Time) time.Duration {
	if target.Remind > 0 {
		return target.Remind
	}
	// Rounded up, so the fourth slot back is not after the posting.
	return (deadline.Sub(posted) + 3) / 4
}

// remind posts the reminders that are due, every Tick.
func (b *Bot) remind() {
	defer b.wg.Done()
	tick := time.NewTicker(b.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick.C:
			b.remindDue(b.ctx)
		}
	}
}

// remindDue posts a reminder in the thread of each open message whose
// next reminder slot has come, until it is answered, closed, acknowledged
// ("On it") or its step timed out. Each slot is claimed (a
// compare-and-swap on the message's record) before its reminder is
// posted: neither a restart nor a second bot on the same bucket posts it
// twice (a crash in between loses that one).
func (b *Bot) remindDue(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for id := range b.open {
		var m message
		rev, ok, err := b.loadRev(ctx, msgKey(id), &m)
		if err != nil || !ok || m.Done || m.Escalated || m.Acked != nil {
			continue
		}
		left := 0
		switch {
		case m.RemindEvery > 0:
			slot, l, ok := reminderDue(m.Posted, m.Deadline, m.RemindEvery, m.RemindedAt, now)
			if !ok {
				continue
			}
			m.RemindedAt, left = slot, l
		case !m.RemindAt.IsZero(): // a record from before reminders repeated
			if m.Reminded || now.Before(m.RemindAt) || !now.Before(m.Deadline) {
				continue
			}
			m.Reminded = true
		default:
			continue
		}
		m.Reminders++
		if err := b.claim(ctx, msgKey(m.ID), &m, rev); errors.Is(err, bus.ErrRevision) {
			b.log.Debug("reminder taken by another bot, or the message changed", "message", m.ID)
			continue
		} else if err != nil {
			b.log.Warn("keep message", "message", m.ID, "error", err)
			continue
		}
		next := "the route ends"
		if m.Next != "" {
			next = "it goes to `" + m.Next + "`"
		}
		q, _ := clipMrkdwn(escape(m.Question), 300)
		text := fmt.Sprintf(":alarm_clock: Reminder: still waiting for an answer to *%s*. At %s %s.",
			q, stamp(m.Deadline), next)
		if left == 0 {
			text += " This is the last reminder here."
		}
		b.reply(ctx, m.ChannelID, threadOf(&m), text)
		b.log.Info("reminder posted", "message", m.ID, "reminder", m.Reminders)
	}
}
