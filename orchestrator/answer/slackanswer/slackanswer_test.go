package slackanswer

// Tests against the real orchestrator (embedded NATS, no runner: the test
// plays the rounds' events) and the Slack fake on loopback, with signed
// interaction payloads posted to the real endpoint.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).Start.func1"))
}

const secret = "s3cret"

type fixture struct {
	t    *testing.T
	bus  *bus.Bus
	kv   *bus.KV
	orch *orchestrator.Orchestrator
	fake *slackfake.Server
	bot  *Bot
	srv  *httptest.Server
	// tweak changes the bot's configuration before it starts.
	tweak func(*Config)
	// refusals is set by a test that makes Slack refuse calls: every other
	// test fails on any call the strict fake refused.
	refusals bool
}

var seq atomic.Int64

func newFixture(t *testing.T, tweak ...func(*Config)) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{t: t, bus: bustest.Bus(t), fake: slackfake.New(t)}
	if len(tweak) > 0 {
		f.tweak = tweak[0]
	}
	r := &answer.Resolver{}
	o, err := orchestrator.New(orchestrator.Config{Bus: f.bus, Store: storagetest.FileStore(t), Answerers: r, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	f.orch = o
	if f.kv, err = f.bus.KeyValue(ctx, Bucket, "the Slack answerer's messages, threads and clicks"); err != nil {
		t.Fatal(err)
	}
	f.bot = f.startBot()
	if err := f.bot.Register(r); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slack/events" {
			f.bot.EventsHandler().ServeHTTP(w, r)
			return
		}
		f.bot.Handler().ServeHTTP(w, r) // the current bot, across restarts
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() {
		if f.refusals {
			return
		}
		for _, c := range f.fake.Refused() {
			t.Errorf("Slack (the strict fake) refused %s: %s %q; blocks: %s", c.Method, c.Error, c.Messages, c.Params.Get("blocks"))
		}
	})
	return f
}

func (f *fixture) startBot() *Bot {
	f.t.Helper()
	cfg := Config{Token: "xoxb-test", SigningSecret: secret, APIURL: f.fake.URL(), PublicURL: "https://agora.example.com",
		Service: f.orch, KV: f.kv, Logger: natstest.Logger(f.t), Tick: 50 * time.Millisecond}
	if f.tweak != nil {
		f.tweak(&cfg)
	}
	b, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := b.Start(f.t.Context()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = b.Stop(context.Background()) })
	return b
}

// ask submits a task on route and plays its round 1 asking q; it returns
// the task id once the question is open.
func (f *fixture) ask(route string, labels map[string]string, q schemas.NeedsInput) string {
	f.t.Helper()
	id := fmt.Sprintf("s%d", seq.Add(1))
	_, err := f.orch.Submit(f.t.Context(), wire.SubmitRequest{TaskID: id, Route: route, Labels: labels,
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}})
	if err != nil {
		f.t.Fatalf("Submit: %v", err)
	}
	f.askRound(id, 1, q)
	return id
}

// askRound plays round n of task id asking q.
func (f *fixture) askRound(id string, n int, q schemas.NeedsInput) {
	f.t.Helper()
	dispatch := fmt.Sprintf("%s-r%d", id, n)
	f.publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: dispatch})
	f.publish(schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: dispatch, NeedsInput: &q})
	f.waitTask(id, "question open", func(t *wire.Task) bool {
		return t.State == wire.StateNeedsInput && len(t.Rounds) == n
	})
}

func (f *fixture) publish(ev schemas.Event) {
	f.t.Helper()
	ev.Time = time.Now().UTC()
	if ev.Kind.Terminal() {
		zero, ms := 0, int64(10)
		ev.ExitCode, ev.DurationMS = &zero, &ms
	}
	if _, err := f.bus.PublishEvent(f.t.Context(), ev); err != nil {
		f.t.Fatalf("publish %s of %s: %v", ev.Kind, ev.DispatchID, err)
	}
}

// waitTask polls task id until cond holds (20s).
func (f *fixture) waitTask(id, what string, cond func(*wire.Task) bool) *wire.Task {
	f.t.Helper()
	var t *wire.Task
	waitFor(f.t, "task "+id+": "+what, func() bool {
		var err error
		t, err = f.orch.Get(f.t.Context(), id)
		return err == nil && cond(t)
	})
	return t
}

