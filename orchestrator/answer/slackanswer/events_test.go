package slackanswer

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// event posts an Events API payload, signed at ts with key, to the events
// endpoint and returns the status and body.
func (f *fixture) event(payload any, key string, ts time.Time) (int, string) {
	f.t.Helper()
	r := slackfake.Event(f.srv.URL+"/slack/events", key, ts, payload)
	r.RequestURI = ""
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		f.t.Fatalf("POST event: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// threadQuestion is question, once the bot knows the message's thread: it
// learns it just after Slack answered chat.postMessage, which a person's
// reply cannot beat but a test can.
func (f *fixture) threadQuestion(id string) slackfake.Call {
	f.t.Helper()
	q := f.question(id)
	waitFor(f.t, "the thread of "+id+" known", func() bool { return f.bot.knownThread(f.t.Context(), channelIDOf(q), q.TS) })
	return q
}

// channelIDOf is the channel id the fake gave the posted message.
func channelIDOf(q slackfake.Call) string { return slackfake.ChannelID(q.Params.Get("channel")) }

// ephemeralIn waits for a chat.postEphemeral to user in the thread
// containing want.
func (f *fixture) ephemeralIn(user, thread, want string) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("an ephemeral reply to %s in thread %s saying %q", user, thread, want), func() bool {
		for _, c := range f.fake.Calls("chat.postEphemeral") {
			if c.Params.Get("user") == user && c.Params.Get("thread_ts") == thread && strings.Contains(c.Params.Get("text"), want) {
				return true
			}
		}
		return false
	})
}

// TestThreadReplyAnswers: a reply in the task's thread answers a question
// that takes free text (Slack's escaping undone); delivered again, it is
// applied once; the next round's question, posted in the same thread, is
// answered by the next reply; a reply after that is told it came late.
func TestThreadReplyAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddUser("U1", "alice")
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.threadQuestion(id)
	reply := slackfake.ThreadReply("Ev1", "U1", channel, q.TS, " postgres &amp; redis ")
	for i := range 2 { // Slack retries a delivery with the same event_id
		if code, _ := f.event(reply, secret, time.Now()); code != http.StatusOK {
			t.Fatalf("signed thread reply, delivery %d: status %d, want 200", i+1, code)
		}
	}
	task := f.waitTask(id, "answered by the reply", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "postgres & redis" || a.By != "slack:U1 (alice)" || a.Channel != "slack" || a.Via != Via {
		t.Errorf("answer = %+v, want \"postgres & redis\" by slack:U1 (alice) on slack via %s", a, Via)
	}
	f.updated(q.TS, "answered by *alice* (<@U1>) from slack")
	waitFor(t, "the reply's record done", func() bool { all, done := f.clicks(); return all == 1 && done == 1 })
	if e := f.fake.Calls("chat.postEphemeral"); len(e) != 0 {
		t.Errorf("ephemeral replies %+v: the repeated delivery was applied again", e)
	}

	f.waitTask(id, "round 2 queued", func(t *wire.Task) bool { return len(t.Rounds) == 2 && t.Rounds[1].Enqueued })
	f.askRound(id, 2, schemas.NeedsInput{Question: "Ship it?", Options: []string{"Yes", "No"}})
	waitFor(t, "round 2's question in the thread", func() bool {
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("blocks"), "Ship it?") {
				return c.Params.Get("thread_ts") == q.TS
			}
		}
		return false
	})
	f.event(slackfake.ThreadReply("Ev2", "U1", channel, q.TS, "yes"), secret, time.Now())
	task = f.waitTask(id, "round 2 answered by the reply", func(t *wire.Task) bool { return len(t.Rounds) >= 2 && t.Rounds[1].Answer != nil })
	if a := task.Rounds[1].Answer; a.Value != "Yes" {
		t.Errorf("round 2 answer = %+v, want the option Yes", a)
	}

	f.event(slackfake.ThreadReply("Ev3", "U2", channel, q.TS, "No"), secret, time.Now())
	f.ephemeralIn("U2", q.TS, "Already answered by *alice* (<@U1>) from slack at")
	f.ephemeralIn("U2", q.TS, "Your reply changed nothing")
}

// TestThreadReplyRules: a reply by someone not allowed, or naming no
// option of a question that has options, is told why in the thread and
// changes nothing; replies that are not a person's reply in one of the
// bot's threads are not even recorded.
func TestThreadReplyRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops?allow=U2", nil, ab())
	q := f.threadQuestion(id)
	bot := slackfake.ThreadReply("Ev10", "UBOT", channel, q.TS, "A")
	botMsg := slackfake.ThreadReply("Ev11", "U2", channel, q.TS, "A")
	botMsg["event"].(map[string]any)["bot_id"] = "B9"
	edited := slackfake.ThreadReply("Ev12", "U2", channel, q.TS, "A")
	edited["event"].(map[string]any)["subtype"] = "message_changed"
	root := slackfake.ThreadReply("Ev13", "U2", channel, q.TS, "A")
	root["event"].(map[string]any)["ts"] = q.TS
	ignored := []struct {
		name    string
		payload map[string]any
	}{
		{"the bot's own reply", bot},
		{"another bot's", botMsg},
		{"an edit", edited},
		{"a thread's root", root},
		{"a reply in another thread", slackfake.ThreadReply("Ev14", "U2", channel, "1600000000.000001", "A")},
		{"a reply in another channel", slackfake.ThreadReply("Ev15", "U2", "COTHER", q.TS, "A")},
	}
	for _, tt := range ignored {
		if code, _ := f.event(tt.payload, secret, time.Now()); code != http.StatusOK {
			t.Errorf("%s: status %d, want 200", tt.name, code)
		}
	}
	if all, _ := f.clicks(); all != 0 {
		t.Errorf("%d records of events that are no replies to a question, want 0", all)
	}

	f.event(slackfake.ThreadReply("Ev20", "U1", channel, q.TS, "A"), secret, time.Now())
	f.ephemeralIn("U1", q.TS, "You may not answer this question: only <@U2> may")
	f.event(slackfake.ThreadReply("Ev21", "U2", channel, q.TS, "maybe C"), secret, time.Now())
	f.ephemeralIn("U2", q.TS, "This question takes one of its options (A, B)")
	waitFor(t, "both replies acted on", func() bool { all, done := f.clicks(); return all == 2 && done == 2 })
	if task, _ := f.orch.Get(t.Context(), id); task.Rounds[0].Answer != nil {
		t.Fatalf("answered by a refused reply: %+v", task.Rounds[0].Answer)
	}
	f.event(slackfake.ThreadReply("Ev22", "U2", channel, q.TS, "b"), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.By != "slack:U2" {
		t.Errorf("answer = %+v, want B by slack:U2 (users.info does not know U2)", a)
	}
}

