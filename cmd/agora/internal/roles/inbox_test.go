package roles

// The web inbox and the Slack app end to end, on the whole stack as agora
// serve runs it: real Docker, embedded NATS, the real worker, the Slack
// Web API fake on loopback (Slack cannot be reached from here) and, for
// the browser test, Debian's headless Chromium driven by chromedp.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer/slackfake"
	"github.com/agoradev/agora/wire"
)

const (
	inboxSecret = "wonderland"
	slackSign   = "slack-signing"
)

// slackStack is the whole stack with Slack configured, the fake it talks
// to, and a client with alice's token.
type slackStack struct {
	t    *testing.T
	s    *Stack
	fake *slackfake.Server
	c    *client.Client
}

func startSlackStack(t *testing.T) *slackStack {
	t.Helper()
	testenv.NeedDocker(t, workerImage, dockerErr)
	fake := slackfake.New(t)
	fake.AddUser("U1", "carol")
	// The public URL is the stack's own: Slack messages link to its pages.
	addr := freeAddr(t)
	s := start(t, Config{DataDir: t.TempDir(), Listen: addr, Tokens: []string{"alice:" + inboxSecret + ":answerer"},
		Orchestrator: true, Runner: true, Slots: 2, Image: workerImage, Logger: natstest.Logger(t),
		Slack: &slackanswer.Config{Token: "xoxb-test", SigningSecret: slackSign, APIURL: fake.URL(), PublicURL: "http://" + addr}})
	return &slackStack{t: t, s: s, fake: fake, c: client.New(s.URL(), inboxSecret)}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string { return testutil.FreeAddr(t) }

// submit starts a task of the asker on route and waits for its question.
func (ss *slackStack) submit(id, route string) {
	ss.t.Helper()
	if _, err := ss.c.Submit(ss.t.Context(), wire.SubmitRequest{TaskID: id, Subagent: subagent("painter", asker), Route: route}); err != nil {
		ss.t.Fatalf("submit %s: %v", id, err)
	}
	wait(ss.t, ss.c, id, wire.StateNeedsInput)
}

// message is the Slack message that asked task id's question.
func (ss *slackStack) message(id string) slackfake.Call {
	ss.t.Helper()
	var call slackfake.Call
	testutil.Eventually(ss.t, 30*time.Second, "the question of "+id+" posted to Slack", func() bool {
		for _, c := range ss.fake.Calls("chat.postMessage") {
			if strings.Contains(c.Params.Get("blocks"), id) && len(c.Buttons()) > 0 {
				call = c
				return true
			}
		}
		return false
	})
	return call
}

// click presses the option button of msg as Slack user U1, signed.
func (ss *slackStack) click(msg slackfake.Call, option string) {
	ss.t.Helper()
	for _, b := range msg.Buttons() {
		if strings.TrimSuffix(b.Text, " (default)") != option {
			continue
		}
		r := slackfake.Interaction(ss.s.URL()+SlackPath, slackSign, time.Now(), slackfake.Click("U1", "carol", slackfake.ChannelID("#ops"), msg.TS, b))
		r.RequestURI = ""
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			ss.t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			ss.t.Fatalf("signed click: %d", resp.StatusCode)
		}
		return
	}
	ss.t.Fatalf("no button %q in %+v", option, msg.Buttons())
}

// updated waits for Slack's copy of msg to be updated saying want.
func (ss *slackStack) updated(msg slackfake.Call, want string) {
	ss.t.Helper()
	testutil.Eventually(ss.t, 30*time.Second, fmt.Sprintf("chat.update of %s saying %q", msg.TS, want), func() bool {
		for _, c := range ss.fake.Calls("chat.update") {
			if c.Params.Get("ts") == msg.TS && strings.Contains(c.Params.Get("blocks"), want) {
				return len(c.Buttons()) == 0
			}
		}
		return false
	})
}

// finished waits for task id to finish and checks its output.
func (ss *slackStack) finished(id, want string) *wire.Task {
	ss.t.Helper()
	var task *wire.Task
	testutil.Eventually(ss.t, 2*time.Minute, "task "+id+" finished", func() bool {
		var err error
		task, err = ss.c.Get(ss.t.Context(), id)
		if err == nil && task.State.Terminal() && task.State != wire.StateFinished {
			ss.t.Fatalf("task %s ended %s: %+v", id, task.State, task.Outcome)
		}
		return err == nil && task.State == wire.StateFinished
	})
	var out strings.Builder
	if err := ss.c.Logs(ss.t.Context(), id, 0, false, &out); err != nil {
		ss.t.Fatalf("logs of %s: %v", id, err)
	}
	if !strings.Contains(out.String(), want) {
		ss.t.Errorf("task %s printed %q, want %q", id, out.String(), want)
	}
	return task
}