// waitFor is testutil.Eventually with this package's 20 s bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, cond)
}

// post sends an interaction payload, signed at ts with key, to the
// endpoint and returns the status.
func (f *fixture) post(payload any, key string, ts time.Time) int {
	f.t.Helper()
	r := slackfake.Interaction(f.srv.URL+"/slack/interactions", key, ts, payload)
	r.RequestURI = ""
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		f.t.Fatalf("POST interaction: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// question returns the call that posted the question of task id.
func (f *fixture) question(id string) slackfake.Call {
	f.t.Helper()
	var call slackfake.Call
	waitFor(f.t, "the question of "+id+" posted", func() bool {
		for _, c := range f.fake.Calls("chat.postMessage") {
			// The task's link, not a prefix of another id; a call that got
			// a 429 posted nothing.
			if c.TS != "" && strings.Contains(c.Params.Get("blocks"), "/tasks/"+id+"|") {
				call = c
				return true
			}
		}
		return false
	})
	return call
}

func button(t *testing.T, c slackfake.Call, text string) slackfake.Button {
	t.Helper()
	for _, b := range c.Buttons() {
		if strings.TrimSuffix(b.Text, " (default)") == text {
			return b
		}
	}
	t.Fatalf("no button %q in %+v", text, c.Buttons())
	return slackfake.Button{}
}

// updated waits for a chat.update of the message at ts whose blocks
// contain want.
func (f *fixture) updated(ts, want string) slackfake.Call {
	f.t.Helper()
	var call slackfake.Call
	f.t.Cleanup(func() {
		if f.t.Failed() {
			for _, c := range f.fake.Calls("chat.update") {
				f.t.Logf("chat.update %s: %s", c.Params.Get("ts"), c.Params.Get("blocks"))
			}
		}
	})
	waitFor(f.t, fmt.Sprintf("chat.update of %s saying %q", ts, want), func() bool {
		for _, c := range f.fake.Calls("chat.update") {
			if c.OK() && c.Params.Get("ts") == ts && strings.Contains(c.Params.Get("blocks"), want) {
				call = c
				return true
			}
		}
		return false
	})
	return call
}

// ephemeral waits for a chat.postEphemeral to user containing want.
func (f *fixture) ephemeral(user, want string) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("an ephemeral reply to %s saying %q", user, want), func() bool {
		for _, c := range f.fake.Calls("chat.postEphemeral") {
			if c.OK() && c.Params.Get("user") == user && strings.Contains(c.Params.Get("text"), want) {
				return true
			}
		}
		return false
	})
}

func ab() schemas.NeedsInput {
	def := "A"
	return schemas.NeedsInput{Question: "Rewrite A or B?", Options: []string{"A", "B"}, Default: &def, Context: "Both compile."}
}

const channel = "COPS" // slackfake's id of #ops

// TestQuestionAnsweredFromSlack: the question goes to Slack as buttons
// (the default marked, a link to the task), a signed click answers it, the
// task's round 2 is queued with that answer, and the message is updated
// with the answering user.
func TestQuestionAnsweredFromSlack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	if got := q.Params.Get("channel"); got != "#ops" {
		t.Errorf("chat.postMessage channel = %q, want #ops", got)
	}
	blocks := q.Params.Get("blocks")
	for _, want := range []string{"Rewrite A or B?", "Both compile.", "https://agora.example.com/tasks/" + id, "sub-agent coder, round 1"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("question blocks lack %q: %s", want, blocks)
		}
	}
	if a := button(t, q, "A"); a.Style != "primary" || !strings.HasSuffix(a.Text, "(default)") {
		t.Errorf("button A = %+v, want the default marked", a)
	}
	msgTS := "1700000000.000002" // auth.test was the fake's first call
	if got := f.post(slackfake.Click("U1", "alice", channel, msgTS, button(t, q, "B")), secret, time.Now()); got != http.StatusOK {
		t.Fatalf("signed click: status %d, want 200", got)
	}
	task := f.waitTask(id, "round 2 queued with the answer", func(t *wire.Task) bool {
		return t.State == wire.StateQueued && len(t.Rounds) == 2
	})
	a := task.Rounds[0].Answer
	if a == nil || a.Value != "B" || a.By != "slack:U1 (alice)" || a.Channel != "slack" || a.Via != Via {
		t.Errorf("round 1 answer = %+v, want B by slack:U1 (alice) on channel slack, vouched for by %s", a, Via)
	}
	// What a runner takes off the queue for round 2 resumes the sub-agent
	// with the answer.
	req := f.queued(id + "-r2")
	if r := req.Spec.Resume; r == nil || r.Answer != "B" || r.Question != "Rewrite A or B?" {
		t.Errorf("round 2 resume = %+v, want answer B to Rewrite A or B?", r)
	}
	up := f.updated(msgTS, "answered by *alice* (<@U1>) from slack")
	if len(up.Buttons()) != 0 {
		t.Errorf("the answered message still has buttons: %+v", up.Buttons())
	}
}

