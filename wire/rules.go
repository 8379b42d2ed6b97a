package wire

import "time"

// Rule scope kinds (Remember.Scope, RuleScope.Kind).
const (
	// RuleScopeSubagent: questions of the same sub-agent (by name, so a
	// new version of it is answered too).
	RuleScopeSubagent = "subagent"
	// RuleScopeLabel: questions of tasks carrying one label KEY=VALUE,
	// whatever their sub-agent.
	RuleScopeLabel = "label"
	// RuleScopeOwner: questions of every task of the owner.
	RuleScopeOwner = "owner"
)

// Rule expiry: a rule made without an expiry lasts DefaultRuleTTL; none
// lasts longer than MaxRuleTTL.
const (
	DefaultRuleTTL = 30 * 24 * time.Hour
	MaxRuleTTL     = 180 * 24 * time.Hour
)

// Remember asks that an answer also become a rule: the same answer, given
// at once, to the next questions like it (same text after normalisation,
// same options) within the scope, until the rule expires
// (docs/answerers.md, "Remembered answers").
type Remember struct {
	// Scope is "subagent" (the default: the answered task's sub-agent),
	// "label:KEY=VALUE" (tasks with that label; the answered task must
	// carry it) or "owner" (every task of the answered task's owner).
	Scope string `json:"scope,omitempty"`
	// ExpiresInSeconds is how long the rule lasts: 0 means DefaultRuleTTL;
	// more than MaxRuleTTL is refused.
	ExpiresInSeconds int64 `json:"expires_in_seconds,omitempty"`
}

// RuleScope is which questions a rule may answer. Every rule is also
// confined to the tasks of one owner (Rule.Owner): owners are kept apart.
type RuleScope struct {
	// Kind is one of the RuleScope constants.
	Kind string `json:"kind"`
	// Subagent names the sub-agent, for kind "subagent".
	Subagent string `json:"subagent,omitempty"`
	// Label is KEY=VALUE, for kind "label".
	Label string `json:"label,omitempty"`
}

// String renders the scope as Remember.Scope reads it.
func (s RuleScope) String() string {
	switch s.Kind {
	case RuleScopeSubagent:
		return "subagent:" + s.Subagent
	case RuleScopeLabel:
		return "label:" + s.Label
	}
	return s.Kind
}

// Rule is a remembered answer: a lookup rule someone made by answering
// with Remember. It answers, before the task's route is asked, each later
// question whose normalised text and option set are the same, on a task
// of the same owner within its scope, until it expires.
type Rule struct {
	ID string `json:"id"`
	// Question and Options are the question as it was asked; a question
	// matches when its text is the same once trimmed, case-folded, its
	// white space collapsed and its trailing punctuation dropped, and its
	// options are the same set.
	Question string    `json:"question"`
	Options  []string  `json:"options,omitempty"`
	Answer   string    `json:"answer"`
	Scope    RuleScope `json:"scope"`
	// Owner is the owner of the answered task; the rule answers that
	// owner's tasks only ("" is the operator's, as Task.Owner).
	Owner string `json:"owner,omitempty"`
	// By made the rule (who answered); Via is the token that vouched for
	// By, when it is not By itself.
	By        string    `json:"by"`
	Via       string    `json:"via,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// FromTask and FromRound are the answer it was made from.
	FromTask  string `json:"from_task"`
	FromRound int    `json:"from_round"`
}

// RuleRef names the rule that gave an answer, and who made it.
type RuleRef struct {
	ID string `json:"id"`
	By string `json:"by"`
}

// RuleList is the body of GET /v1/rules: one page of the rules the token
// may see, ordered by id.
type RuleList struct {
	// Rules is never null.
	Rules []Rule `json:"rules"`
	// NextCursor, when set, fetches the next page (?cursor=).
	NextCursor string `json:"next_cursor,omitempty"`
}
