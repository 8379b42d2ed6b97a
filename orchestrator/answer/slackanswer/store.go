package slackanswer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/wire"
)

// message is one question posted to Slack: a task's round, or the rounds
// of the tasks of one batch asking the same question (a group).
type message struct {
	ID        string   `json:"id"`
	Step      string   `json:"step"`
	Target    Target   `json:"target"`
	ChannelID string   `json:"channel_id"`
	TS        string   `json:"ts"`
	ThreadTS  string   `json:"thread_ts,omitempty"`
	Batch     string   `json:"batch,omitempty"`
	GroupID   string   `json:"group_id,omitempty"`
	Question  string   `json:"question"`
	Options   []string `json:"options,omitempty"`
	Context   string   `json:"context,omitempty"`
	Default   *string  `json:"default,omitempty"`
	Members   []member `json:"members"`
	// Deadline is the step's timeout.
	Deadline time.Time `json:"deadline,omitzero"`
	// Posted is when the message was posted; RemindEvery the interval of
	// its reminders, counted back from Deadline (reminderDue);
	// RemindedAt the slot of the last reminder posted (recorded before it
	// is posted, so a restart never posts a slot twice); Reminders how
	// many were posted.
	Posted      time.Time     `json:"posted,omitzero"`
	RemindEvery time.Duration `json:"remind_every,omitempty"`
	RemindedAt  time.Time     `json:"reminded_at,omitzero"`
	Reminders   int           `json:"reminders,omitempty"`
	// RemindAt and Reminded are the single reminder of records written
	// before reminders repeated (no RemindEvery); still honoured.
	RemindAt  time.Time `json:"remind_at,omitzero"`
	Reminded  bool      `json:"reminded,omitempty"`
	Next      string    `json:"next"`
	Escalated bool      `json:"escalated,omitempty"`
	// IfUnanswered is what happens to the question if nobody answers, and
	// when (the round's, kept current as the task changes).
	IfUnanswered *wire.IfUnanswered `json:"if_unanswered,omitempty"`
	// Whole: the question did not fit whole in the message, and its
	// whole text was posted in the thread.
	Whole bool `json:"whole,omitempty"`
	// Acked is who clicked "On it" first, and when: the reminders stop.
	Acked *acked `json:"acked,omitempty"`
	// Done: every member is answered or closed; the buttons are gone.
	Done bool `json:"done,omitempty"`
}

// member is one task's round a message asks.
type member struct {
	TaskID   string `json:"task_id"`
	Round    int    `json:"round"`
	Subagent string `json:"subagent"`
	// Answer is how the round was answered, here or elsewhere.
	Answer *answered `json:"answer,omitempty"`
	// Closed says why the question went away unanswered (cancelled…).
	Closed string `json:"closed,omitempty"`
}

type answered struct {
	Value   string    `json:"value"`
	By      string    `json:"by"`
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
}

// acked is an acknowledgement: someone is on the question.
type acked struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// has reports whether the message asks task's round.
func (m *message) has(task string, round int) bool {
	for _, x := range m.Members {
		if x.TaskID == task && x.Round == round {
			return true
		}
	}
	return false
}

func (m *member) settled() bool { return m.Answer != nil || m.Closed != "" }

// thread is where a task's messages go in each channel, and whether its
// outcome was posted.
type thread struct {
	Task string `json:"task"`
	// TS maps the route step's channel ("#ops") to the thread's root.
	TS      map[string]ref `json:"ts"`
	Outcome bool           `json:"outcome,omitempty"`
}

// ref is a posted message: its channel id and ts.
type ref struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// click is an interaction or an Events API event as received, recorded
// before it is acted on.
type click struct {
	// Kind is "" for an interaction payload, kindEvent for an Events API
	// event_callback (a reply in a thread).
	Kind    string          `json:"kind,omitempty"`
	Payload json.RawMessage `json:"payload"`
	At      time.Time       `json:"at"`
	Done    bool            `json:"done,omitempty"`
	Result  string          `json:"result,omitempty"`
}

// hashed keeps arbitrary ids inside the key alphabet NATS KV allows.
func hashed(prefix, s string) string {
	sum := sha256.Sum256([]byte(s))
	return prefix + "." + hex.EncodeToString(sum[:16])
}

func msgKey(id string) string      { return "msg." + id }
func threadKey(task string) string { return hashed("thread", task) }
func groupKey(gid string) string   { return hashed("group", gid) }

// inThreadKey lists the bot's messages in a thread (channel id, root ts).
func inThreadKey(channelID, ts string) string { return hashed("inthread", channelID+"/"+ts) }
func clickKey(p []byte) string                { return hashed("click", string(p)) }

// eventKey is the record of an Events API event: Slack delivers an event
// again (X-Slack-Retry-Num) with the same event_id.
func eventKey(eventID string) string { return hashed("click", "event:"+eventID) }

func decode(b []byte, v any) error { return json.Unmarshal(b, v) }

// load reads key into v; found is false when it is absent.
func (b *Bot) load(ctx context.Context, key string, v any) (found bool, err error) {
	_, found, err = b.loadRev(ctx, key, v)
	return found, err
}

// loadRev is load with the record's revision, for claim.
func (b *Bot) loadRev(ctx context.Context, key string, v any) (rev uint64, found bool, err error) {
	raw, rev, err := b.cfg.KV.Get(ctx, key)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if err := decode(raw, v); err != nil {
		return 0, false, fmt.Errorf("decode %s: %w", key, err)
	}
	return rev, true, nil
}

// claim saves v at key only if the record is still at rev: the bot that
// claims a reminder or a notice posts it; an error wrapping
// bus.ErrRevision means another bot (or change) came first.
func (b *Bot) claim(ctx context.Context, key string, v any, rev uint64) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	_, err = b.cfg.KV.Update(ctx, key, raw, rev)
	return err
}

func (b *Bot) save(ctx context.Context, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	_, err = b.cfg.KV.Put(ctx, key, raw)
	return err
}

// index remembers an open message for the task watcher and reminders.
// Callers hold mu or run before Start returns.
func (b *Bot) index(m *message) {
	b.open[m.ID] = true
	for _, mb := range m.Members {
		if !slices.Contains(b.byTask[mb.TaskID], m.ID) {
			b.byTask[mb.TaskID] = append(b.byTask[mb.TaskID], m.ID)
		}
	}
}

// unindex forgets a message that is done.
func (b *Bot) unindex(m *message) {
	delete(b.open, m.ID)
	for _, mb := range m.Members {
		ids := slices.DeleteFunc(b.byTask[mb.TaskID], func(id string) bool { return id == m.ID })
		if len(ids) == 0 {
			delete(b.byTask, mb.TaskID)
		} else {
			b.byTask[mb.TaskID] = ids
		}
	}
}