// TestAnsweredElsewhereUpdatesMessage: an answer through the orchestrator
// (as the CLI or the web page gives it) updates the Slack message, and a
// click after it gets the ephemeral "already answered by … at …" and
// changes nothing.
func TestAnsweredElsewhereUpdatesMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	msgTS := "1700000000.000002"
	if _, err := f.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: id, Answer: "A", By: "bob", Channel: "web"}); err != nil {
		t.Fatal(err)
	}
	f.updated(msgTS, "answered by bob from web")
	if got := f.post(slackfake.Click("U1", "alice", channel, msgTS, button(t, q, "B")), secret, time.Now()); got != http.StatusOK {
		t.Fatalf("late click: status %d, want 200", got)
	}
	f.ephemeral("U1", "Already answered by bob from web at")
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a := task.Rounds[0].Answer; a.Value != "A" || a.By != "bob" {
		t.Errorf("answer after a late click = %+v, want A by bob", a)
	}
}

// TestBadSignatureRefused: forged, stale and unsigned requests get 401 and
// change nothing: no click is recorded, the question stays open.
func TestBadSignatureRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	click := slackfake.Click("U1", "alice", channel, "1700000000.000002", button(t, q, "B"))
	tests := []struct {
		name string
		req  func() *http.Request
	}{
		{"forged", func() *http.Request {
			return slackfake.Interaction(f.srv.URL, "not-the-secret", time.Now(), click)
		}},
		{"stale", func() *http.Request {
			return slackfake.Interaction(f.srv.URL, secret, time.Now().Add(-10*time.Minute), click)
		}},
		{"from the future", func() *http.Request {
			return slackfake.Interaction(f.srv.URL, secret, time.Now().Add(10*time.Minute), click)
		}},
		{"unsigned", func() *http.Request {
			r := slackfake.Interaction(f.srv.URL, secret, time.Now(), click)
			r.Header.Del("X-Slack-Signature")
			return r
		}},
		{"body changed", func() *http.Request {
			r := slackfake.Interaction(f.srv.URL, secret, time.Now(), click)
			other := slackfake.Interaction(f.srv.URL, secret, time.Now(), slackfake.Click("U2", "eve", channel, "1700000000.000002", button(t, q, "A")))
			other.Header = r.Header
			return other
		}},
	}
	for _, tt := range tests {
		r := tt.req()
		r.RequestURI = ""
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tt.name, resp.StatusCode)
		}
	}
	n := 0
	_ = f.kv.Each(t.Context(), func(key string, _ []byte, _ uint64) error {
		if strings.HasPrefix(key, "click.") {
			n++
		}
		return nil
	})
	if n != 0 {
		t.Errorf("%d clicks recorded from refused requests, want 0", n)
	}
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != wire.StateNeedsInput || task.Rounds[0].Answer != nil {
		t.Errorf("task after refused requests: %s with answer %+v; want the question open", task.State, task.Rounds[0].Answer)
	}
}

