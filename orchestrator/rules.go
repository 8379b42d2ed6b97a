package orchestrator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// RulesBucket holds the remembered answers (wire.Rule), one key per rule
// id. Its entries are kept MaxRuleTTL after their last write, a backstop:
// a rule stops answering at its own ExpiresAt.
const RulesBucket = "agora_rules"

// RuleChannel is the wire.Answer.Channel of an answer a rule gave.
const RuleChannel = "rule"

// Rules is the part of a Service that lists, shows and removes the
// remembered answers. It is a capability of its own, found by type
// assertion: *Orchestrator and the API client have it.
type Rules interface {
	// Rules returns one page of the rules the caller may see, by id.
	Rules(ctx context.Context, opts wire.PageOptions) (wire.RuleList, error)
	// Rule returns one rule; wire.ErrNotFound when the caller may not see it.
	Rule(ctx context.Context, id string) (*wire.Rule, error)
	// RemoveRule deletes a rule: its owner, who made it, or an admin.
	RemoveRule(ctx context.Context, id string) error
}

var _ Rules = (*Orchestrator)(nil)

// ErrForbidden: the caller may see the thing but not do this to it (the
// API answers 403).
var ErrForbidden = errors.New("not allowed")

// errRuleNotFound is wire.ErrNotFound worded for a rule.
type errRuleNotFound struct{}

func (errRuleNotFound) Error() string        { return "no such rule ('agora rules' lists them)" }
func (errRuleNotFound) Is(target error) bool { return target == wire.ErrNotFound }

// ruleIDPattern is what a rule id looks like: "r-" and 16 hex digits.
var ruleIDPattern = regexp.MustCompile(`^r-[0-9a-f]{16}$`)

// CheckRuleID refuses an id that cannot be a rule's (wire.ErrInvalidID).
func CheckRuleID(id string) error {
	if !ruleIDPattern.MatchString(id) {
		return fmt.Errorf("rule id %q: want r- and 16 hex digits, as 'agora rules' lists them: %w", clip(id, 80), wire.ErrInvalidID)
	}
	return nil
}

// ruleID is the id of the rule for question q with scope on owner's tasks:
// the same question, scope and owner always give the same id, so a later
// remembered answer replaces the earlier rule instead of adding one.
func ruleID(owner string, scope wire.RuleScope, q answer.Question) string {
	h := sha256.New()
	for _, s := range []string{"agora-rule-v1", owner, scope.String(), answer.MemoryKey(answer.Question{Question: q.Question, Options: q.Options})} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return "r-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// parseScope reads Remember.Scope for a rule made on task t.
func parseScope(t *wire.Task, s string) (wire.RuleScope, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch kind {
	case "", wire.RuleScopeSubagent:
		if hasArg && arg != t.Request.Subagent.Name {
			return wire.RuleScope{}, fmt.Errorf("scope %q: a rule made on task %s is for its own sub-agent %q (or use label:KEY=VALUE or owner)", s, t.ID, t.Request.Subagent.Name)
		}
		return wire.RuleScope{Kind: wire.RuleScopeSubagent, Subagent: t.Request.Subagent.Name}, nil
	case wire.RuleScopeLabel:
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return wire.RuleScope{}, fmt.Errorf("scope %q: want label:KEY=VALUE", s)
		}
		if got, has := t.Request.Labels[k]; !has || got != v {
			return wire.RuleScope{}, fmt.Errorf("scope %q: task %s has no label %s=%s; a rule's label must be one of the answered task's", s, t.ID, k, v)
		}
		return wire.RuleScope{Kind: wire.RuleScopeLabel, Label: k + "=" + v}, nil
	case wire.RuleScopeOwner:
		if hasArg {
			return wire.RuleScope{}, fmt.Errorf("scope %q: owner takes no argument: the rule is for the answered task's owner", s)
		}
		return wire.RuleScope{Kind: wire.RuleScopeOwner}, nil
	}
	return wire.RuleScope{}, fmt.Errorf("scope %q: want subagent, label:KEY=VALUE or owner", s)
}

