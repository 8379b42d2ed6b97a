package slackanswer

import (
	"context"
	"errors"
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
		Members: []member{mb}, Next: nextStep(t, step), IfUnanswered: ifUnanswered(t, q.Round)}
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
		// Never silent: serve's log says what Slack refused, and the
		// error — the route step's failure, shown by agora status and the
		// inbox — says it in plain words.
		code, msgs := slackError(err)
		b.log.Warn("slack refused the question", "task_id", q.TaskID, "round", q.Round, "step", step,
			"channel", target.Channel, "slack_error", code, "slack_messages", msgs, "error", err)
		return refusal(err)
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
	if b.layout(m).whole {
		b.postWhole(ctx, m)
	}
	return answer.ErrPending
}

// postWhole posts the whole question (context, options) in the message's
// thread when the message could not hold it: one click away.
func (b *Bot) postWhole(ctx context.Context, m *message) {
	parts := b.whole(m, m.Members[0].TaskID)
	for i, p := range parts {
		var bl []slack.Block
		for _, s := range p {
			bl = append(bl, section(s))
		}
		text := fmt.Sprintf("The whole question of task %s (part %d of %d)", m.Members[0].TaskID, i+1, len(parts))
		err := b.call(ctx, "chat.postMessage", func() error {
			_, _, err := b.api.PostMessageContext(ctx, m.ChannelID, slack.MsgOptionText(text, false),
				slack.MsgOptionBlocks(bl...), slack.MsgOptionTS(threadOf(m)))
			return err
		})
		if err != nil {
			code, msgs := slackError(err)
			b.log.Warn("slack refused the whole question in the thread", "task_id", m.Members[0].TaskID, "step", m.Step,
				"slack_error", code, "slack_messages", msgs, "error", err)
			return
		}
	}
}

// ifUnanswered is the consequence recorded on round n of t, if any.
func ifUnanswered(t *wire.Task, n int) *wire.IfUnanswered {
	for i := range t.Rounds {
		if t.Rounds[i].N == n {
			return t.Rounds[i].IfUnanswered
		}
	}
	return nil
}

// slackError is Slack's error code and the messages it gave with it
// (response_metadata messages, else its "errors"), if err is one.
func slackError(err error) (code string, msgs []string) {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return "", nil
	}
	for _, m := range se.ResponseMetadata.Messages {
		msgs = append(msgs, strings.TrimPrefix(m, "[ERROR] "))
	}
	if len(msgs) == 0 {
		for _, e := range se.Errors {
			if e.Message != nil {
				msgs = append(msgs, *e.Message)
			}
		}
	}
	return se.Err, msgs
}

// refusal says in plain words why a question did not reach Slack: the
// route step's failure.
func refusal(err error) error {
	code, msgs := slackError(err)
	if code == "" {
		return fmt.Errorf("the question could not be posted to Slack: %w", err)
	}
	detail := code
	if len(msgs) > 0 {
		detail += ": " + clip(strings.Join(msgs, "; "), 500)
	}
	//lint:ignore ST1005 a sentence shown to people, that starts with a name
	return fmt.Errorf("Slack refused the question (%s)", detail)
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
	steps, err := wire.ParseRoute(route)
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
		code, msgs := slackError(err)
		b.log.Warn("update question message", "task_id", m.Members[0].TaskID, "step", m.Step, "channel", m.ChannelID, "ts", m.TS,
			"slack_error", code, "slack_messages", msgs, "error", err)
	}
}

// reply posts text in the message's thread.
func (b *Bot) reply(ctx context.Context, channelID, threadTS, text string) {
	err := b.call(ctx, "chat.postMessage", func() error {
		_, _, err := b.api.PostMessageContext(ctx, channelID, slack.MsgOptionText(text, false), slack.MsgOptionTS(threadTS))
		return err
	})
	if err != nil {
		code, msgs := slackError(err)
		b.log.Warn("post in thread", "channel", channelID, "thread_ts", threadTS, "slack_error", code, "slack_messages", msgs, "error", err)
	}
}