// clicks returns the recorded clicks and how many are done.
func (f *fixture) clicks() (all, done int) {
	_ = f.kv.Each(f.t.Context(), func(key string, v []byte, _ uint64) error {
		if strings.HasPrefix(key, "click.") {
			all++
			var c click
			if decode(v, &c) == nil && c.Done {
				done++
			}
		}
		return nil
	})
	return all, done
}

// TestDuplicateDeliveryAppliedOnce: the same click delivered twice is
// recorded once and applied once (a second application would get the
// ephemeral "already answered").
func TestDuplicateDeliveryAppliedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	click := slackfake.Click("U1", "alice", channel, "1700000000.000002", button(t, q, "B"))
	for i := range 2 {
		if got := f.post(click, secret, time.Now()); got != http.StatusOK {
			t.Fatalf("delivery %d: status %d, want 200", i+1, got)
		}
	}
	waitFor(t, "the click acted on", func() bool { all, done := f.clicks(); return all == 1 && done == 1 })
	f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if e := f.fake.Calls("chat.postEphemeral"); len(e) != 0 {
		t.Errorf("ephemeral replies %+v: the duplicate was applied again", e)
	}
}

// TestRestartRedrivesClick: a click recorded by a bot that stopped before
// acting on it is acted on by the next bot at its start.
func TestRestartRedrivesClick(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	payload := []byte(mustJSON(t, slackfake.Click("U1", "alice", channel, "1700000000.000002", button(t, q, "B"))))
	// What the handler does before it acts, then the process stops.
	if _, fresh, err := f.bot.record(t.Context(), payload); err != nil || !fresh {
		t.Fatalf("record = fresh %v, %v; want a fresh record", fresh, err)
	}
	if err := f.bot.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if task, _ := f.orch.Get(t.Context(), id); task.Rounds[0].Answer != nil {
		t.Fatalf("answered before the restart: %+v", task.Rounds[0].Answer)
	}
	f.bot = f.startBot()
	task := f.waitTask(id, "answered after the restart", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.By != "slack:U1 (alice)" {
		t.Errorf("answer = %+v, want B by slack:U1 (alice)", a)
	}
	waitFor(t, "the click marked done", func() bool { _, done := f.clicks(); return done == 1 })
	f.updated(q.TS, "answered by *alice* (<@U1>)")
}

// TestAllowList: a user neither listed nor in a listed group is told why
// and changes nothing; a member of a listed group answers.
func TestAllowList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddGroup("S1", "U3")
	id := f.ask("slack:#ops?allow=U2+S1", nil, ab())
	q := f.question(id)
	if b := q.Params.Get("blocks"); !strings.Contains(b, "Only <@U2>, <!subteam^S1> may answer") {
		t.Errorf("question does not say who may answer: %s", b)
	}
	ts := "1700000000.000002"
	f.post(slackfake.Click("U1", "mallory", channel, ts, button(t, q, "B")), secret, time.Now())
	f.ephemeral("U1", "You may not answer this question")
	if task, _ := f.orch.Get(t.Context(), id); task.Rounds[0].Answer != nil {
		t.Fatalf("an unauthorised click answered: %+v", task.Rounds[0].Answer)
	}
	f.post(slackfake.Click("U3", "carol", channel, ts, button(t, q, "A")), secret, time.Now())
	task := f.waitTask(id, "answered by carol", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.By != "slack:U3 (carol)" || a.Value != "A" {
		t.Errorf("answer = %+v, want A by slack:U3 (carol)", a)
	}
}

// TestBatchQuestionsOneMessage: identical questions of one batch are one
// message, and one click answers them all.
func TestBatchQuestionsOneMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	labels := map[string]string{wire.BatchLabel: "b1"}
	id1 := f.ask("slack:#ops", labels, ab())
	q := f.question(id1)
	id2 := f.ask("slack:#ops", labels, schemas.NeedsInput{Question: "rewrite a or b", Options: []string{"B", "A"}})
	ts := "1700000000.000002"
	f.updated(ts, id2)
	if n := len(f.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d messages posted for two identical questions of a batch, want 1", n)
	}
	f.post(slackfake.Click("U1", "alice", channel, ts, button(t, q, "B")), secret, time.Now())
	for _, id := range []string{id1, id2} {
		task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
		if a := task.Rounds[0].Answer; a.Value != "B" || a.Channel != "slack" {
			t.Errorf("task %s answer = %+v, want B via slack", id, a)
		}
	}
	f.updated(ts, "answered by *alice* (<@U1>)")
}

