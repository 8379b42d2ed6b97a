package slackanswer

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestReminderSchedule: the reminder slots are counted back from the
// deadline by the interval, after the message was posted, at most
// maxReminders; the latest slot due is posted once; missed slots are not
// caught up.
func TestReminderSchedule(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	deadline := at(time.Hour)
	tests := []struct {
		name     string
		every    time.Duration
		last     time.Time
		now      time.Time
		wantSlot time.Time // zero: none due
		wantLeft int
	}{
		{name: "before the first slot", every: 10 * time.Minute, now: at(9 * time.Minute)},
		{name: "first slot", every: 10 * time.Minute, now: at(10 * time.Minute), wantSlot: at(10 * time.Minute), wantLeft: 4},
		{name: "first slot already posted", every: 10 * time.Minute, last: at(10 * time.Minute), now: at(19 * time.Minute)},
		{name: "second slot", every: 10 * time.Minute, last: at(10 * time.Minute), now: at(21 * time.Minute), wantSlot: at(20 * time.Minute), wantLeft: 3},
		{name: "slots missed while down: only the latest", every: 10 * time.Minute, last: at(10 * time.Minute), now: at(45 * time.Minute), wantSlot: at(40 * time.Minute), wantLeft: 1},
		{name: "the last one, an interval before the deadline", every: 10 * time.Minute, last: at(40 * time.Minute), now: at(50 * time.Minute), wantSlot: at(50 * time.Minute), wantLeft: 0},
		{name: "at the deadline: escalation, no reminder", every: 10 * time.Minute, last: at(40 * time.Minute), now: deadline},
		{name: "interval not dividing the timeout", every: 25 * time.Minute, now: at(12 * time.Minute), wantSlot: at(10 * time.Minute), wantLeft: 1},
		{name: "interval as long as the timeout: none", every: time.Hour, now: at(30 * time.Minute)},
		{name: "as before: remind=15m, one 15m before", every: 15 * time.Minute, last: at(30 * time.Minute), now: at(46 * time.Minute), wantSlot: at(45 * time.Minute), wantLeft: 0},
		{name: "too many slots: only the last maxReminders", every: time.Minute, now: at(30 * time.Minute)},
		{name: "too many slots: within the last maxReminders", every: time.Minute, now: at(36 * time.Minute), wantSlot: at(36 * time.Minute), wantLeft: 23},
	}
	for _, tt := range tests {
		slot, left, ok := reminderDue(t0, deadline, tt.every, tt.last, tt.now)
		if ok != !tt.wantSlot.IsZero() || !slot.Equal(tt.wantSlot) || left != tt.wantLeft {
			t.Errorf("%s: reminderDue(every %s, last %s, now %s) = %s, %d left, %v; want %s, %d left", tt.name, tt.every,
				tt.last.Sub(t0), tt.now.Sub(t0), slot.Sub(t0), left, ok, tt.wantSlot.Sub(t0), tt.wantLeft)
		}
	}
}

