package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// rulesStack is the real orchestrator (embedded NATS, file storage) with
// no runner and a clock the test moves: rounds ask when the test
// publishes their events.
type rulesStack struct {
	bus    *bus.Bus
	cfg    Config
	orch   *Orchestrator
	offset atomic.Int64 // added to the clock
}

func newRulesStack(t *testing.T) *rulesStack {
	t.Helper()
	s := &rulesStack{bus: bustest.Bus(t)}
	s.cfg = Config{Bus: s.bus, Store: storagetest.FileStore(t), Logger: natstest.Logger(t),
		Now: func() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) }}
	s.orch = startOrchestrator(t, s.cfg)
	return s
}

// as is a context of the named token (a submitter unless roles say).
func as(name string, answerer bool) context.Context {
	return WithIdentity(context.Background(), Identity{Name: name, Answerer: answerer})
}

// ask submits task id for owner ctx with sub-agent name and labels, plays
// its round 1 asking q, and returns the task once the question has been
// dealt with: answered by a rule, or waiting at the human step.
func (s *rulesStack) ask(t *testing.T, ctx context.Context, id, subagent string, labels map[string]string, q schemas.NeedsInput) *wire.Task {
	t.Helper()
	if _, err := s.orch.Submit(ctx, wire.SubmitRequest{TaskID: id, Subagent: script(subagent, "true"), Labels: labels, Route: "human=1h"}); err != nil {
		t.Fatalf("submit %s: %v", id, err)
	}
	dispatch := id + "-r1"
	zero, ms := 0, int64(10)
	for _, ev := range []schemas.Event{
		{Kind: schemas.KindStarted, DispatchID: dispatch, Time: time.Now().UTC()},
		{Kind: schemas.KindNeedsInput, DispatchID: dispatch, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms, NeedsInput: &q},
	} {
		if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
			t.Fatalf("publish %s of %s: %v", ev.Kind, dispatch, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := s.orch.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r := &task.Rounds[0]; r.Answer != nil || len(r.Decisions) > 0 {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want its question answered or waiting for a person", id, task.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// byRule returns the rule that answered round 1 of task, or "".
func byRule(task *wire.Task) string {
	if a := task.Rounds[0].Answer; a != nil && a.Channel == RuleChannel && a.Rule != nil {
		return a.Rule.ID
	}
	return ""
}

var deployQ = schemas.NeedsInput{Question: "Deploy to staging or prod?", Options: []string{"staging", "prod"}}

// TestRememberedRules: an answer with remember answers the next question
// like it on a task within its scope, naming the rule and its maker, and
// nothing outside the scope, of another owner, or after it expires; the
// rule outlives a restart of the orchestrator.
func TestRememberedRules(t *testing.T) {
	t.Parallel()
	s := newRulesStack(t)
	alice, bob := as("alice", false), as("bob", false)

	first := s.ask(t, alice, "first", "deployer", map[string]string{"team": "web"}, deployQ)
	if byRule(first) != "" {
		t.Fatalf("the first question was answered by rule %s, want it waiting", byRule(first))
	}
	got, err := s.orch.Answer(alice, wire.AnswerRequest{TaskID: "first", Answer: "staging", By: "alice", Channel: "cli", Remember: &wire.Remember{}})
	if err != nil {
		t.Fatalf("Answer with remember: %v", err)
	}
	ruleID := got.Rounds[0].Answer.Remembered
	if CheckRuleID(ruleID) != nil {
		t.Fatalf("answer.remembered = %q, want a rule id", ruleID)
	}
	rule, err := s.orch.Rule(alice, ruleID)
	if err != nil {
		t.Fatalf("Rule(%s) as alice: %v", ruleID, err)
	}
	now := time.Now()
	if rule.Answer != "staging" || rule.By != "alice" || rule.Owner != "alice" || rule.Scope != (wire.RuleScope{Kind: "subagent", Subagent: "deployer"}) ||
		rule.FromTask != "first" || rule.FromRound != 1 || rule.ExpiresAt.Sub(now) < wire.DefaultRuleTTL-time.Minute || rule.ExpiresAt.Sub(now) > wire.DefaultRuleTTL {
		t.Errorf("rule = %+v, want staging by alice for alice's deployer tasks, 30 days", rule)
	}
	if h := got.History[len(got.History)-1]; !strings.Contains(h.Detail, "remembered as rule "+ruleID) {
		t.Errorf("history = %+v, want the answer to say it was remembered", h)
	}

	// The next question like it, the text written otherwise.
	q := deployQ
	q.Question, q.Options = "  deploy to STAGING or prod ", []string{"prod", "staging"}
	next := s.ask(t, alice, "next", "deployer", nil, q)
	a := next.Rounds[0].Answer
	if byRule(next) != ruleID || a.Value != "staging" || a.Rule.By != "alice" || !strings.Contains(a.By, ruleID) || !strings.Contains(a.By, "alice") {
		t.Fatalf("next task's answer = %+v, want staging by rule %s made by alice", a, ruleID)
	}
	if next.State != wire.StateQueued || len(next.Rounds) != 2 {
		t.Errorf("next task is %s with %d rounds, want round 2 queued", next.State, len(next.Rounds))
	}
	if d := next.Rounds[0].Decisions; len(d) != 1 || d[0].Step != RuleChannel || d[0].Result != "answered" {
		t.Errorf("next task's decisions = %+v, want one: answered by the rule", d)
	}

	outside := []struct {
		name, id, subagent string
		ctx                context.Context
		q                  schemas.NeedsInput
	}{
		{"another sub-agent", "other-subagent", "builder", alice, deployQ},
		{"another owner", "bobs", "deployer", bob, deployQ},
		{"other options", "other-options", "deployer", alice, schemas.NeedsInput{Question: deployQ.Question, Options: []string{"staging", "prod", "dev"}}},
		{"another question", "other-question", "deployer", alice, schemas.NeedsInput{Question: "Deploy to staging?", Options: deployQ.Options}},
	}
	for _, c := range outside {
		if task := s.ask(t, c.ctx, c.id, c.subagent, nil, c.q); byRule(task) != "" {
			t.Errorf("%s: answered by rule %s, want the question left to its route", c.name, byRule(task))
		}
	}

	// Durable: a new orchestrator on the same bucket applies it.
	if err := s.orch.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.orch = startOrchestrator(t, s.cfg)
	if task := s.ask(t, alice, "after-restart", "deployer", nil, deployQ); byRule(task) != ruleID {
		t.Errorf("after a restart: answer %+v, want rule %s", task.Rounds[0].Answer, ruleID)
	}

	// Expired: 30 days and a minute later it answers nothing, and is gone.
	s.offset.Store(int64(wire.DefaultRuleTTL + time.Minute))
	if task := s.ask(t, alice, "expired", "deployer", nil, deployQ); byRule(task) != "" {
		t.Errorf("after expiry: answered by rule %s, want the route", byRule(task))
	}
	if _, err := s.orch.Rule(alice, ruleID); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Rule(%s) after expiry = %v, want wire.ErrNotFound", ruleID, err)
	}
	if list, err := s.orch.Rules(alice, wire.PageOptions{}); err != nil || len(list.Rules) != 0 {
		t.Errorf("Rules after expiry = %+v, %v; want none", list, err)
	}
}

// TestRuleScopes: a label rule answers the owner's tasks with that label
// whatever the sub-agent; an owner rule every task of the owner; the
// narrower of two matching rules answers.
func TestRuleScopes(t *testing.T) {
	t.Parallel()
	s := newRulesStack(t)
	carol := as("carol", false)
	q := schemas.NeedsInput{Question: "Run the slow tests?", Options: []string{"yes", "no"}}
	answer := func(id, value string, labels map[string]string, rem *wire.Remember) string {
		t.Helper()
		s.ask(t, carol, id, "tester", labels, q)
		got, err := s.orch.Answer(carol, wire.AnswerRequest{TaskID: id, Answer: value, Remember: rem})
		if err != nil {
			t.Fatalf("answer %s: %v", id, err)
		}
		return got.Rounds[0].Answer.Remembered
	}
	labelRule := answer("make-label", "no", map[string]string{"team": "web"}, &wire.Remember{Scope: "label:team=web", ExpiresInSeconds: 3600})
	if task := s.ask(t, carol, "labelled", "linter", map[string]string{"team": "web", "x": "y"}, q); byRule(task) != labelRule {
		t.Errorf("a labelled task of another sub-agent: rule %q, want %s", byRule(task), labelRule)
	}
	if task := s.ask(t, carol, "other-label", "linter", map[string]string{"team": "api"}, q); byRule(task) != "" {
		t.Errorf("a task with another label value: rule %q, want none", byRule(task))
	}
	s.ask(t, carol, "asked-before", "tester", nil, q) // waits: no rule yet
	ownerRule := answer("make-owner", "yes", nil, &wire.Remember{Scope: "owner"})
	if task := s.ask(t, carol, "any", "linter", nil, q); byRule(task) != ownerRule || task.Rounds[0].Answer.Value != "yes" {
		t.Errorf("an unlabelled task: %+v, want yes by the owner rule %s", task.Rounds[0].Answer, ownerRule)
	}
	if task := s.ask(t, carol, "both", "linter", map[string]string{"team": "web"}, q); byRule(task) != labelRule || task.Rounds[0].Answer.Value != "no" {
		t.Errorf("a task both rules match: %+v, want no by the narrower label rule %s", task.Rounds[0].Answer, labelRule)
	}
	// The same question, scope and owner again replaces the rule: a
	// question asked before the rule existed still waits for a person.
	got, err := s.orch.Answer(carol, wire.AnswerRequest{TaskID: "asked-before", Answer: "no", Remember: &wire.Remember{Scope: "owner"}})
	if err != nil || got.Rounds[0].Answer.Remembered != ownerRule {
		t.Fatalf("remembering again in the same scope: %v, %+v; want rule %s replaced", err, got, ownerRule)
	}
	if rule, err := s.orch.Rule(carol, ownerRule); err != nil || rule.Answer != "no" || rule.FromTask != "asked-before" {
		t.Errorf("Rule(%s) = %+v, %v; want the later answer no", ownerRule, rule, err)
	}
}

// TestRulePermissions: only who may answer a task may make a rule of its
// answer, within that task's owner; a bad remember is refused before the
// answer is taken; rules are seen and removed within their owner.
func TestRulePermissions(t *testing.T) {
	t.Parallel()
	s := newRulesStack(t)
	alice, bob, bot := as("alice", false), as("bob", false), as("slackbot", true)
	s.ask(t, alice, "a1", "deployer", map[string]string{"team": "web"}, deployQ)

	if _, err := s.orch.Answer(bob, wire.AnswerRequest{TaskID: "a1", Answer: "prod", Remember: &wire.Remember{Scope: "owner"}}); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("bob (a submitter) remembers an answer to alice's task: %v, want wire.ErrNotFound", err)
	}
	bad := []struct {
		name string
		rem  wire.Remember
		want string
	}{
		{"a label the task lacks", wire.Remember{Scope: "label:team=api"}, "has no label team=api"},
		{"another sub-agent", wire.Remember{Scope: "subagent:builder"}, "its own sub-agent"},
		{"an unknown scope", wire.Remember{Scope: "everyone"}, "want subagent, label:KEY=VALUE or owner"},
		{"too long", wire.Remember{ExpiresInSeconds: int64(wire.MaxRuleTTL/time.Second) + 1}, "want 1 to 15552000"},
		{"negative", wire.Remember{ExpiresInSeconds: -1}, "want 1 to"},
	}
	for _, c := range bad {
		rem := c.rem
		if _, err := s.orch.Answer(alice, wire.AnswerRequest{TaskID: "a1", Answer: "prod", Remember: &rem}); !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Answer = %v, want wire.ErrInvalidRequest saying %q", c.name, err, c.want)
		}
	}
	if task, _ := s.orch.Get(alice, "a1"); task.Rounds[0].Answer != nil {
		t.Fatalf("a refused remember took the answer: %+v", task.Rounds[0].Answer)
	}

	// An answering service answers for a person: the rule is theirs,
	// vouched for by the service, and answers alice's tasks only.
	got, err := s.orch.Answer(bot, wire.AnswerRequest{TaskID: "a1", Answer: "prod", By: "slack:U1 (dana)", Via: "slackbot", Remember: &wire.Remember{}})
	if err != nil {
		t.Fatalf("the answerer remembers: %v", err)
	}
	id := got.Rounds[0].Answer.Remembered
	rule, err := s.orch.Rule(bot, id)
	if err != nil || rule.By != "slack:U1 (dana)" || rule.Via != "slackbot" || rule.Owner != "alice" {
		t.Fatalf("Rule = %+v, %v; want dana's via slackbot for alice", rule, err)
	}
	if _, err := s.orch.Rule(bob, id); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("bob reads alice's rule: %v, want wire.ErrNotFound", err)
	}
	if list, _ := s.orch.Rules(bob, wire.PageOptions{}); len(list.Rules) != 0 {
		t.Errorf("bob lists %d rules, want none of alice's", len(list.Rules))
	}
	if list, _ := s.orch.Rules(alice, wire.PageOptions{}); len(list.Rules) != 1 || list.Rules[0].ID != id {
		t.Errorf("alice lists %+v, want her rule %s", list.Rules, id)
	}
	if err := s.orch.RemoveRule(bob, id); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("bob removes alice's rule: %v, want wire.ErrNotFound", err)
	}
	if err := s.orch.RemoveRule(as("otherbot", true), id); !errors.Is(err, ErrForbidden) {
		t.Errorf("another answerer removes the rule: %v, want ErrForbidden", err)
	}
	if err := s.orch.RemoveRule(alice, id); err != nil {
		t.Errorf("alice removes the rule on her tasks: %v", err)
	}
	if _, err := s.orch.Rule(alice, id); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Rule after removal = %v, want wire.ErrNotFound", err)
	}
	if _, err := s.orch.Rule(alice, "r-bad"); !errors.Is(err, wire.ErrInvalidID) {
		t.Errorf("Rule(r-bad) = %v, want wire.ErrInvalidID", err)
	}
	if task := s.ask(t, alice, "a2", "deployer", nil, deployQ); byRule(task) != "" {
		t.Errorf("a removed rule answered: %+v", task.Rounds[0].Answer)
	}
}