// TestOtherOpensForm: a question without options offers "Other…", which
// opens a modal; its submission answers with the text.
func TestOtherOpensForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.question(id)
	other := button(t, q, "Other…")
	f.post(slackfake.Click("U1", "alice", channel, "1700000000.000002", other), secret, time.Now())
	views := f.fake.WaitCalls(t, "views.open", 1)
	if got := views[0].Params.Get("trigger_id"); !strings.HasPrefix(got, "trig-") {
		t.Errorf("views.open trigger_id = %q, want the click's", got)
	}
	f.post(slackfake.Submission("U1", "alice", other.Value, " postgres "), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "postgres" || a.By != "slack:U1 (alice)" {
		t.Errorf("answer = %+v, want postgres by slack:U1 (alice)", a)
	}
}

// TestThreadPerTask: round 2's question and the task's outcome go into
// the thread of round 1's message.
func TestThreadPerTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	root := "1700000000.000002"
	f.post(slackfake.Click("U1", "alice", channel, root, button(t, q, "A")), secret, time.Now())
	// Enqueued: the round's dispatch is known, so its events are not strays.
	f.waitTask(id, "round 2 queued", func(t *wire.Task) bool { return len(t.Rounds) == 2 && t.Rounds[1].Enqueued })
	f.askRound(id, 2, schemas.NeedsInput{Question: "Ship it?", Options: []string{"yes", "no"}})
	waitFor(t, "round 2's question in the thread", func() bool {
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("blocks"), "Ship it?") {
				return c.Params.Get("thread_ts") == root
			}
		}
		return false
	})
	if _, err := f.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: id, Answer: "yes", By: "bob", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(id, "round 3 queued", func(t *wire.Task) bool { return len(t.Rounds) == 3 && t.Rounds[2].Enqueued })
	d := id + "-r3"
	f.publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: d})
	f.publish(schemas.Event{Kind: schemas.KindFinished, DispatchID: d})
	waitFor(t, "the outcome in the thread", func() bool {
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("text"), "is *finished*") && c.Params.Get("thread_ts") == root {
				return true
			}
		}
		return false
	})
}

// TestReminderAndEscalation: a reminder is posted in the thread before
// the step times out, and the hand-over to the next step after.
func TestReminderAndEscalation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops?remind=1500ms=2s,human", nil, ab())
	f.question(id)
	root := "1700000000.000002"
	inThread := func(want string) func() bool {
		return func() bool {
			for _, c := range f.fake.Calls("chat.postMessage") {
				if strings.Contains(c.Params.Get("text"), want) && c.Params.Get("thread_ts") == root {
					return true
				}
			}
			return false
		}
	}
	waitFor(t, "a reminder in the thread", inThread("Reminder: still waiting"))
	waitFor(t, "the escalation in the thread", inThread("passed on to `human`"))
	// The reminders stop at the hand-over: none after it.
	escalated := false
	for _, c := range f.fake.Calls("chat.postMessage") {
		text := c.Params.Get("text")
		escalated = escalated || strings.Contains(text, "passed on to `human`")
		if escalated && strings.Contains(text, "Reminder:") {
			t.Errorf("a reminder after the escalation: %q", text)
		}
	}
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if task.State != wire.StateNeedsInput || task.Rounds[0].Step != 1 {
		t.Errorf("task is %s at step %d, want needs_input at step 1 (human)", task.State, task.Rounds[0].Step)
	}
}

// TestRateLimitHonoured: a 429 is waited out (Retry-After) and the
// question still posted.
func TestRateLimitHonoured(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.RateLimit("chat.postMessage", 1)
	start := time.Now()
	f.ask("slack:#ops", nil, ab())
	f.fake.WaitCalls(t, "chat.postMessage", 2)
	if d := time.Since(start); d < time.Second {
		t.Errorf("posted %s after a 429 with Retry-After: 1, want at least 1s", d)
	}
	if n := len(f.fake.Calls("chat.postMessage")); n != 2 {
		t.Errorf("chat.postMessage called %d times, want 2 (the 429 and the retry)", n)
	}
}

