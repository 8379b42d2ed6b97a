package web_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestReplayAndForkFromTaskPage: a finished task's page offers a replay
// and, on its answered round, "answer differently from here"; each form
// (with the session's CSRF token, refused without) starts a new task and
// opens its page, and both pages link the two.
func TestReplayAndForkFromTaskPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "carol:secret:answerer")
	id := f.ask(nil, ab())
	if _, err := f.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: id, Answer: "B", By: "carol"}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(id, "round 2 on the queue", func(t *wire.Task) bool { return len(t.Rounds) == 2 && t.Rounds[1].Enqueued })
	zero, ms := 0, int64(10)
	if _, err := f.bus.PublishEvent(t.Context(), schemas.Event{Kind: schemas.KindFinished, DispatchID: id + "-r2", Time: time.Now().UTC(),
		ExitCode: &zero, DurationMS: &ms, Result: []byte(`"done"`)}); err != nil {
		t.Fatal(err)
	}
	f.waitTask(id, "finished", func(t *wire.Task) bool { return t.State == wire.StateFinished })
	// What the runner records when round 1 asked.
	if err := f.store.Put(t.Context(), "dispatches/"+id+"-r1/workspace.json", bytes.NewReader([]byte(`{"archive":{"uri":"x","sha256":"00","size":1}}`))); err != nil {
		t.Fatal(err)
	}

	b := f.browser()
	b.login("secret")
	page := "/tasks/" + id
	_, _, body := b.get(page)
	for _, want := range []string{`action="/ui/tasks/` + id + `/replay"`, "Replay with the recorded answers",
		`action="/ui/tasks/` + id + `/fork"`, "Answer differently from here", `<input type="hidden" name="round" value="1">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the finished task's page lacks %q", want)
		}
	}
	token := b.csrf(page)
	if status, _, _ := b.do(http.MethodPost, "/ui/tasks/"+id+"/replay", url.Values{}); status != http.StatusForbidden {
		t.Errorf("replay without the CSRF token: %d, want 403", status)
	}

	status, loc, body := b.do(http.MethodPost, "/ui/tasks/"+id+"/fork", url.Values{"csrf": {token}, "round": {"1"}, "option": {"A"}})
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/tasks/t-") {
		t.Fatalf("fork: %d to %q, want 303 to the new task's page: %s", status, loc, body)
	}
	fork := strings.TrimPrefix(loc, "/tasks/")
	_, _, body = b.get(loc)
	for _, want := range []string{`fork of</dt><dd class="origin"><a href="/tasks/` + id + `">` + id + `</a> from round 1, answered “A”`,
		"copied from " + id + "-r1: this round did not run again", `answered <strong class="answer-value">A</strong> by <strong class="answer-by">carol</strong>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the fork's page lacks %q", want)
		}
	}

	status, loc, body = b.do(http.MethodPost, "/ui/tasks/"+id+"/replay", url.Values{"csrf": {token}})
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/tasks/t-") {
		t.Fatalf("replay: %d to %q, want 303 to the new task's page: %s", status, loc, body)
	}
	replay := strings.TrimPrefix(loc, "/tasks/")
	_, _, body = b.get(loc)
	for _, want := range []string{`Replay of <a href="/tasks/` + id + `">` + id + `</a>: running`, "0 questions answered from the recording of 1; the original ran 2 rounds.", "No divergence so far."} {
		if !strings.Contains(body, want) {
			t.Errorf("the replay's page lacks %q", want)
		}
	}
	_, _, body = b.get(page)
	for _, want := range []string{`<a href="/tasks/` + fork + `">` + fork + `</a> <small>(fork from round 1)</small>`, `<a href="/tasks/` + replay + `">` + replay + `</a> <small>(replay)</small>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the original's page lacks %q", want)
		}
	}

	// A fork of a round that did not ask is refused on the page it came from.
	status, _, body = b.do(http.MethodPost, "/ui/tasks/"+id+"/fork", url.Values{"csrf": {token}, "round": {"2"}, "option": {"A"}})
	if status != http.StatusBadRequest || !strings.Contains(body, "round 2 asked no question") {
		t.Errorf("fork of round 2: %d, want 400 saying it asked nothing: %s", status, body)
	}
}