// TestRemindersRepeatAndSurviveRestart: with remind=10m on a 1h step,
// reminders come every 10 minutes in the task's thread (one for the
// latest slot when several were missed), none twice across a restart of
// the bot, the last one saying so, and none once the question is
// answered. The bot's clock is moved; the step's timeout is real.
func TestRemindersRepeatAndSurviveRestart(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	f := newFixture(t, func(c *Config) { c.Now, c.Tick = clock, time.Hour }) // reminders only when the test says
	route := "slack:#ops?remind=10m=1h,human"
	answered := f.ask(route, nil, ab())
	qa := f.question(answered)
	waiting := f.ask(route, nil, schemas.NeedsInput{Question: "Which database?"})
	qw := f.question(waiting)
	if b := qa.Params.Get("blocks"); !strings.Contains(b, "Reminders in the thread every 10m until answered or someone is on it.") {
		t.Errorf("the question does not say how often it reminds: %s", b)
	}
	reminders := func(root string) []string {
		var out []string
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("text"), "Reminder: still waiting") && c.Params.Get("thread_ts") == root {
				out = append(out, c.Params.Get("text"))
			}
		}
		return out
	}
	at := func(d time.Duration) {
		t.Helper()
		offset.Store(int64(d))
		f.bot.remindDue(t.Context())
	}
	check := func(when string, wantAnswered, wantWaiting int) {
		t.Helper()
		if got := len(reminders(qa.TS)); got != wantAnswered {
			t.Errorf("%s: %d reminders in the thread of %s, want %d", when, got, answered, wantAnswered)
		}
		if got := len(reminders(qw.TS)); got != wantWaiting {
			t.Errorf("%s: %d reminders in the thread of %s, want %d", when, got, waiting, wantWaiting)
		}
	}
	at(5 * time.Minute)
	check("after 5m", 0, 0)
	at(12 * time.Minute)
	at(13 * time.Minute)
	check("after 12m and 13m", 1, 1)

	if err := f.bot.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.bot = f.startBot()
	at(15 * time.Minute)
	check("after a restart at 15m", 1, 1)

	at(35 * time.Minute) // the 20m slot was missed: one reminder, for 30m
	check("after 35m", 2, 2)
	if _, err := f.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: answered, Answer: "B", By: "bob", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	f.updated(qa.TS, "answered by bob from cli")
	at(51 * time.Minute)
	check("after the answer and 51m", 2, 3)
	if r := reminders(qw.TS); !strings.HasSuffix(r[len(r)-1], "This is the last reminder here.") {
		t.Errorf("the reminder 10m before the timeout = %q, want it to say it is the last", r[len(r)-1])
	}
	for _, r := range reminders(qw.TS) {
		if !strings.Contains(r, "it goes to `human`") {
			t.Errorf("reminder %q does not say where the question goes next", r)
		}
	}
	var m message
	if ok, err := f.bot.load(t.Context(), msgKey(msgOf(t, f, waiting)), &m); err != nil || !ok {
		t.Fatalf("message of %s: %v %v", waiting, ok, err)
	}
	if m.Reminders != 3 || m.RemindEvery != 10*time.Minute {
		t.Errorf("message record: %d reminders every %s, want 3 every 10m", m.Reminders, m.RemindEvery)
	}
}

// msgOf is the id of the open message asking task id.
func msgOf(t *testing.T, f *fixture, id string) string {
	t.Helper()
	f.bot.mu.Lock()
	defer f.bot.mu.Unlock()
	ids := f.bot.byTask[id]
	if len(ids) == 0 {
		t.Fatalf("no open message of %s", id)
	}
	return ids[0]
}

// TestOldReminderRecordHonoured: a message recorded before reminders
// repeated (remind_at, no remind_every) gets its one reminder, once.
func TestOldReminderRecordHonoured(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *Config) { c.Tick = time.Hour })
	id := f.ask("slack:#ops=1h", nil, ab())
	q := f.question(id)
	var m message
	key := msgKey(msgOf(t, f, id))
	if _, err := f.bot.load(t.Context(), key, &m); err != nil {
		t.Fatal(err)
	}
	m.RemindEvery, m.Posted, m.RemindAt = 0, time.Time{}, time.Now().Add(-time.Second)
	if err := f.bot.save(t.Context(), key, &m); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.bot.remindDue(t.Context())
	}
	n := 0
	for _, c := range f.fake.Calls("chat.postMessage") {
		if strings.Contains(c.Params.Get("text"), "Reminder: still waiting") && c.Params.Get("thread_ts") == q.TS {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d reminders for an old-format record, want 1", n)
	}
}

// TestEscalationAfterRestart: a step that timed out while no bot was
// running is announced in the thread by the next bot, once.
func TestEscalationAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops=1s,human", nil, ab())
	q := f.question(id)
	if err := f.bot.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.waitTask(id, "passed on to human", func(t *wire.Task) bool { return t.Rounds[0].Step == 1 })
	escalations := func() int {
		n := 0
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("text"), "passed on to `human`") && c.Params.Get("thread_ts") == q.TS {
				n++
			}
		}
		return n
	}
	if n := escalations(); n != 0 {
		t.Fatalf("%d escalation notices while no bot ran", n)
	}
	f.bot = f.startBot()
	waitFor(t, "the escalation announced by the next bot", func() bool { return escalations() > 0 })
	// One more restart: Stop waits for the start's catching up.
	if err := f.bot.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.bot = f.startBot()
	if err := f.bot.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := escalations(); n != 1 {
		t.Errorf("%d escalation notices after two restarts, want 1", n)
	}
}

