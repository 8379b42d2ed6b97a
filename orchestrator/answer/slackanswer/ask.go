package slackanswer

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// ask posts q (or adds it to the open message of its batch's group) and
// returns answer.ErrPending: the answer comes back through a click.
func (b *Bot) ask(ctx context.Context, step string, target Target, q answer.Question) error {
	t, err := b.cfg.Service.Get(ctx, q.TaskID)
	if err != nil {
		return fmt.Errorf("slack: read task %s: %w", q.TaskID, err)
	}
	mb := member{TaskID: q.TaskID, Round: q.Round, Subagent: q.Subagent}
	batch := t.Request.Labels[wire.BatchLabel]
	b.mu.Lock()
	defer b.mu.Unlock()
	// An orchestrator that stopped between posting and recording the step
	// as pending asks again: the message is there already.
	for _, id := range b.byTask[q.TaskID] {
		var m message
		if ok, err := b.load(ctx, msgKey(id), &m); err == nil && ok && !m.Done && m.Step == step && m.has(q.TaskID, q.Round) {
			return answer.ErrPending
		}
	}
	gid := groupOf(batch, q)
	if gid != "" {
		var id string
		if ok, err := b.load(ctx, groupKey(gid), &id); err != nil {
			return fmt.Errorf("slack: read group %s: %w", gid, err)
		} else if ok {
			joined, err := b.join(ctx, id, step, mb)
			if err != nil || joined {
				return pending(err)
			}
		}
	}
	m := &message{ID: newID(), Step: step, Target: target, Batch: batch, GroupID: gid,
		Question: q.Question, Options: q.Options, Context: q.Context, Default: q.Default,
		Members: []member{mb}, Next: nextStep(t, step)}
	m.Posted = b.now()
	if dl, ok := ctx.Deadline(); ok {
		m.Deadline = dl
		m.RemindEvery = remindEvery(target, m.Posted, dl)
	}
	var th thread
	if _, err := b.load(ctx, threadKey(q.TaskID), &th); err != nil {
		return fmt.Errorf("slack: read thread of task %s: %w", q.TaskID, err)
	}
	// The thread is per channel: the same task may ask in several.
	m.ThreadTS = th.TS[channelKey(target.Channel)].TS
	opts := []slack.MsgOption{slack.MsgOptionText(b.fallback(m), false), slack.MsgOptionBlocks(b.blocks(m)...)}
	if m.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(m.ThreadTS))
	}
	// Slack takes a user id as the channel of a direct message from the app.
	where := strings.TrimPrefix(target.Channel, "@")
	err = b.call(ctx, "chat.postMessage", func() (err error) {
		m.ChannelID, m.TS, err = b.api.PostMessageContext(ctx, where, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("post question of task %s to %s: %w", q.TaskID, target.Channel, err)
	}
	if m.ThreadTS == "" {
		if th.TS == nil {
			th.TS = map[string]ref{}
		}
		th.TS[channelKey(target.Channel)] = ref{Channel: m.ChannelID, TS: m.TS}
	}
	// A task continued after its outcome was posted gets the next one too.
	th.Task, th.Outcome, b.threads[q.TaskID] = q.TaskID, false, true
	if err := b.save(ctx, threadKey(q.TaskID), th); err != nil {
		b.log.Warn("keep the thread of a task", "task_id", q.TaskID, "error", err)
	}
	if err := b.save(ctx, msgKey(m.ID), m); err != nil {
		return fmt.Errorf("slack: keep message of task %s: %w", q.TaskID, err)
	}
	if gid != "" {
		if err := b.save(ctx, groupKey(gid), m.ID); err != nil {
			b.log.Warn("keep the message of a question group", "group", gid, "error", err)
		}
	}
	b.index(m)
	b.keepThread(ctx, m)
	b.log.Info("question posted", "task_id", q.TaskID, "round", q.Round, "channel", m.ChannelID, "ts", m.TS)
	return answer.ErrPending
}

func pending(err error) error {
	if err != nil {
		return err
	}
	return answer.ErrPending
}

// channelKey is how a target's channel is kept in a thread record.
func channelKey(ch string) string { return ch }

// groupOf names the question group of q in batch ("" outside a batch):
// the batch and orchestrator.QuestionGroupKey (normalised question and
// option set, without the sub-agent), as the API's question groups, so
// identical questions of a batch share one message. Computed here rather
// than listed (Service.QuestionGroups), so a question is grouped even
// before the orchestrator's listing has caught up with it.
func groupOf(batch string, q answer.Question) string {
	if batch == "" {
		return ""
	}
	return batch + "/" + orchestrator.QuestionGroupKey(q.Question, q.Options)
}

// join adds mb to the open message id when it asks in the same step; it
// reports false when that message is done or elsewhere.
func (b *Bot) join(ctx context.Context, id, step string, mb member) (bool, error) {
	var m message
	if ok, err := b.load(ctx, msgKey(id), &m); err != nil || !ok || m.Done || m.Step != step {
		return false, err
	}
	if m.has(mb.TaskID, mb.Round) {
		return true, nil
	}
	m.Members = append(m.Members, mb)
	if err := b.save(ctx, msgKey(id), &m); err != nil {
		return false, fmt.Errorf("slack: add task %s to message %s: %w", mb.TaskID, id, err)
	}
	b.index(&m)
	// The task's thread is the group's message when it has none here.
	var th thread
	if _, err := b.load(ctx, threadKey(mb.TaskID), &th); err == nil && th.TS[channelKey(m.Target.Channel)].TS == "" {
		if th.TS == nil {
			th.TS = map[string]ref{}
		}
		th.TS[channelKey(m.Target.Channel)] = ref{Channel: m.ChannelID, TS: threadOf(&m)}
		th.Task, b.threads[mb.TaskID] = mb.TaskID, true
		if err := b.save(ctx, threadKey(mb.TaskID), th); err != nil {
			b.log.Warn("keep the thread of a task", "task_id", mb.TaskID, "error", err)
		}
	}
	b.update(ctx, &m)
	b.log.Info("question joined its group's message", "task_id", mb.TaskID, "group", m.GroupID, "ts", m.TS)
	return true, nil
}

// nextStep names the route step after step for the task's open round.
func nextStep(t *wire.Task, step string) string {
	route := t.Request.Route
	if route == "" {
		route = "human"
	}
	steps, err := answer.ParseRoute(route)
	if err != nil || len(t.Rounds) == 0 {
		return ""
	}
	i := t.Rounds[len(t.Rounds)-1].Step
	if i+1 < len(steps) {
		return steps[i+1].Answerer
	}
	return ""
}

// update rewrites the message to its record; failures are logged (the
// next change rewrites it again).
func (b *Bot) update(ctx context.Context, m *message) {
	err := b.call(ctx, "chat.update", func() error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, m.ChannelID, m.TS,
			slack.MsgOptionText(b.fallback(m), false), slack.MsgOptionBlocks(b.blocks(m)...))
		return err
	})
	if err != nil {
		b.log.Warn("update question message", "channel", m.ChannelID, "ts", m.TS, "error", err)
	}
}

// reply posts text in the message's thread.
func (b *Bot) reply(ctx context.Context, channelID, threadTS, text string) {
	err := b.call(ctx, "chat.postMessage", func() error {
		_, _, err := b.api.PostMessageContext(ctx, channelID, slack.MsgOptionText(text, false), slack.MsgOptionTS(threadTS))
		return err
	})
	if err != nil {
		b.log.Warn("post in thread", "channel", channelID, "thread_ts", threadTS, "error", err)
	}
}