// TestEventsEndpointRefusesBadSignatures: the events endpoint answers
// Slack's url_verification challenge when signed, and refuses forged,
// stale and unsigned requests with 401, recording nothing.
func TestEventsEndpointRefusesBadSignatures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if code, body := f.event(slackfake.URLVerification("abc123"), secret, time.Now()); code != http.StatusOK || !strings.Contains(body, `"challenge":"abc123"`) {
		t.Errorf("url_verification: %d %s, want 200 with the challenge", code, body)
	}
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.threadQuestion(id)
	reply := slackfake.ThreadReply("Ev1", "U1", channel, q.TS, "postgres")
	tests := []struct {
		name string
		key  string
		at   time.Time
	}{
		{"forged", "not-the-secret", time.Now()},
		{"stale", secret, time.Now().Add(-10 * time.Minute)},
	}
	for _, tt := range tests {
		if code, _ := f.event(reply, tt.key, tt.at); code != http.StatusUnauthorized {
			t.Errorf("%s event: status %d, want 401", tt.name, code)
		}
	}
	r := slackfake.Event(f.srv.URL+"/slack/events", secret, time.Now(), reply)
	r.Header.Del("X-Slack-Signature")
	r.RequestURI = ""
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned event: status %d, want 401", resp.StatusCode)
	}
	if all, _ := f.clicks(); all != 0 {
		t.Errorf("%d events recorded from refused requests, want 0", all)
	}
	if task, _ := f.orch.Get(t.Context(), id); task.State != wire.StateNeedsInput || task.Rounds[0].Answer != nil {
		t.Errorf("task after refused events: %s, answer %+v; want the question open", task.State, task.Rounds[0].Answer)
	}
}

// TestSocketModeThreadReply: with Socket Mode a thread reply comes as an
// events_api envelope, is acknowledged, and answers.
func TestSocketModeThreadReply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.SocketMode, c.AppToken, c.SigningSecret = true, "xapp-test", "" })
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.threadQuestion(id)
	env := f.fake.SocketSendType(t, "events_api", slackfake.ThreadReply("Ev1", "U1", channel, q.TS, "sqlite"))
	waitFor(t, "the envelope acknowledged", func() bool { return f.fake.Acked(env) })
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "sqlite" || a.By != "slack:U1" || a.Channel != "slack" {
		t.Errorf("answer = %+v, want sqlite by slack:U1 via slack", a)
	}
}

// TestThreadReplyToAnotherBot: a reply that reaches a bot other than the
// one that posted the question (two orchestrators behind a load
// balancer, one bucket) finds the question through the bucket.
func TestThreadReplyToAnotherBot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := f.startBot() // started before the question: nothing in its memory
	srv := httptest.NewServer(other.EventsHandler())
	t.Cleanup(srv.Close)
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.threadQuestion(id)
	r := slackfake.Event(srv.URL+"/slack/events", secret, time.Now(), slackfake.ThreadReply("Ev1", "U1", channel, q.TS, "postgres"))
	r.RequestURI = ""
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reply to the other bot: status %d, want 200", resp.StatusCode)
	}
	task := f.waitTask(id, "answered through the other bot", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "postgres" || a.By != "slack:U1" {
		t.Errorf("answer = %+v, want postgres by slack:U1", a)
	}
}

// TestEventsEndpointReadsJSONExactly: the Events API body is read as every
// outside document is (docs/contract.md, "Reading JSON"): a member in
// another case is not the field, a duplicated key is refused.
func TestEventsEndpointReadsJSONExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name     string
		body     string
		wantCode int
		want     string
	}{
		{"TYPE beside type", `{"type":"url_verification","TYPE":"event_callback","challenge":"abc123"}`, http.StatusOK, `"challenge":"abc123"`},
		{"duplicate challenge", `{"type":"url_verification","challenge":"a","challenge":"b"}`, http.StatusBadRequest, `key "challenge" appears more than once`},
	}
	for _, tt := range tests {
		code, body := f.event(json.RawMessage(tt.body), secret, time.Now())
		if code != tt.wantCode || !strings.Contains(body, tt.want) {
			t.Errorf("%s: POST /slack/events = %d %s, want %d and %q", tt.name, code, body, tt.wantCode, tt.want)
		}
	}
}