// TestDefaultReminders: without remind=, the reminders come at a quarter,
// half and three quarters of the step's timeout, whatever its length.
func TestDefaultReminders(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, timeout := range []time.Duration{24 * time.Hour, 24*time.Hour + 3, time.Hour + 1, 7 * time.Second} {
		deadline := t0.Add(timeout)
		every := remindEvery(Target{}, t0, deadline)
		var slots []time.Duration
		last := time.Time{}
		for now := t0; now.Before(deadline); now = now.Add(timeout / 100) {
			if slot, _, ok := reminderDue(t0, deadline, every, last, now); ok {
				slots, last = append(slots, slot.Sub(t0)), slot
			}
		}
		want := []time.Duration{timeout / 4, timeout / 2, timeout * 3 / 4}
		near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Millisecond }
		if len(slots) != 3 || !near(slots[0], want[0]) || !near(slots[1], want[1]) || !near(slots[2], want[2]) {
			t.Errorf("timeout %s: reminders at %v, want %v", timeout, slots, want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 6*time.Hour + 5*time.Second: "6h0m5s"} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestAcknowledgeStopsReminders: "On it" by someone allowed to answer
// stops the reminders and says who is on it; by someone else it is
// refused; the question stays open and is answered as before.
func TestAcknowledgeStopsReminders(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	f := newFixture(t, func(c *Config) { c.Now, c.Tick = clock, time.Hour })
	f.fake.SetUser(slackfake.User{ID: "U2", Name: "bob", DisplayName: "Bob"})
	id := f.ask("slack:#ops?allow=U2&remind=10m=1h,human", nil, ab())
	q := f.question(id)
	reminders := func() int {
		n := 0
		for _, c := range f.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("text"), "Reminder: still waiting") && c.Params.Get("thread_ts") == q.TS {
				n++
			}
		}
		return n
	}
	offset.Store(int64(12 * time.Minute))
	f.bot.remindDue(t.Context())
	if n := reminders(); n != 1 {
		t.Fatalf("%d reminders after 12m, want 1", n)
	}
	onIt := button(t, q, "On it")
	f.post(slackfake.Click("U1", "mallory", channel, q.TS, onIt), secret, time.Now())
	f.ephemeral("U1", "You may not take this question: only <@U2> may")
	f.post(slackfake.Click("U2", "bob", channel, q.TS, onIt), secret, time.Now())
	up := f.updated(q.TS, "*Bob* (<@U2>) is on it")
	for _, b := range up.Buttons() {
		if b.Text == "On it" {
			t.Errorf("the acknowledged message still offers %q", b.Text)
		}
	}
	if len(up.Buttons()) != 3 {
		t.Errorf("the acknowledged message has buttons %+v, want A, B and Always answer this…", up.Buttons())
	}
	offset.Store(int64(25 * time.Minute))
	f.bot.remindDue(t.Context())
	offset.Store(int64(55 * time.Minute))
	f.bot.remindDue(t.Context())
	if n := reminders(); n != 1 {
		t.Errorf("%d reminders after the acknowledgement, want still 1", n)
	}
	f.post(slackfake.Click("U2", "bob", channel, q.TS, button(t, q, "B")), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.By != "slack:U2 (Bob)" {
		t.Errorf("answer = %+v, want B by slack:U2 (Bob)", a)
	}
}

// TestTwoBotsRemindOnce: two bots on one bucket (two orchestrators behind
// a load balancer) post each reminder once: the slot is claimed with a
// compare-and-swap before it is posted.
func TestTwoBotsRemindOnce(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	f := newFixture(t, func(c *Config) { c.Now, c.Tick = clock, time.Hour })
	id := f.ask("slack:#ops?remind=10m=1h,human", nil, ab())
	q := f.question(id)
	other := f.startBot() // indexes the open message at its start
	for _, at := range []time.Duration{12 * time.Minute, 13 * time.Minute, 22 * time.Minute} {
		offset.Store(int64(at))
		done := make(chan struct{})
		go func() { defer close(done); other.remindDue(t.Context()) }()
		f.bot.remindDue(t.Context())
		<-done
	}
	n := 0
	for _, c := range f.fake.Calls("chat.postMessage") {
		if strings.Contains(c.Params.Get("text"), "Reminder: still waiting") && c.Params.Get("thread_ts") == q.TS {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d reminders from two bots by 22m, want 2 (10m and 20m)", n)
	}
}
