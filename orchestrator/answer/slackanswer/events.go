package slackanswer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/schemas"
)

// kindEvent marks a click record that holds an Events API event_callback.
const kindEvent = "event"

// outerEvent is what the Events API POSTs (and Socket Mode carries in an
// events_api envelope): a url_verification challenge or an event_callback.
type outerEvent struct {
	Type      string      `json:"type"`
	Challenge string      `json:"challenge,omitempty"`
	EventID   string      `json:"event_id,omitempty"`
	Event     threadReply `json:"event"`
}

// threadReply is the part of a "message" event the bot reads.
type threadReply struct {
	Type     string `json:"type"`
	Subtype  string `json:"subtype,omitempty"`
	User     string `json:"user,omitempty"`
	BotID    string `json:"bot_id,omitempty"`
	Text     string `json:"text"`
	Channel  string `json:"channel"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts,omitempty"`
}

// isReply reports whether e is a person's reply in a thread: a message
// (or a reply also sent to the channel) with a thread_ts other than its
// own ts, not from a bot, not an edit or a deletion.
func (e threadReply) isReply() bool {
	return e.Type == "message" && (e.Subtype == "" || e.Subtype == "thread_broadcast") &&
		e.User != "" && e.BotID == "" && e.ThreadTS != "" && e.ThreadTS != e.TS
}

// EventsHandler is the Events API endpoint (the app's Event Subscriptions
// "Request URL", e.g. https://agora.example.com/slack/events). It verifies
// Slack's signature as the interactivity endpoint does, answers the
// url_verification challenge, and records a reply in the thread of one of
// the bot's questions before answering 200 and acting on it; every other
// event is acknowledged and dropped.
func (b *Bot) EventsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := b.verified(w, r)
		if !ok {
			return
		}
		var ev outerEvent
		if err := schemas.Decode("Slack event", body, &ev); err != nil {
			http.Error(w, "want an Events API JSON body: "+err.Error(), http.StatusBadRequest)
			return
		}
		switch ev.Type {
		case "url_verification":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"challenge": ev.Challenge})
			return
		case "event_callback":
		default:
			w.WriteHeader(http.StatusOK)
			return
		}
		key, fresh, err := b.recordEvent(r.Context(), body, ev)
		if err != nil {
			// Not recorded: Slack delivers the event again.
			b.log.Error("record slack event", "error", err)
			http.Error(w, "could not record the event", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
		if fresh {
			b.goAct(key)
		}
	})
}

// recordEvent keeps a thread reply to one of the bot's questions before
// anything is done with it (key "" when the event is not one); fresh is
// false for an event_id seen before.
func (b *Bot) recordEvent(ctx context.Context, body []byte, ev outerEvent) (key string, fresh bool, err error) {
	if !ev.Event.isReply() || ev.EventID == "" || ev.Event.User == b.botUser || !b.knownThread(ctx, ev.Event.Channel, ev.Event.ThreadTS) {
		return "", false, nil
	}
	key = eventKey(ev.EventID)
	raw, err := json.Marshal(click{Kind: kindEvent, Payload: body, At: b.now()})
	if err != nil {
		return "", false, err
	}
	if _, err := b.cfg.KV.Create(ctx, key, raw); errors.Is(err, bus.ErrKeyExists) {
		b.log.Info("duplicate slack event ignored", "event_id", ev.EventID)
		return key, false, nil
	} else if err != nil {
		return "", false, err
	}
	return key, true, nil
}

// threadKeyOf is how the thread index names a thread.
func threadKeyOf(channelID, ts string) string { return channelID + "/" + ts }

// indexThread remembers, in memory, that message m is in the thread it
// is in.
func (b *Bot) indexThread(m *message) {
	b.threadsMu.Lock()
	defer b.threadsMu.Unlock()
	k := threadKeyOf(m.ChannelID, threadOf(m))
	if !slices.Contains(b.inThread[k], m.ID) {
		b.inThread[k] = append(b.inThread[k], m.ID)
	}
}