// ruleTTL is how long a rule of spec lasts.
func ruleTTL(spec *wire.Remember) (time.Duration, error) {
	switch s := spec.ExpiresInSeconds; {
	case s == 0:
		return wire.DefaultRuleTTL, nil
	case s < 0 || s > int64(wire.MaxRuleTTL/time.Second):
		return 0, fmt.Errorf("expires_in_seconds %d: want 1 to %d (%d days; the default is %d days)", s,
			int64(wire.MaxRuleTTL/time.Second), int(wire.MaxRuleTTL/(24*time.Hour)), int(wire.DefaultRuleTTL/(24*time.Hour)))
	default:
		return time.Duration(s) * time.Second, nil
	}
}

// checkRemember refuses a Remember that cannot make a rule on t, before
// the answer is accepted.
func checkRemember(t *wire.Task, spec *wire.Remember) error {
	if _, err := parseScope(t, spec.Scope); err != nil {
		return fmt.Errorf("%w: remember: %v", wire.ErrInvalidRequest, err)
	}
	if _, err := ruleTTL(spec); err != nil {
		return fmt.Errorf("%w: remember: %v", wire.ErrInvalidRequest, err)
	}
	return nil
}

// newRule is the rule that remembers answer a (by, via) to round r of t.
func newRule(t *wire.Task, r *wire.Round, a *wire.Answer, spec *wire.Remember, now time.Time) (wire.Rule, error) {
	scope, err := parseScope(t, spec.Scope)
	if err != nil {
		return wire.Rule{}, err
	}
	ttl, err := ruleTTL(spec)
	if err != nil {
		return wire.Rule{}, err
	}
	q := questionOf(t, r)
	return wire.Rule{ID: ruleID(t.Owner, scope, q), Question: q.Question, Options: slices.Clone(q.Options), Answer: a.Value,
		Scope: scope, Owner: t.Owner, By: a.By, Via: a.Via, CreatedAt: now, ExpiresAt: now.Add(ttl),
		FromTask: t.ID, FromRound: r.N}, nil
}

// ruleApplies reports whether rule may answer q, asked on task t, at now:
// not expired, the same owner, within its scope, the same question.
func ruleApplies(rule *wire.Rule, t *wire.Task, q answer.Question, now time.Time) bool {
	if !now.Before(rule.ExpiresAt) || rule.Owner != t.Owner {
		return false
	}
	switch rule.Scope.Kind {
	case wire.RuleScopeSubagent:
		if rule.Scope.Subagent != t.Request.Subagent.Name {
			return false
		}
	case wire.RuleScopeLabel:
		k, v, _ := strings.Cut(rule.Scope.Label, "=")
		if got, ok := t.Request.Labels[k]; !ok || got != v {
			return false
		}
	case wire.RuleScopeOwner:
	default:
		return false // a kind this version does not know answers nothing
	}
	if !answer.SameQuestion(rule.Question, rule.Options, q) {
		return false
	}
	_, err := answer.ValidateAnswer(q, rule.Answer)
	return err == nil
}

// specificity orders matching rules: the narrowest scope first.
func specificity(kind string) int {
	switch kind {
	case wire.RuleScopeSubagent:
		return 0
	case wire.RuleScopeLabel:
		return 1
	}
	return 2
}

// matchRule finds the rule that answers round r of t: of those that apply,
// the narrowest scope, then the newest. Expired rules met on the way are
// deleted.
func (o *Orchestrator) matchRule(ctx context.Context, t *wire.Task, r *wire.Round) (*wire.Rule, error) {
	q, now := questionOf(t, r), o.now()
	var best *wire.Rule
	var expired []string
	err := o.eachRule(ctx, func(rule *wire.Rule) {
		if !now.Before(rule.ExpiresAt) {
			expired = append(expired, rule.ID)
			return
		}
		if !ruleApplies(rule, t, q, now) {
			return
		}
		if best == nil || specificity(rule.Scope.Kind) < specificity(best.Scope.Kind) ||
			specificity(rule.Scope.Kind) == specificity(best.Scope.Kind) && rule.CreatedAt.After(best.CreatedAt) {
			best = rule
		}
	})
	for _, id := range expired {
		if derr := o.deleteRule(ctx, id); derr != nil {
			o.log.Warn("delete expired rule", "rule", id, "error", derr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	return best, nil
}

// ruleCache is the rules bucket as this process last saw it, kept by a
// watch (followRules), so a question does not read the bucket. Until the
// watch has caught up, or after it is lost, the bucket is read instead.
type ruleCache struct {
	mu    sync.RWMutex
	ready bool
	rules map[string]wire.Rule
}

func (c *ruleCache) put(rule wire.Rule) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rules[rule.ID] = rule
}

func (c *ruleCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rules, id)
}

// snapshot returns the cached rules, or ok false when the cache is not
// to be trusted.
func (c *ruleCache) snapshot() (rules []wire.Rule, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, false
	}
	rules = make([]wire.Rule, 0, len(c.rules))
	for _, r := range c.rules {
		rules = append(rules, r)
	}
	return rules, true
}

