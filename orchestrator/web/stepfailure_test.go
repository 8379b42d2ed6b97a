package web_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// refusedWhy is what the "refusing" route step fails with, as a Slack step
// does when Slack refuses the question.
const refusedWhy = "Slack refused the question (invalid_blocks: must be less than 76 characters [json-pointer:/blocks/3/elements/0/text/text])"

// refusing is the fixture's answerers: "refusing" fails every question
// with refusedWhy.
func refusing(t *testing.T) *answer.Resolver {
	r := &answer.Resolver{}
	err := r.Register("refusing", func(string) (answer.Answerer, error) {
		return answer.Func(func(context.Context, answer.Question) (answer.Reply, error) {
			return answer.Reply{}, errors.New(refusedWhy)
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStepFailureInInbox: a question a route step failed to ask (Slack
// refused it) says so on its inbox card and on the task page, with how to
// answer it instead.
func TestStepFailureInInbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := "wf1"
	if _, err := f.orch.Submit(t.Context(), wire.SubmitRequest{TaskID: id, Route: "refusing:x,human",
		Subagent: schemas.Subagent{Name: "coder", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	q := ab()
	for _, ev := range []schemas.Event{{Kind: schemas.KindStarted, DispatchID: id + "-r1"}, {Kind: schemas.KindNeedsInput, DispatchID: id + "-r1", NeedsInput: &q}} {
		ev.Time = time.Now().UTC()
		if ev.Kind.Terminal() {
			zero, ms := 0, int64(10)
			ev.ExitCode, ev.DurationMS = &zero, &ms
		}
		if _, err := f.bus.PublishEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	f.waitTask(id, "at the human step", func(t *wire.Task) bool { return len(t.Rounds) == 1 && t.Rounds[0].Step == 1 })
	b := f.browser()
	_, _, inbox := b.get("/")
	if want := "task " + id + ": route step refusing:x failed: " + htmlText(refusedWhy); !strings.Contains(inbox, want) {
		t.Errorf("the inbox lacks %q:\n%s", want, inbox)
	}
	_, _, page := b.get("/tasks/" + id)
	if want := "route step refusing:x failed: " + htmlText(refusedWhy) + "; answer with: agora answer " + id + " A"; !strings.Contains(page, want) {
		t.Errorf("the task page lacks %q", want)
	}
}

// htmlText is s as html/template writes it in text.
func htmlText(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "<", "&lt;", ">", "&gt;", "&", "&amp;").Replace(s)
}