// TestSlackAndWebEndToEnd: a question goes to the Slack fake as buttons, a
// signed click answers it, the sub-agent resumes with that answer and
// finishes, and the Slack message says who answered; another task's
// question answered on the web page (signed in, a plain form post, as
// without JavaScript) resumes it and updates its Slack message too.
func TestSlackAndWebEndToEnd(t *testing.T) {
	ss := startSlackStack(t)

	ss.submit("sw-slack", "slack:#ops")
	msg := ss.message("sw-slack")
	if blocks := msg.Params.Get("blocks"); !strings.Contains(blocks, ss.s.URL()+"/tasks/sw-slack") &&
		!strings.Contains(blocks, "/tasks/sw-slack") {
		t.Errorf("the Slack message does not link to the task's page: %s", blocks)
	}
	ss.click(msg, "green")
	task := ss.finished("sw-slack", "painted green")
	if a := task.Rounds[0].Answer; a == nil || a.Value != "green" || a.Channel != "slack" || !strings.Contains(a.By, "U1") {
		t.Errorf("answer = %+v, want green from slack by U1", a)
	}
	ss.updated(msg, "answered by *carol* (<@U1>)")

	ss.submit("sw-web", "slack:#ops")
	msg = ss.message("sw-web")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	form := func(path string, v url.Values) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ss.s.URL()+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", ss.s.URL())
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d: %s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	inbox := form("/ui/login", url.Values{"token": {inboxSecret}, "next": {"/tasks/sw-web"}})
	if !strings.Contains(inbox, "Pick a colour") {
		t.Fatalf("the task page after sign-in lacks the question: %s", inbox)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(inbox)
	page := form("/ui/answer", url.Values{"csrf": {csrf[1]}, "task": {"sw-web"}, "round": {"1"}, "option": {"blue"}, "back": {"/tasks/sw-web"}})
	if !strings.Contains(page, "Answered: sw-web") {
		t.Errorf("after answering, the page does not say so")
	}
	task = ss.finished("sw-web", "painted blue")
	if a := task.Rounds[0].Answer; a.By != "alice" || a.Channel != "web" {
		t.Errorf("answer = %+v, want by alice from web", a)
	}
	ss.updated(msg, "answered by alice from web")
}

// chromiumPath finds Debian's chromium; .ci/run installs it.
func chromiumPath(t *testing.T) string { return testenv.Chromium(t) }

// TestInboxInBrowser: in headless Chromium, a person signs in with the
// token, sees the question in the inbox with its default marked, presses
// an option, and watches the task resume and finish on its page without
// reloading; then, on another task's page, an answer given in Slack (a
// signed click) appears live. (docs/img's screenshots are taken by
// orchestrator/web's TestScreenshots.)
func TestInboxInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	ss := startSlackStack(t)
	ss.submit("br-web", "human")
	ss.submit("br-slack", "slack:#ops")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1100, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancel)
	// The browser lives as long as the first call's context: no timeout
	// on it; each step below has its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", browser, err)
	}
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	// loaded marks the page; inPlace says whether the mark is still there,
	// that is whether the page changed without loading again.
	loaded := chromedp.Evaluate[any](`window.agoraLoaded = true`)
	inPlace := func() bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.agoraLoaded === true`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ignore := func(a chromedp.Action[any]) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := a(ctx, t)
			return chromedp.Void{}, err
		}
	}

	step("sign in and read the inbox",
		chromedp.Navigate(ss.s.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), inboxSecret),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(`article.question`)),
		chromedp.WaitVisible(chromedp.CSS(`#live:not([hidden])`)),
	)
	inbox := text("main")
	for _, want := range []string{"1 open question, 2 tasks waiting", "2 tasks ask this", "Pick a colour", "br-web", "br-slack", "painter, round 1"} {
		if !strings.Contains(inbox, want) {
			t.Errorf("inbox lacks %q:\n%s", want, inbox)
		}
	}

	// Clicks run inside the page: its script can swap the content between
	// chromedp finding a node and clicking it ("Could not find node with
	// given id").
	step("answer br-web on its page",
		chromedp.Navigate(ss.s.URL()+"/tasks/br-web"),
		chromedp.WaitVisible(chromedp.CSS(`#open-question button[value=green]`)),
		ignore(chromedp.Evaluate[any](`document.querySelector("#open-question button[value=green]").click()`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
		// Loaded once, after the answer: the round that follows, and its
		// finishing, come by the event stream alone.
		ignore(loaded),
		chromedp.WaitVisible(chromedp.CSS(`h1 .state-finished`)),
	)
	if !inPlace() {
		t.Errorf("the task page loaded again instead of updating in place")
	}
	timeline := text("main")
	for _, want := range []string{"answered green by alice", "from web", "Round 2", "painted green", "lines of agora's hidden"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("task page lacks %q:\n%s", want, timeline)
		}
	}
	// The output is the sub-agent's: the worker's event and log lines,
	// which the runner marked, are behind the toggle.
	for _, bad := range []string{`"kind":"dispatch.`, `msg="dispatch ended"`} {
		if strings.Contains(timeline, bad) {
			t.Errorf("task page shows agora's line %q by default:\n%s", bad, timeline)
		}
	}

	step("open br-slack's page", chromedp.Navigate(ss.s.URL()+"/tasks/br-slack"),
		chromedp.WaitVisible(chromedp.CSS(`#open-question`)), chromedp.WaitVisible(chromedp.CSS(`#live:not([hidden])`)), ignore(loaded))
	ss.click(ss.message("br-slack"), "red")
	step("see the Slack answer appear", chromedp.WaitVisible(chromedp.CSS(`li.answered`)))
	if answered := text("li.answered"); !strings.Contains(answered, "answered red by slack:U1") || !strings.Contains(answered, "from slack") {
		t.Errorf("after the Slack click the page shows %q, want red by slack:U1 from slack", answered)
	}
	if !inPlace() {
		t.Errorf("the page loaded again to show the Slack answer, want it in place")
	}
	ss.finished("br-slack", "painted red")
}