// followRules keeps o.ruleCache from the bucket until ctx ends. Rules this
// process writes are in the cache at once; other replicas' arrive with
// the watch, within moments.
func (o *Orchestrator) followRules(ctx context.Context) error {
	c := o.ruleCache
	return o.rules.Follow(ctx, func(key string, value []byte, _ uint64) {
		if value == nil {
			c.drop(key)
			return
		}
		var rule wire.Rule
		if err := json.Unmarshal(value, &rule); err != nil || rule.ID != key {
			o.log.Warn("undecodable rule skipped", "rule", key, "error", err)
			c.drop(key)
			return
		}
		c.put(rule)
	}, func() {
		c.mu.Lock()
		c.ready = true
		c.mu.Unlock()
	}, func() {
		o.log.Warn("the watch of the rules bucket ended; rules are read from the bucket from now on")
		c.mu.Lock()
		c.ready = false
		c.mu.Unlock()
	})
}

// eachRule calls fn with every stored rule (expired ones included): from
// the cache when it is caught up, else from the bucket.
func (o *Orchestrator) eachRule(ctx context.Context, fn func(*wire.Rule)) error {
	if o.rules == nil {
		return nil
	}
	if o.ruleCache != nil {
		if rules, ok := o.ruleCache.snapshot(); ok {
			for i := range rules {
				fn(&rules[i])
			}
			return nil
		}
	}
	return o.rules.Each(ctx, func(key string, value []byte, _ uint64) error {
		var rule wire.Rule
		if err := json.Unmarshal(value, &rule); err != nil || rule.ID != key {
			o.log.Warn("undecodable rule skipped", "rule", key, "error", err)
			return nil
		}
		fn(&rule)
		return nil
	})
}

// deleteRule removes rule id from the bucket and the cache.
func (o *Orchestrator) deleteRule(ctx context.Context, id string) error {
	if err := o.rules.Delete(ctx, id); err != nil && !errors.Is(err, bus.ErrKeyNotFound) {
		return err
	}
	if o.ruleCache != nil {
		o.ruleCache.drop(id)
	}
	return nil
}

// answerByRule answers round r of t from a remembered rule when one
// applies, before the route is asked; it reports whether one did. A rule
// store that cannot be read is logged and the route goes on: a rule only
// saves someone's time.
func (o *Orchestrator) answerByRule(ctx context.Context, t *wire.Task, r *wire.Round) bool {
	rule, err := o.matchRule(ctx, t, r)
	if err != nil {
		o.log.Warn("remembered rules not read; the route goes on", "task_id", t.ID, "error", err)
		return false
	}
	if rule == nil {
		return false
	}
	by := fmt.Sprintf("rule %s (made by %s)", rule.ID, rule.By)
	_, err = o.acceptAnswer(ctx, t.ID, r.N, acceptance{value: rule.Answer, by: by, channel: RuleChannel,
		rule: &wire.RuleRef{ID: rule.ID, By: rule.By}})
	switch {
	case err == nil:
		o.log.Info("answered by a remembered rule", "task_id", t.ID, "round", r.N, "rule", rule.ID, "rule_by", rule.By)
		return true
	case errors.Is(err, wire.ErrAlreadyAnswered), errors.Is(err, wire.ErrNoQuestion):
		return true
	default:
		o.log.Warn("remembered rule not applied; the route goes on", "task_id", t.ID, "rule", rule.ID, "error", err)
		return false
	}
}

// storeRule writes a rule made by an answer.
func (o *Orchestrator) storeRule(ctx context.Context, rule wire.Rule) error {
	if o.rules == nil {
		return errors.New("no rules bucket")
	}
	data, err := json.Marshal(rule)
	if err != nil {
		return err
	}
	if _, err := o.rules.Put(ctx, rule.ID, data); err != nil {
		return err
	}
	if o.ruleCache != nil {
		o.ruleCache.put(rule)
	}
	return nil
}