// TestSocketMode: with Socket Mode the click comes over the WebSocket the
// bot opened (apps.connections.open), is acknowledged, and answers.
func TestSocketMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.SocketMode, c.AppToken, c.SigningSecret = true, "xapp-test", "" })
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	env := f.fake.SocketSend(t, slackfake.Click("U1", "alice", channel, q.TS, button(t, q, "B")))
	waitFor(t, "the envelope acknowledged", func() bool { return f.fake.Acked(env) })
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.By != "slack:U1 (alice)" || a.Channel != "slack" {
		t.Errorf("answer = %+v, want B by slack:U1 (alice) via slack", a)
	}
	f.updated(q.TS, "answered by *alice* (<@U1>)")
}

// TestAskedTwicePostsOnce: the step asked again for the same round (an
// orchestrator that stopped before recording the step as pending) does
// not post the question twice.
func TestAskedTwicePostsOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	f.question(id)
	a, err := f.bot.Step("#ops")
	if err != nil {
		t.Fatal(err)
	}
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	r := task.Rounds[0]
	_, err = a.Ask(t.Context(), answer.Question{TaskID: id, Round: 1, Question: r.Question.Question, Options: r.Question.Options})
	if !errors.Is(err, answer.ErrPending) {
		t.Errorf("Ask again = %v, want ErrPending", err)
	}
	if n := len(f.fake.Calls("chat.postMessage")); n != 1 {
		t.Errorf("chat.postMessage called %d times, want 1", n)
	}
}

// TestBadTargetRefusedAtSubmit: a slack step that cannot be read is
// refused when the task is submitted, not when its question comes.
func TestBadTargetRefusedAtSubmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct{ route, want string }{
		{"slack:ops", `route step 1 "slack:ops": answerer slack:ops: "ops": want #channel`},
		{"memory,slack:#ops?allow=alice", `allow: "alice" is not a Slack user`},
	}
	for _, tt := range tests {
		_, err := f.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: fmt.Sprintf("bad%d", seq.Add(1)), Route: tt.route,
			Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}})
		if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Submit route %q = %v; want ErrInvalidRequest saying %q", tt.route, err, tt.want)
		}
	}
}

// TestOldClicksForgotten: at start, handled clicks older than keepClicks
// are deleted; recent ones stay to recognise repeated deliveries.
func TestOldClicksForgotten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	put := func(key string, at time.Time) {
		if _, err := f.kv.Put(t.Context(), key, []byte(mustJSON(t, click{Payload: []byte(`{}`), At: at, Done: true}))); err != nil {
			t.Fatal(err)
		}
	}
	put("click.old", time.Now().Add(-keepClicks-time.Hour))
	put("click.recent", time.Now().Add(-time.Hour))
	if err := f.bot.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.bot = f.startBot()
	for key, want := range map[string]bool{"click.old": false, "click.recent": true} {
		_, _, err := f.kv.Get(t.Context(), key)
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v (%v), want %v", key, got, err, want)
		}
	}
}

// queued takes requests off the dispatch queue, as a runner does, until
// the one of dispatch comes.
func (f *fixture) queued(dispatch string) *schemas.DispatchRequest {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		d, err := f.bus.Fetch(f.t.Context(), time.Second)
		if err != nil {
			f.t.Fatalf("fetch from the queue: %v", err)
		}
		if d == nil {
			continue
		}
		if err := d.Ack(f.t.Context()); err != nil {
			f.t.Fatal(err)
		}
		if d.Request != nil && d.Request.Spec.DispatchID == dispatch {
			return d.Request
		}
	}
	f.t.Fatalf("no request for %s on the queue after 20s", dispatch)
	return nil
}

// TestDirectMessage: slack:@U9 posts to the user's id (a direct message
// from the app) and its thread is there.
func TestDirectMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:@U9", nil, ab())
	q := f.question(id)
	if got := q.Params.Get("channel"); got != "U9" {
		t.Errorf("chat.postMessage channel = %q, want U9", got)
	}
	f.post(slackfake.Click("U9", "dana", "DU9", q.TS, button(t, q, "A")), secret, time.Now())
	f.updated(q.TS, "answered by *dana* (<@U9>)")
}

