package slackanswer

import (
	"net/http"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestAnsweredByName: the answering person's name is looked up with
// users.info (the profile's display name first), recorded in the answer
// and shown in the "answered by" stamp; a second answer by the same person
// is served from the cache; a user users.info cannot find keeps the name
// the click carried.
func TestAnsweredByName(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.SetUser(slackfake.User{ID: "U1", Name: "alice", RealName: "Alice Liddell", DisplayName: "Ali"})
	f.fake.SetUser(slackfake.User{ID: "U2", Name: "bob", RealName: "Bob Builder"})
	tests := []struct {
		user, payloadName, wantBy, wantStamp string
	}{
		{"U1", "alice", "slack:U1 (Ali)", "answered by *Ali* (<@U1>) from slack"},
		{"U1", "alice", "slack:U1 (Ali)", "answered by *Ali* (<@U1>) from slack"}, // cached
		{"U2", "bob", "slack:U2 (Bob Builder)", "answered by *Bob Builder* (<@U2>) from slack"},
		{"U3", "carol", "slack:U3 (carol)", "answered by *carol* (<@U3>) from slack"}, // users.info: user_not_found
	}
	for _, tt := range tests {
		id := f.ask("slack:#ops", nil, ab())
		q := f.question(id)
		if code := f.post(slackfake.Click(tt.user, tt.payloadName, channel, q.TS, button(t, q, "A")), secret, time.Now()); code != http.StatusOK {
			t.Fatalf("click: status %d", code)
		}
		task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
		if got := task.Rounds[0].Answer.By; got != tt.wantBy {
			t.Errorf("click by %s: answer by %q, want %q", tt.user, got, tt.wantBy)
		}
		f.updated(q.TS, tt.wantStamp)
	}
	perUser := map[string]int{}
	for _, c := range f.fake.Calls("users.info") {
		perUser[c.Params.Get("user")]++
	}
	if perUser["U1"] != 1 || perUser["U2"] != 1 || perUser["U3"] != 1 {
		t.Errorf("users.info calls per user = %v, want one each (cached)", perUser)
	}
}

// TestRateLimitOnEveryCall: a 429 is waited out for its Retry-After, then
// retried, on every Slack call the bot makes: chat.postMessage (the
// question), usergroups.users.list and chat.postEphemeral (an unauthorised
// click), views.open ("Other…"), users.info and chat.update (the answer),
// auth.test (a bot's start).
func TestRateLimitOnEveryCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddGroup("S1", "U3")
	f.fake.AddUser("U3", "carol")
	limits := map[string]int{ // Retry-After, seconds
		"chat.postMessage": 1, "usergroups.users.list": 1, "chat.postEphemeral": 1,
		"views.open": 1, "users.info": 1, "chat.update": 2,
	}
	for method, after := range limits {
		f.fake.RateLimitFor(method, 1, after)
	}
	id := f.ask("slack:#ops?allow=S1", nil, schemas.NeedsInput{Question: "Which database?"})
	q := f.question(id)
	other := button(t, q, "Other…")
	f.post(slackfake.Click("U1", "mallory", channel, q.TS, other), secret, time.Now())
	f.ephemeral("U1", "You may not answer this question")
	f.post(slackfake.Click("U3", "carol", channel, q.TS, other), secret, time.Now())
	f.fake.WaitCalls(t, "views.open", 2)
	f.post(slackfake.Submission("U3", "carol", other.Value, "postgres"), secret, time.Now())
	task := f.waitTask(id, "answered", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "postgres" || a.By != "slack:U3 (carol)" {
		t.Errorf("answer = %+v, want postgres by slack:U3 (carol)", a)
	}
	f.updated(q.TS, "answered by *carol* (<@U3>)")
	for method, after := range limits {
		calls := f.fake.Calls(method)
		if len(calls) < 2 || calls[0].Status != http.StatusTooManyRequests || calls[1].Status != http.StatusOK {
			t.Errorf("%s: %d calls, want a 429 then a success", method, len(calls))
			continue
		}
		if gap, want := calls[1].At.Sub(calls[0].At), time.Duration(after)*time.Second; gap < want {
			t.Errorf("%s retried %s after a 429 with Retry-After: %d, want at least %s", method, gap, after, want)
		}
	}
	// auth.test, at a bot's start.
	f.fake.RateLimitFor("auth.test", 1, 1)
	start := time.Now()
	f.startBot()
	if d := time.Since(start); d < time.Second {
		t.Errorf("a bot started %s after auth.test got a 429 with Retry-After: 1, want at least 1s", d)
	}
}
