package answer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agoradev/agora/schemas"
)

// Rule is one lookup rule. A rule matches a question when Question (an RE2
// regular expression, case-insensitive, unanchored) matches its text, Options
// (when given) equals its option set ignoring order, and Subagent (when
// given) names the asking sub-agent. Answer must be one of Options when they
// are given, and one of the question's options when it has some.
type Rule struct {
	Question string   `json:"question" yaml:"question"`
	Options  []string `json:"options,omitempty" yaml:"options,omitempty"`
	Subagent string   `json:"subagent,omitempty" yaml:"subagent,omitempty"`
	Answer   string   `json:"answer" yaml:"answer"`
}

// ruleFields are the keys a rule may have; others are load errors.
var ruleFields = []string{"question", "options", "subagent", "answer"}

type compiledRule struct {
	Rule
	re *regexp.Regexp
}

// Lookup answers from a fixed list of rules: the first matching rule wins.
type Lookup struct {
	name  string
	rules []compiledRule
}

var _ Answerer = (*Lookup)(nil)

// LoadRules reads a rules file: a JSON (.json) or YAML (.yaml, .yml) list of
// rules. Errors name the file, the rule (1-based) and the field:
//
//	rules.yaml: rule 3: question: error parsing regexp: missing closing ): `(a`
func LoadRules(path string) (*Lookup, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	return parseRules(path, b)
}

// parseRules reads the content b of the rules file path.
func parseRules(path string, b []byte) (*Lookup, error) {
	var rules []Rule
	var err error
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		rules, err = parseJSONRules(b)
	case ".yaml", ".yml":
		rules, err = parseYAMLRules(b)
	default:
		err = fmt.Errorf("unsupported extension %q (want .json, .yaml or .yml)", ext)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return NewLookup(path, rules)
}

// NewLookup compiles rules; name appears in errors and in Reply.By
// ("lookup: <name> rule <n>").
func NewLookup(name string, rules []Rule) (*Lookup, error) {
	l := &Lookup{name: name, rules: make([]compiledRule, 0, len(rules))}
	for i, r := range rules {
		c, err := compileRule(r)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %d: %w", name, i+1, err)
		}
		l.rules = append(l.rules, c)
	}
	return l, nil
}

func compileRule(r Rule) (compiledRule, error) {
	if schemas.Blank(r.Question) {
		return compiledRule{}, fmt.Errorf("question: required")
	}
	if _, err := regexp.Compile(r.Question); err != nil { // the error quotes the pattern as written
		return compiledRule{}, fmt.Errorf("question: %w", err)
	}
	re, err := regexp.Compile("(?i)" + r.Question)
	if err != nil {
		return compiledRule{}, fmt.Errorf("question: %w", err)
	}
	if r.Options != nil {
		if len(r.Options) == 0 {
			return compiledRule{}, fmt.Errorf("options: empty list (leave the field out to match any options)")
		}
		for j, o := range r.Options {
			if schemas.Blank(o) {
				return compiledRule{}, fmt.Errorf("options: option %d is blank", j+1)
			}
			if slices.Contains(r.Options[:j], o) {
				return compiledRule{}, fmt.Errorf("options: %q appears twice", o)
			}
		}
	}
	r.Answer = schemas.TrimSpace(r.Answer)
	if r.Answer == "" {
		return compiledRule{}, fmt.Errorf("answer: required")
	}
	if r.Options != nil {
		opt, ok := matchOption(r.Options, r.Answer)
		if !ok {
			return compiledRule{}, fmt.Errorf("answer: %q is not one of: %s", r.Answer, strings.Join(r.Options, ", "))
		}
		r.Answer = opt
	}
	return compiledRule{Rule: r, re: re}, nil
}

// Ask implements Answerer: the first rule that matches q answers it.
func (l *Lookup) Ask(ctx context.Context, q Question) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	for i, r := range l.rules {
		if r.Subagent != "" && r.Subagent != q.Subagent {
			continue
		}
		if r.Options != nil && !sameSet(r.Options, q.Options) {
			continue
		}
		if !r.re.MatchString(q.Question) {
			continue
		}
		a := r.Answer
		if len(q.Options) > 0 {
			opt, ok := matchOption(q.Options, a)
			if !ok { // a rule without options whose answer does not fit
				continue
			}
			a = opt
		}
		return Reply{Answer: a, By: fmt.Sprintf("lookup: %s rule %d", l.name, i+1)}, nil
	}
	return Reply{}, fmt.Errorf("%w: no rule in %s matches", ErrDecline, l.name)
}

// sameSet reports whether a and b hold the same strings, ignoring order and
// duplicates.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// parseJSONRules reads a JSON rules file as every outside document is read
// (schemas.DecodeKnown: exact names, no duplicate keys, unknown fields
// refused), naming the rule and the field of a problem.
func parseJSONRules(b []byte) ([]Rule, error) {
	var rules []Rule
	err := schemas.DecodeKnown("rules", b, &rules)
	if err == nil {
		return rules, nil
	}
	ve, ok := errors.AsType[*schemas.ValidationError](err)
	if !ok || len(ve.Problems) == 0 {
		return nil, err
	}
	p := ve.Problems[0]
	idx, field, _ := strings.Cut(strings.TrimPrefix(p.Pointer, "/"), "/")
	n, nerr := strconv.Atoi(idx)
	switch {
	case p.Pointer == "" || nerr != nil:
		return nil, fmt.Errorf("want a JSON list of rules: %s", p.Message)
	case field == "" && strings.HasPrefix(p.Message, "expected an object"):
		return nil, fmt.Errorf("rule %d: not an object", n+1)
	case field == "":
		return nil, fmt.Errorf("rule %d: %s", n+1, p.Message)
	}
	return nil, fmt.Errorf("rule %d: %s: %s", n+1, strings.ReplaceAll(field, "/", "."), p.Message)
}

func parseYAMLRules(b []byte) ([]Rule, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 { // empty file
		return nil, nil
	}
	list := &doc
	if list.Kind == yaml.DocumentNode && len(list.Content) == 1 {
		list = list.Content[0]
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: want a YAML list of rules", list.Line)
	}
	rules := make([]Rule, len(list.Content))
	for i, n := range list.Content {
		n = deref(n)
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("rule %d: line %d: not a mapping", i+1, n.Line)
		}
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j], deref(n.Content[j+1])
			if !slices.Contains(ruleFields, k.Value) {
				return nil, fmt.Errorf("rule %d: line %d: unknown field %q (want %s)", i+1, k.Line, k.Value, strings.Join(ruleFields, ", "))
			}
			var err error
			switch k.Value {
			case "question":
				err = decodeYAMLString(v, &rules[i].Question)
			case "subagent":
				err = decodeYAMLString(v, &rules[i].Subagent)
			case "answer":
				err = decodeYAMLString(v, &rules[i].Answer)
			case "options":
				if v.Kind != yaml.SequenceNode {
					err = fmt.Errorf("line %d: want a list of strings", v.Line)
					break
				}
				rules[i].Options = make([]string, len(v.Content))
				for o, e := range v.Content {
					if err = decodeYAMLString(deref(e), &rules[i].Options[o]); err != nil {
						break
					}
				}
			}
			if err != nil {
				return nil, fmt.Errorf("rule %d: %s: %w", i+1, k.Value, err)
			}
		}
	}
	return rules, nil
}

// decodeYAMLString takes a scalar's text as written, so "answer: 2" and
// "answer: yes" are the strings "2" and "yes".
func decodeYAMLString(n *yaml.Node, s *string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("line %d: want a string", n.Line)
	}
	*s = n.Value
	return nil
}

// deref follows a YAML alias to its anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