// TestRememberedAnswerOnRealStack is issue 23's "what must be shown" on
// the whole loop (Docker, NATS, the worker): a remembered answer answers
// the next task's question, named in its timeline, and the sub-agent's
// next round reads it; it does not answer a task of another sub-agent,
// nor one asked after it expired.
func TestRememberedAnswerOnRealStack(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	s := newStack(t, func(c *Config) { c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) } })
	ctx := context.Background()
	alice := as("alice", false)
	submit := func(sub schemas.Subagent) *wire.Task {
		t.Helper()
		task, err := s.orch.Submit(alice, wire.SubmitRequest{TaskID: fmt.Sprintf("t%d-%d", testutil.RunNumber(), seq.Add(1)), Subagent: sub, Route: "human=1h"})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}

	first := s.waitState(submit(askerWith(1)).ID, wire.StateNeedsInput)
	if _, err := s.orch.Answer(alice, wire.AnswerRequest{TaskID: first.ID, Answer: "green", By: "alice", Channel: "cli", Remember: &wire.Remember{}}); err != nil {
		t.Fatalf("answer with remember: %v", err)
	}
	first = s.waitState(first.ID, wire.StateFinished, wire.StateFailed)
	rule := first.Rounds[0].Answer.Remembered
	if first.State != wire.StateFinished || rule == "" {
		t.Fatalf("first task %s, answer %+v; want finished with a rule made", first.State, first.Rounds[0].Answer)
	}

	// Nobody answers the next task: the rule does, and round 2 reads it.
	// It passes through needs_input before the router applies the rule,
	// so wait for its end, not for the first of those states.
	next := s.waitState(submit(askerWith(1)).ID, wire.StateFinished, wire.StateFailed)
	a := next.Rounds[0].Answer
	if next.State != wire.StateFinished || a == nil || a.Channel != RuleChannel || a.Rule.ID != rule || a.By != "rule "+rule+" (made by alice)" {
		t.Fatalf("next task %s, answer %+v; want finished, answered by rule %s made by alice", next.State, a, rule)
	}
	if out := s.output(next.Rounds[1].DispatchID); !strings.Contains(out, "answers: green") {
		t.Errorf("the next task's round 2 output = %q, want the rule's answer read", out)
	}

	// Another sub-agent asking the same: left to its route.
	painter := askerWith(1)
	painter.Name = "painter"
	other := s.waitState(submit(painter).ID, wire.StateNeedsInput)
	s.waitPending(other.ID)
	if got, _ := s.orch.Get(ctx, other.ID); got.Rounds[0].Answer != nil {
		t.Errorf("another sub-agent's question was answered: %+v", got.Rounds[0].Answer)
	}
	if _, err := s.orch.Cancel(ctx, other.ID); err != nil {
		t.Fatal(err)
	}

	// After the rule expires: left to the route.
	offset.Store(int64(wire.DefaultRuleTTL + time.Hour))
	late := s.waitState(submit(askerWith(1)).ID, wire.StateNeedsInput)
	s.waitPending(late.ID)
	if got, _ := s.orch.Get(ctx, late.ID); got.Rounds[0].Answer != nil {
		t.Errorf("a question after the rule expired was answered: %+v", got.Rounds[0].Answer)
	}
	if _, err := s.orch.Cancel(ctx, late.ID); err != nil {
		t.Fatal(err)
	}
	s.waitState(late.ID, wire.StateCancelled)
}

// waitPending waits until task id's open question waits at a route step.
func (s *stack) waitPending(id string) {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		task, err := s.orch.Get(context.Background(), id)
		if err != nil {
			s.t.Fatal(err)
		}
		if r := currentRound(task); len(r.Decisions) > 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("task %s: the question never reached its route", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
