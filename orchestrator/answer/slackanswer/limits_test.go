package slackanswer

// Questions that break Slack's limits when posted as they are — a long
// option, many options, a long question — reach the channel whole and
// within the limits the strict fake enforces (every test's fixture fails
// on a refused call); a post Slack refuses anyway is never silent.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// option97 is an option of 97 characters (the one Slack refused as a
// button's text, limited to 75).
var option97 = strings.Repeat("Rewrite the parser ", 5)[:95] + "ok"

// readable is what a person reads of mrkdwn: the markup and the cut marks
// gone, Slack's escaping undone, the spacing of cuts ignored.
func readable(s string) string {
	s = unescape(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\n' || r == '*' || r == '…' || r == '_'
	}), "")
}

// inThread returns the texts of the bot's posts in the thread root.
func (f *fixture) inThread(root string) string {
	var b strings.Builder
	for _, c := range f.fake.Calls("chat.postMessage") {
		if c.OK() && c.Params.Get("thread_ts") == root {
			b.WriteString(strings.Join(c.Texts(), "\n") + "\n" + c.Params.Get("text") + "\n")
		}
	}
	return b.String()
}

// checkWithin fails on any text of call over Slack's limits (the fake
// would have refused it; this names the text).
func checkWithin(t *testing.T, c slackfake.Call) {
	t.Helper()
	for _, s := range c.Texts() {
		if n := utf8.RuneCountInString(s); n > slackfake.MaxText || !utf8.ValidString(s) {
			t.Errorf("a text of %d characters (valid UTF-8: %v), over %d", n, utf8.ValidString(s), slackfake.MaxText)
		}
	}
	for _, b := range c.Buttons() {
		if n := utf8.RuneCountInString(b.Text); n > slackfake.MaxButtonText {
			t.Errorf("button %q: %d characters, over %d", b.Text, n, slackfake.MaxButtonText)
		}
	}
}

// TestLongOptionReachesChannel: an option of 97 characters gets a button
// cut to at most 75 characters with "…", the message lists every option
// whole (numbered), and a click on the cut button answers with the whole
// option — the button's value names the option's index, not its label.
func TestLongOptionReachesChannel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	def := "B"
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which change?", Options: []string{option97, "B"}, Default: &def})
	q := f.question(id)
	checkWithin(t, q)
	body := strings.Join(q.Texts(), "\n")
	if !strings.Contains(body, "1. "+option97) || !strings.Contains(body, "2. B _(default)_") {
		t.Errorf("the message does not list the options whole: %s", body)
	}
	var cut slackfake.Button
	for _, b := range q.Buttons() {
		if strings.HasPrefix(b.Text, "1. ") {
			cut = b
		}
	}
	if !strings.HasSuffix(cut.Text, "…") || !strings.HasPrefix(option97, strings.TrimSuffix(strings.TrimPrefix(cut.Text, "1. "), "…")) {
		t.Errorf("the long option's button = %q, want its beginning cut with …", cut.Text)
	}
	f.post(slackfake.Click("U1", "alice", channel, q.TS, cut), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if got := task.Rounds[0].Answer.Value; got != option97 {
		t.Errorf("answer = %q, want the whole option %q", got, option97)
	}
}

// TestManyOptionsMenu: 30 options are a menu (static_select) of all 30,
// listed whole and numbered in the message; choosing one in the menu
// answers with it.
func TestManyOptionsMenu(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var opts []string
	for i := range 30 {
		opts = append(opts, fmt.Sprintf("candidate %02d: %s", i+1, strings.Repeat("é", 70+i)))
	}
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which candidate?", Options: opts})
	q := f.question(id)
	checkWithin(t, q)
	sels := q.Selects()
	if len(sels) != 1 || len(sels[0].Options) != 30 {
		t.Fatalf("menus = %+v, want one of 30 options", sels)
	}
	if b := q.Buttons(); len(b) != 2 || b[0].Text != "Always answer this…" || b[1].Text != "On it" {
		t.Errorf("buttons = %+v, want only Always answer this… and On it beside the menu", b)
	}
	body := strings.Join(q.Texts(), "\n")
	for i, o := range opts {
		if !strings.Contains(body, fmt.Sprintf("%d. %s", i+1, o)) {
			t.Errorf("option %d is not in the message whole", i+1)
		}
	}
	pick := sels[0].Options[16]
	if !strings.HasPrefix(pick.Text, "17. candidate 17") {
		t.Errorf("menu option 17 reads %q", pick.Text)
	}
	f.post(slackfake.Choose("U1", "alice", channel, q.TS, sels[0], pick.Value), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if got := task.Rounds[0].Answer.Value; got != opts[16] {
		t.Errorf("answer = %q, want %q", got, opts[16])
	}
	f.updated(q.TS, "answered by *alice*")
}

// TestTooManyOptionsForMenu: more options than a menu holds (150) are
// listed, numbered, and a reply in the thread with a number answers.
func TestTooManyOptionsForMenu(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var opts []string
	for i := range 150 {
		opts = append(opts, fmt.Sprintf("region-%03d", i+1))
	}
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: "Which region?", Options: opts})
	q := f.threadQuestion(id)
	checkWithin(t, q)
	if len(q.Selects()) != 0 {
		t.Errorf("a menu of 150 options: Slack holds 100")
	}
	body := strings.Join(q.Texts(), "\n")
	if !strings.Contains(body, "150. region-150") || !strings.Contains(body, "reply in the thread with an option's number") {
		t.Errorf("the message lacks the whole list or how to answer: %s", body)
	}
	// Once someone is on it the message has no element left to click:
	// still a message Slack takes.
	f.post(slackfake.Click("U2", "bob", channel, q.TS, button(t, q, "On it")), secret, time.Now())
	f.updated(q.TS, "is on it")
	f.event(slackfake.ThreadReply("Ev1", "U1", channelIDOf(q), q.TS, "#120"), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if got := task.Rounds[0].Answer.Value; got != "region-120" {
		t.Errorf("answer = %q, want region-120", got)
	}
}