// seesRule reports whether id may read rule: admins and answerers see
// every rule (they may answer every task), a token the rules on its own
// tasks.
func (id Identity) seesRule(rule *wire.Rule) bool {
	return id.Admin || id.Answerer || id.Name != "" && rule.Owner == id.Name
}

// removesRule reports whether id may delete rule: an admin, the owner of
// the tasks it answers, or the token that made it.
func (id Identity) removesRule(rule *wire.Rule) bool {
	return id.Admin || id.Name != "" && (rule.Owner == id.Name || rule.Via == id.Name || rule.Via == "" && rule.By == id.Name)
}

// readRule reads rule id as the caller of ctx may see it.
func (o *Orchestrator) readRule(ctx context.Context, id string) (*wire.Rule, error) {
	if err := CheckRuleID(id); err != nil {
		return nil, err
	}
	if o.rules == nil {
		return nil, fmt.Errorf("rule %s: %w", id, errRuleNotFound{})
	}
	data, _, err := o.rules.Get(ctx, id)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return nil, fmt.Errorf("rule %s: %w", id, errRuleNotFound{})
	}
	if err != nil {
		return nil, fmt.Errorf("read rule %s: %w", id, err)
	}
	var rule wire.Rule
	if err := json.Unmarshal(data, &rule); err != nil {
		return nil, fmt.Errorf("decode rule %s: %w: %w", id, errUndecodable, err)
	}
	if !caller(ctx).seesRule(&rule) || !o.now().Before(rule.ExpiresAt) {
		return nil, fmt.Errorf("rule %s: %w", id, errRuleNotFound{})
	}
	return &rule, nil
}

// Rule implements Rules.
func (o *Orchestrator) Rule(ctx context.Context, id string) (*wire.Rule, error) {
	return o.readRule(ctx, id)
}

// RemoveRule implements Rules.
func (o *Orchestrator) RemoveRule(ctx context.Context, id string) error {
	rule, err := o.readRule(ctx, id)
	if err != nil {
		return err
	}
	who := caller(ctx)
	if !who.removesRule(rule) {
		return fmt.Errorf("%w: rule %s answers %s's tasks and was made by %s; only they or an admin may remove it",
			ErrForbidden, id, cmp.Or(rule.Owner, OperatorName), rule.By)
	}
	if err := o.deleteRule(ctx, id); err != nil {
		return fmt.Errorf("remove rule %s: %w", id, err)
	}
	o.log.Info("rule removed", "rule", id, "by", who.actor())
	return nil
}

// Rules implements Rules: the unexpired rules the caller sees, by id, one
// page at a time (the cursor is the last id of the previous page).
func (o *Orchestrator) Rules(ctx context.Context, opts wire.PageOptions) (wire.RuleList, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = wire.DefaultPageLimit
	case limit < 0 || limit > wire.MaxPageLimit:
		return wire.RuleList{}, &wire.PageError{Param: "limit", Reason: fmt.Sprintf("%d: want 1 to %d", limit, wire.MaxPageLimit)}
	}
	if opts.Cursor != "" {
		if err := CheckRuleID(opts.Cursor); err != nil {
			return wire.RuleList{}, &wire.PageError{Param: "cursor", Reason: fmt.Sprintf("%q is not a rule id; pass the next_cursor of the previous page", clip(opts.Cursor, 80))}
		}
	}
	out := wire.RuleList{Rules: []wire.Rule{}}
	if o.rules == nil {
		return out, nil
	}
	who, now := caller(ctx), o.now()
	err := o.eachRule(ctx, func(rule *wire.Rule) {
		if rule.ID > opts.Cursor && now.Before(rule.ExpiresAt) && who.seesRule(rule) {
			out.Rules = append(out.Rules, *rule)
		}
	})
	if err != nil {
		return wire.RuleList{}, fmt.Errorf("list rules: %w", err)
	}
	slices.SortFunc(out.Rules, func(a, b wire.Rule) int { return strings.Compare(a.ID, b.ID) })
	if len(out.Rules) > limit {
		out.Rules = out.Rules[:limit]
		out.NextCursor = out.Rules[limit-1].ID
	}
	return out, nil
}
