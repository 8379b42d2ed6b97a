package web_test

// The pages in Debian's headless Chromium (chromedp), against the
// stand-in service of page_test.go: a phone-wide viewport never scrolls
// sideways, whatever a sub-agent writes; the output toggle works, for the
// stored output and the live one; and, with AGORA_SCREENSHOTS=DIR, the
// screenshots docs/web.md shows.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// chrome is a headless Chromium tab.
type chrome struct {
	t   *testing.T
	ctx context.Context
}

func newChrome(t *testing.T, width, height int64) *chrome {
	t.Helper()
	path := testenv.Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(int(width), int(height)))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancel)
	// The browser lives as long as the first call's context: no timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return &chrome{t: t, ctx: ctx}
}

// do runs steps within a minute.
func (c *chrome) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// poll waits until js is true.
func (c *chrome) poll(what, js string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js)); err != nil {
		c.t.Fatalf("wait for %s: %v", what, err)
	}
}

func eval[T any](c *chrome, js string) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		c.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// long is n characters without a place to break.
func long(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }

// TestNoOverflowAt390: at 390 px (a phone) neither the inbox nor a task
// page scrolls sideways, with a question, an option, a context, a
// result, an artifact name, a failure and output lines a sub-agent wrote
// without a single space — with agora's lines shown too.
func TestNoOverflowAt390(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	f := newPageFixture(t, now)
	id := "overflow-" + strings.Repeat("a", 80)
	task := question(id, now.Add(-time.Minute), &wire.IfUnanswered{At: now.Add(4 * time.Minute), Action: wire.IfUnansweredDefault, Default: long("def-", 200)})
	q := task.Rounds[0].Question
	q.Question, q.Context = long("Q-", 400), long("ctx-", 600)
	q.Options = []string{long("opt-", 150), "short"}
	q.Default = &q.Options[0]
	task.Request.Subagent.Name = long("agent-", 120)
	task.Request.Labels = map[string]string{wire.BatchLabel: long("batch-", 120)}
	task.Result = json.RawMessage(`"` + long("result-", 1500) + `"`)
	task.Artifacts = []wire.Artifact{{Name: long("dir/", 200), Size: 1 << 20, SHA256: strings.Repeat("ab", 32)}}
	task.Outcome = &wire.Outcome{Reason: "finished", Detail: long("detail-", 300)}
	task.Rounds = append([]wire.Round{{N: 1, State: wire.StateFailed, DispatchID: id + "-r0", QueuedAt: now.Add(-time.Hour),
		StartedAt: now.Add(-time.Hour), EndedAt: now.Add(-50 * time.Minute), Failure: &schemas.Failure{Reason: "provider-failed", Detail: long("why-", 400)}}},
		task.Rounds...)
	task.Rounds[1].N = 2
	f.svc.tasks[id] = task
	f.svc.groups = []wire.QuestionGroup{group(task)}
	f.svc.outputs[id+"/1"] = eventLine + long("out-", 3000) + "\n" + workerLine + forgedEvent + "\t\t" + long("tabbed-", 500) + "\n"
	f.svc.outputs[id+"/2"] = f.svc.outputs[id+"/1"]

	c := newChrome(t, 390, 844)
	for _, path := range []string{"/", "/tasks/" + id, "/tasks/" + id + "?lines=all"} {
		c.do("load "+path, chromedp.Navigate(f.srv.URL+path), chromedp.WaitVisible(chromedp.CSS("main")))
		if strings.HasPrefix(path, "/tasks/") && eval[bool](c, `!document.querySelector("pre.log")`) {
			t.Fatalf("%s shows no output, so the test proves nothing", path)
		}
		sizes := eval[[]int](c, `[document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]`)
		if sizes[1] != 390 || sizes[0] > sizes[1] || sizes[2] > sizes[1] {
			t.Errorf("%s at 390 px: scrollWidth %d (body %d) > clientWidth %d: the page scrolls sideways", path, sizes[0], sizes[2], sizes[1])
		}
	}
}

// clickToggle clicks the task page's lines toggle as a person would.
const clickToggle = `(document.querySelector(".lines-toggle a").click(), true)`