// TestClosedElsewhere: a question that goes away unanswered (the task
// cancelled) or is answered by the route's default loses its buttons and
// says so.
func TestClosedElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cancelled := f.ask("slack:#ops", nil, ab())
	q1 := f.question(cancelled)
	if _, err := f.orch.Cancel(t.Context(), cancelled); err != nil {
		t.Fatal(err)
	}
	if up := f.updated(q1.TS, "no longer waiting: the task is cancelled"); len(up.Buttons()) != 0 {
		t.Errorf("the message of a cancelled task still has buttons: %+v", up.Buttons())
	}
	defaulted := f.ask("slack:#ops=1s", nil, ab())
	q2 := f.question(defaulted)
	f.updated(q2.TS, "*A* — answered by nobody (the route ended) from default")
}

// TestAlwaysAnswerThis: "Always answer this…" opens a modal (which the
// strict fake accepts as Slack would: select menus in input blocks, each
// initial option one of its options); its submission answers with the
// option chosen and makes a rule of the scope and expiry chosen, the user
// is told its id, and the next task's question like it is answered by
// the rule, named in its timeline, without a Slack message.
func TestAlwaysAnswerThis(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops", nil, ab())
	q := f.question(id)
	always := button(t, q, "Always answer this…")
	f.post(slackfake.Click("U1", "alice", channel, q.TS, always), secret, time.Now())
	views := f.fake.WaitCalls(t, "views.open", 1)
	if !views[0].OK() || !strings.Contains(views[0].Params.Get("view"), `"callback_id":"agora_always"`) {
		t.Fatalf("views.open = %+v, want the always modal accepted", views[0])
	}
	f.post(slackfake.ViewSubmission("U1", "alice", "agora_always", always.Value, map[string]map[string]any{
		"answer":  {"choice": slackfake.Selected("1", "2. B")},
		"scope":   {"scope": slackfake.Selected("subagent", "Questions like this from coder")},
		"expires": {"days": slackfake.Selected("7", "7 days")},
	}), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	a := task.Rounds[0].Answer
	if a.Value != "B" || a.By != "slack:U1 (alice)" || a.Via != Via || a.Remembered == "" {
		t.Fatalf("answer = %+v, want B by alice via the Slack app, remembered", a)
	}
	// The rule is stored just after the answer is accepted: a watcher of
	// the task may see the answer first.
	var rule *wire.Rule
	waitFor(t, "the rule stored", func() bool {
		var err error
		rule, err = f.orch.Rule(t.Context(), a.Remembered)
		return err == nil
	})
	if rule.By != "slack:U1 (alice)" || rule.Scope.Kind != wire.RuleScopeSubagent || rule.Scope.Subagent != "coder" ||
		rule.ExpiresAt.Sub(rule.CreatedAt) != 7*24*time.Hour {
		t.Errorf("rule = %+v, want alice's for coder, 7 days", rule)
	}
	f.ephemeral("U1", "Remembered as rule `"+a.Remembered+"`")

	posted := len(f.fake.Calls("chat.postMessage"))
	next := fmt.Sprintf("s%d", seq.Add(1))
	if _, err := f.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: next, Route: "slack:#ops",
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	qq := ab()
	f.publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: next + "-r1"})
	f.publish(schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: next + "-r1", NeedsInput: &qq})
	task = f.waitTask(next, "answered by the rule", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.Channel != orchestrator.RuleChannel || a.Rule == nil || a.Rule.ID != rule.ID || a.Rule.By != "slack:U1 (alice)" {
		t.Errorf("the next task's answer = %+v, want B by rule %s made by alice", a, rule.ID)
	}
	for _, c := range f.fake.Calls("chat.postMessage")[posted:] {
		if strings.Contains(c.Params.Get("blocks"), "Rewrite A or B?") {
			t.Errorf("the question the rule answered was posted to Slack: %s", c.Params.Get("blocks"))
		}
	}
}