// TestLongQuestionWhole: a 5,000-character question (multi-byte
// characters, bold markup across the place a cut would fall, an entity)
// is cut readably in the message — within 3000 characters, valid UTF-8,
// no bold left open, no entity split — and is whole in the thread, with a
// link to the task's page.
func TestLongQuestionWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b strings.Builder
	for utf8.RuneCountInString(b.String()) < 2700 {
		b.WriteString("Le café — 日本語 & more; ")
	}
	b.WriteString("*this part is bold and runs across the cut of the message, " + strings.Repeat("ü", 200) + "* ")
	for utf8.RuneCountInString(b.String()) < 5000 {
		b.WriteString("then more prose, naïve and long. ")
	}
	question := string([]rune(b.String())[:5000])
	id := f.ask("slack:#ops", nil, schemas.NeedsInput{Question: question, Options: []string{"yes", "no"}})
	q := f.question(id)
	checkWithin(t, q)
	first := q.Texts()[0]
	if strings.Count(first, "*")%2 != 0 || !strings.HasSuffix(first, "…*") {
		t.Errorf("the question's section leaves bold open or does not end cut: …%s", first[len(first)-80:])
	}
	if strings.Contains(first, "this part is bold") {
		t.Errorf("the cut falls inside the bold part and keeps it: bold would be left open or cut mid-span")
	}
	if n := utf8.RuneCountInString(first); n < 2000 {
		t.Errorf("the question's section holds %d characters: cut too early", n)
	}
	if i := strings.LastIndexByte(first, '&'); i >= 0 && !strings.HasPrefix(first[i:], "&amp;") {
		t.Errorf("an entity is split: …%s", first[i:])
	}
	if !strings.Contains(strings.Join(q.Texts(), "\n"), "The whole question is in the thread and on <https://agora.example.com/tasks/"+id+"|the task's page>") {
		t.Errorf("the message does not say where the whole question is: %q", q.Texts())
	}
	waitFor(t, "the whole question in the thread", func() bool {
		return strings.Contains(readable(f.inThread(q.TS)), readable(escape(question)))
	})
}