// TestOutputToggleInBrowser: a task page shows the sub-agent's output,
// the stored and the live alike; the link shows agora's lines too,
// dimmed, and back. Works without the script: the link is a page.
func TestOutputToggleInBrowser(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	f := newPageFixture(t, now)
	task := question("toggle", now.Add(-2*time.Minute), nil)
	task.State, task.Rounds[0].State, task.Rounds[0].Question = wire.StateRunning, wire.StateFinished, nil
	task.Rounds = append(task.Rounds, wire.Round{N: 2, State: wire.StateRunning, DispatchID: "toggle-r2", QueuedAt: now.Add(-time.Minute), StartedAt: now.Add(-time.Minute)})
	f.svc.tasks["toggle"] = task
	f.svc.outputs["toggle/1"] = eventLine + "stored line\n" + workerLine + forgedEvent
	f.svc.outputs["toggle/2"] = eventLine + "live line\n" + workerLine + forgedWorker

	c := newChrome(t, 1000, 900)
	text := func(sel string) string { return eval[string](c, `document.querySelector("`+sel+`").textContent`) }
	c.do("load the task page", chromedp.Navigate(f.srv.URL+"/tasks/toggle"), chromedp.WaitVisible(chromedp.CSS("#log-1")))
	c.poll("the live output", `document.querySelector("#log-2").textContent.includes("live line")`)
	stored, live := text("#log-1"), text("#log-2")
	if stored != "stored line\n"+forgedEvent || live != "live line\n"+forgedWorker {
		t.Errorf("by default: stored output %q, live %q; want the sub-agent's lines alone, forgeries included", stored, live)
	}
	if n := eval[int](c, `document.querySelectorAll(".agora-line").length`); n != 0 {
		t.Errorf("by default %d of agora's lines are on the page", n)
	}
	// The link is clicked in the page, not by a node id chromedp resolved
	// first: the page's script may swap the content (a refresh from its
	// event stream) between the two, and the id would then be stale.
	eval[bool](c, clickToggle)
	c.do("show agora's lines", chromedp.WaitVisible(chromedp.CSS(".agora-line")))
	c.poll("the live output", `document.querySelector("#log-2").textContent.includes("live line")`)
	stored, live = text("#log-1"), text("#log-2")
	if stored != eventLine[1:]+"stored line\n"+workerLine[1:]+forgedEvent || live != eventLine[1:]+"live line\n"+workerLine[1:]+forgedWorker {
		t.Errorf("with agora's lines: stored output %q, live %q; want every line, without the mark", stored, live)
	}
	if color := eval[string](c, `getComputedStyle(document.querySelector(".agora-line")).color`); color == eval[string](c, `getComputedStyle(document.querySelector("#log-1")).color`) {
		t.Errorf("agora's lines are not dimmed (%s)", color)
	}
	eval[bool](c, clickToggle)
	c.do("back to the sub-agent's output", chromedp.WaitVisible(chromedp.CSS(`.lines-toggle a[href$="?lines=all"]`)), chromedp.WaitVisible(chromedp.CSS("#log-1")))
	if n := eval[int](c, `document.querySelectorAll(".agora-line").length`); n != 0 || !strings.HasSuffix(eval[string](c, `location.href`), "/tasks/toggle") {
		t.Errorf("after the toggle back, %d of agora's lines remain (at %s)", n, eval[string](c, `location.href`))
	}
}