// keepThread indexes m and keeps the thread's list of messages in the
// bucket too (inThreadKey), so that a reply reaching another
// orchestrator's bot (behind a load balancer) finds its question. Callers
// hold mu.
func (b *Bot) keepThread(ctx context.Context, m *message) {
	b.indexThread(m)
	key := inThreadKey(m.ChannelID, threadOf(m))
	var ids []string
	if _, err := b.load(ctx, key, &ids); err != nil {
		b.log.Warn("read the messages of a thread", "thread", threadOf(m), "error", err)
	}
	if slices.Contains(ids, m.ID) {
		return
	}
	if err := b.save(ctx, key, append(ids, m.ID)); err != nil {
		b.log.Warn("keep the messages of a thread", "thread", threadOf(m), "error", err)
	}
}

// knownThread reports whether a message of the bot's is in the thread;
// it takes no lock held across Slack calls, so the endpoint answers
// within Slack's 3 seconds.
func (b *Bot) knownThread(ctx context.Context, channelID, ts string) bool {
	return len(b.threadMessages(ctx, channelID, ts, false)) > 0
}

// threadMessages lists the bot's messages in a thread: from memory, and
// from the bucket when memory has none or fresh is set (messages another
// bot posted since this one started).
func (b *Bot) threadMessages(ctx context.Context, channelID, ts string, fresh bool) []string {
	k := threadKeyOf(channelID, ts)
	b.threadsMu.Lock()
	ids := slices.Clone(b.inThread[k])
	b.threadsMu.Unlock()
	if len(ids) > 0 && !fresh {
		return ids
	}
	var kept []string
	if _, err := b.load(ctx, inThreadKey(channelID, ts), &kept); err != nil {
		b.log.Warn("read the messages of a thread", "thread", ts, "error", err)
		return ids
	}
	b.threadsMu.Lock()
	defer b.threadsMu.Unlock()
	for _, id := range kept {
		if !slices.Contains(b.inThread[k], id) {
			b.inThread[k] = append(b.inThread[k], id)
		}
	}
	return slices.Clone(b.inThread[k])
}

// answerReply answers the question a reply in its thread is about: the most
// recent open message of the thread (a thread holds a task's later rounds
// too), else its most recent one, which tells a late reply why it changed
// nothing.
func (b *Bot) answerReply(ctx context.Context, payload []byte) (string, error) {
	var ev outerEvent
	if err := schemas.Decode("Slack event", payload, &ev); err != nil {
		return "undecodable event: " + err.Error(), nil
	}
	e := ev.Event
	b.mu.Lock()
	var open, latest *message
	for _, id := range b.threadMessages(ctx, e.Channel, e.ThreadTS, true) {
		var m message
		if ok, err := b.load(ctx, msgKey(id), &m); err != nil {
			b.mu.Unlock()
			return "", err
		} else if !ok {
			continue
		}
		if latest == nil || tsAfter(m.TS, latest.TS) {
			latest = &m
		}
		if !m.Done && (open == nil || tsAfter(m.TS, open.TS)) {
			open = &m
		}
	}
	b.mu.Unlock()
	m := open
	if m == nil {
		m = latest
	}
	if m == nil {
		return "reply in an unknown thread", nil
	}
	text := unescape(strings.TrimSpace(e.Text))
	notAnswer := ":warning: An empty reply is not an answer."
	if len(m.Options) > 0 {
		list, _ := clipMrkdwn(escape(strings.Join(m.Options, ", ")), textBudget)
		notAnswer = fmt.Sprintf(":warning: This question takes one of its options (%s): click a button, or reply with exactly one of them (or its number). Your reply changed nothing.",
			list)
	}
	return b.answer(ctx, m.ID, attempt{
		user: slack.User{ID: e.User}, what: "reply", thread: e.ThreadTS, notAnswer: notAnswer,
		value: func(m *message) (string, bool) {
			if len(m.Options) == 0 {
				return text, text != ""
			}
			// With options there is no free text: a reply naming one
			// (in any case) chooses it.
			for _, o := range m.Options {
				if strings.EqualFold(strings.TrimSpace(o), text) {
					return o, true
				}
			}
			// Or its number in the message's list ("3", "#3"), when no
			// option reads so.
			if n, err := strconv.Atoi(strings.TrimPrefix(text, "#")); err == nil && n >= 1 && n <= len(m.Options) {
				return m.Options[n-1], true
			}
			return "", false
		},
	})
}

// tsAfter compares Slack timestamps ("1700000000.000123").
func tsAfter(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// unescape undoes Slack's escaping of &, < and > in message text.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}