// TestRefusedPostNeverSilent: when Slack refuses the question (here
// forced, in Slack's own shape), serve's log has a WARN with the task,
// the step and Slack's error and messages; the route step's failure says
// why in plain words; the task's attention says so with the command that
// answers it; and with no step left it expires saying why.
func TestRefusedPostNeverSilent(t *testing.T) {
	t.Parallel()
	var logs testutil.Buffer
	f := newFixture(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	f.refusals = true
	const why = "must be less than 76 characters [json-pointer:/blocks/3/elements/0/text/text]"
	f.fake.Refuse("chat.postMessage", 2, "invalid_blocks", why)
	id := f.ask("slack:#ops,human", nil, ab())
	task := f.waitTask(id, "the slack step failed", func(t *wire.Task) bool { return len(t.Rounds[0].Decisions) > 0 })
	want := "Slack refused the question (invalid_blocks: " + why + ")"
	if d := task.Rounds[0].Decisions[0]; d.Step != "slack:#ops" || d.Result != "error" || d.Detail != want {
		t.Errorf("decision = %+v, want slack:#ops error %q", d, want)
	}
	task = f.waitTask(id, "waiting at the next step", func(t *wire.Task) bool { return t.Rounds[0].Step == 1 })
	a := task.Attention
	if wantSum := "route step slack:#ops failed: " + want + "; answer with: agora answer " + id + " A"; !a.Required || !strings.Contains(a.Summary, wantSum) {
		t.Errorf("attention = %+v, want required, saying %q", a, wantSum)
	}
	waitFor(t, "the WARN line", func() bool { return strings.Contains(logs.String(), "level=WARN msg=\"slack refused the question\"") })
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "slack refused the question") {
			line = l
		}
	}
	for _, w := range []string{"task_id=" + id, "step=slack:#ops", "slack_error=invalid_blocks", why} {
		if !strings.Contains(line, w) {
			t.Errorf("the WARN line lacks %q: %s", w, line)
		}
	}
	// The route's only step refused, no default: expired, saying why.
	id2 := fmt.Sprintf("s%d", seq.Add(1))
	if _, err := f.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: id2, Route: "slack:#ops",
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	f.publish(schemas.Event{Kind: schemas.KindStarted, DispatchID: id2 + "-r1"})
	f.publish(schemas.Event{Kind: schemas.KindNeedsInput, DispatchID: id2 + "-r1", NeedsInput: &schemas.NeedsInput{Question: "Go?", Options: []string{"yes", "no"}}})
	task = f.waitTask(id2, "expired", func(t *wire.Task) bool { return t.State == wire.StateExpired })
	if !strings.Contains(task.Outcome.Detail, "route step slack:#ops failed: "+want) {
		t.Errorf("outcome = %q, want it to say why", task.Outcome.Detail)
	}
}

// TestConsequenceLine: the question says what happens if nobody answers
// and when (the round's IfUnanswered), and the message is rewritten when
// that changes: at the hand-over to the next step, the default.
func TestConsequenceLine(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask("slack:#ops=2s,human", nil, ab())
	q := f.question(id)
	if body := q.Params.Get("blocks"); !strings.Contains(body, "If nobody answers: at ") || !strings.Contains(body, "it goes to `human`") {
		t.Errorf("the question lacks its consequence: %s", body)
	}
	up := f.updated(q.TS, "the default `A` is taken")
	if len(up.Buttons()) == 0 {
		t.Errorf("the question lost its buttons at the hand-over")
	}
	task, err := f.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	iu := task.Rounds[0].IfUnanswered
	if want := "If nobody answers: at " + stamp(iu.At) + " the default `A` is taken."; !strings.Contains(up.Params.Get("blocks"), want) {
		t.Errorf("the message does not show the round's IfUnanswered %+v as %q", iu, want)
	}
}

// TestOutcomeCarriesResult: the outcome message carries the first lines
// of the task's result (a string as its text, anything else as JSON), says
// where to read the whole when it goes on, and stays within Slack's
// limits (posted to the strict fake).
func TestOutcomeCarriesResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := strings.Repeat("line of the report\n", 40)
	tests := []struct {
		name        string
		result      string // JSON
		ref         *schemas.ObjectRef
		want, wantN []string
	}{
		{"string", `"All 12 tests pass.\nPR #7 is ready."`, nil, []string{"Result:\n```\nAll 12 tests pass.\nPR #7 is ready.\n```"}, []string{"goes on"}},
		{"object", `{"pr":7,"files":["a.go","b&c.go"]}`, nil, []string{"\"pr\": 7", "b&amp;c.go"}, []string{"goes on"}},
		{"long", mustJSON(t, long), nil, []string{"line of the report\nline", "The result goes on: read it whole with `agora result s-x` or on <https://agora.example.com/tasks/s-x|the task's page>"}, nil},
		{"spilled", "", &schemas.ObjectRef{URI: "file:///r", SHA256: "ab", Size: 5 << 20}, []string{"Result: 5242880 bytes, too large to show here: read it with `agora result s-x`"}, nil},
		{"none", "", nil, []string{"Task `s-x` is *finished*: round 1 finished · <https://agora.example.com/tasks/s-x|open>"}, []string{"Result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &wire.Task{ID: "s-x", State: wire.StateFinished, Outcome: &wire.Outcome{Reason: "finished", Detail: "round 1 finished"},
				Result: json.RawMessage(tt.result), ResultRef: tt.ref}
			text := f.bot.outcomeText(task)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("outcome lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.wantN {
				if strings.Contains(text, w) {
					t.Errorf("outcome has %q:\n%s", w, text)
				}
			}
			if strings.Count(text, "\n") > resultLines+4 {
				t.Errorf("outcome has %d lines, want the result's first %d", strings.Count(text, "\n"), resultLines)
			}
			f.bot.reply(t.Context(), channel, "1700000000.000001", text)
		})
	}
}