// TestScreenshots writes docs/img's pictures of the inbox and the task
// pages (with AGORA_SCREENSHOTS=DIR; skipped without), from the
// stand-in service, so they show a consequence, a result and artifacts
// exactly; re-run it when the pages change:
//
//	AGORA_SCREENSHOTS=$PWD/docs/img go test -run TestScreenshots ./orchestrator/web/
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("AGORA_SCREENSHOTS")
	if dir == "" {
		t.Skip("AGORA_SCREENSHOTS=DIR writes the screenshots there")
	}
	// The pages' script keeps "in 4m" current from the browser's clock:
	// the times are the real ones.
	now := time.Now().UTC().Truncate(time.Second)
	f := newPageFixture(t, now)
	ask := question("report-7", now.Add(-3*time.Minute-20*time.Second), &wire.IfUnanswered{At: now.Add(4*time.Minute + 10*time.Second),
		Action: wire.IfUnansweredDefault, Default: "draft"})
	ask.Request.Labels = map[string]string{wire.BatchLabel: "q3-reports"}
	f.svc.outputs["report-7/1"] = eventLine + "reading data/q3.csv (1,204 rows)\nwrote report.md (40 pages)\n" + workerLine
	deploy := question("deploy-12", now.Add(-50*time.Second), &wire.IfUnanswered{At: now.Add(9*time.Minute + 10*time.Second),
		Action: wire.IfUnansweredEscalate, Next: "human"})
	deploy.Request.Subagent.Name = "deployer"
	r := &deploy.Rounds[0]
	r.Question = &schemas.NeedsInput{Question: "Roll out build 4812 to production now?", Options: []string{"roll out", "wait"},
		Context: "Staging has been green for 2 hours; the error rate is 0.02%."}
	done := question("report-6", now.Add(-20*time.Minute), nil)
	done.State, done.Rounds[0].Question, done.Rounds[0].State = wire.StateFinished, nil, wire.StateFinished
	done.Rounds[0].EndedAt = done.Rounds[0].StartedAt.Add(80 * time.Second)
	done.UpdatedAt = done.Rounds[0].EndedAt
	done.Outcome = &wire.Outcome{Reason: "finished", Detail: "round 1 finished"}
	done.Result = json.RawMessage(`{"title":"Q2 report","pages":38,"status":"published","url":"https://reports.example/q2"}`)
	done.Artifacts = []wire.Artifact{
		{Name: "report.md", Size: 48_213, SHA256: "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"},
		{Name: "charts/revenue.png", Size: 120_400, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	}
	f.svc.outputs["report-6/1"] = eventLine + "reading data/q2.csv (1,180 rows)\nwrote report.md (38 pages)\nwrote charts/revenue.png\n" + workerLine
	for _, task := range []*wire.Task{ask, deploy, done} {
		f.svc.tasks[task.ID] = task
	}
	f.svc.groups = []wire.QuestionGroup{group(ask), group(deploy)}

	c := newChrome(t, 1000, 800)
	for _, shot := range []struct{ path, file string }{
		{"/", "inbox.png"}, {"/tasks/report-7", "task-question.png"}, {"/tasks/report-6", "task.png"},
	} {
		c.do("load "+shot.path, chromedp.Navigate(f.srv.URL+shot.path), chromedp.WaitVisible(chromedp.CSS("#live:not([hidden])")))
		ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot.path, err)
		}
		if err := os.WriteFile(filepath.Join(dir, shot.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The inbox on a phone.
	phone := newChrome(t, 390, 844)
	phone.do("load the inbox at 390 px", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#live:not([hidden])")))
	ctx, cancel := context.WithTimeout(phone.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("screenshot the inbox at 390 px: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inbox-phone.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRememberCheckboxInBrowser: on a task page, ticking "Always answer
// this" and pressing an option answers and makes a rule; the next task's
// question like it is answered by the rule, and its page names the rule
// and who made it. Against the real orchestrator (web_test.go's fixture).
func TestRememberCheckboxInBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ask(nil, ab())
	c := newChrome(t, 1000, 900)
	c.do("load the task page", chromedp.Navigate(f.srv.URL+"/tasks/"+id), chromedp.WaitVisible(chromedp.CSS(`input[name="remember"]`)))
	if label := eval[string](c, `document.querySelector("label.remember").textContent`); !strings.Contains(label, "Always answer this question this way for coder") {
		t.Errorf("the checkbox's label = %q", label)
	}
	// The clicks run inside the page, in one script: its live refresh can
	// replace the form between chromedp finding a node and clicking it
	// ("Could not find node with given id").
	eval[bool](c, `(document.querySelector('input[name="remember"]').click(), document.querySelector('button.option[value="B"]').click(), true)`)
	c.do("the answer remembered", chromedp.WaitVisible(chromedp.CSS(".answer-remembered")))
	task := f.waitTask(id, "answered with a rule made", func(t *wire.Task) bool { return len(t.Rounds) == 2 })
	rule := task.Rounds[0].Answer.Remembered
	if a := task.Rounds[0].Answer; a.Value != "B" || rule == "" {
		t.Fatalf("answer = %+v, want B remembered as a rule", a)
	}

	next := f.askQuietly(nil, ab())
	task = f.waitTask(next, "answered by the rule", func(t *wire.Task) bool { return t.Rounds[0].Answer != nil })
	if a := task.Rounds[0].Answer; a.Value != "B" || a.Channel != "rule" || a.Rule == nil || a.Rule.ID != rule {
		t.Fatalf("the next task's answer = %+v, want B by rule %s", a, rule)
	}
	c.do("load the next task's page", chromedp.Navigate(f.srv.URL+"/tasks/"+next), chromedp.WaitVisible(chromedp.CSS(".answer-rule")))
	if got := eval[string](c, `document.querySelector(".answer-rule").textContent`); !strings.Contains(got, rule) || !strings.Contains(got, "made by operator") {
		t.Errorf("the timeline says %q, want the rule %s and its maker", got, rule)
	}
}

// TestRefreshKeepsWhatIsNotSent: a refresh (another task asks, the inbox
// is read again) replaces the page's forms; what the person has set and
// not sent — a ticked "Always answer this" — must survive it, on the form
// of the task it was ticked for only, or their next press answers without
// the rule they asked for.
func TestRefreshKeepsWhatIsNotSent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.ask(nil, ab())
	c := newChrome(t, 1000, 900)
	box := func(id string) string {
		return `document.querySelector('form input[name="task"][value="` + id + `"]').form.querySelector('input[name="remember"]')`
	}
	c.do("load the inbox", chromedp.Navigate(f.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#live:not([hidden])`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="remember"]`)))
	eval[bool](c, `(window.refreshes = 0, document.addEventListener("agora:refreshed", () => window.refreshes++), `+box(first)+`.click(), true)`)
	second := f.ask(nil, schemas.NeedsInput{Question: "Deploy to staging?", Options: []string{"yes", "no"}})
	c.poll("the inbox refreshed with the second question", `window.refreshes > 0 && !!document.querySelector('form input[name="task"][value="`+second+`"]')`)
	if !eval[bool](c, box(first)+`.checked`) {
		t.Error("the refresh lost the ticked checkbox of the first question")
	}
	if eval[bool](c, box(second)+`.checked`) {
		t.Error("the second question's checkbox is ticked: the state went to another form")
	}
}
