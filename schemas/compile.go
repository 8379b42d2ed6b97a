package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file is the JSON Schema validator behind Validate: the part of draft
// 2020-12 that agora's own schemas use (format assertions on), compiled one
// schema at a time, on first use, with only the documents its $refs reach.
//
// It exists for the worker: github.com/santhosh-tekuri/jsonschema/v5 compiles
// every draft's meta-schema in its package init (2–3 ms of every worker
// process's start) and a first compilation cost another 5–8 ms, against a
// whole dispatch of a few. The messages are the ones that library gives, so
// a Problem reads the same; TestValidatorMatchesReference checks both agree
// on every fixture and on generated documents, and the compiler refuses a
// keyword it does not implement, so a schema cannot silently outgrow it.

// node is one compiled (sub)schema.
type node struct {
	always *bool // a boolean schema

	types     []string
	constant  []any // 0 or 1 value
	enum      []any
	enumError string
	format    string // "" or "date-time"

	required      []string
	properties    []property // in the schema's order
	propertyNames *node
	additional    *node // additionalProperties as a schema
	noAdditional  bool  // additionalProperties: false

	minItems, maxItems int // -1: unset
	items              *node

	minLength, maxLength int // -1: unset
	// pattern is compiled on its first match: a bounded repetition such as
	// sha256's {64} costs a tenth of a millisecond to compile, and most
	// documents never reach most patterns.
	pattern       func() *regexp.Regexp
	patternSource string

	minimum, exclusiveMinimum, maximum, exclusiveMaximum *big.Rat

	ref                 *node
	not                 *node
	allOf, anyOf, oneOf []*node
	ifNode, thenNode    *node
	elseNode            *node
}

type property struct {
	name string
	node *node
}

// annotations are keywords that do not validate.
var annotations = []string{"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}

// compiler compiles one schema: the documents its $refs reach are loaded
// once each, and a node reached twice (or recursively) is compiled once.
type compiler struct {
	load  func(name string) ([]byte, error)
	docs  map[string]any   // file name → decoded document
	nodes map[string]*node // file#pointer → node
}

// compileSchema compiles the schema called name from this package's files.
func compileSchema(name string) (*node, error) {
	c := &compiler{
		load:  func(file string) ([]byte, error) { return files.ReadFile(file) },
		docs:  map[string]any{},
		nodes: map[string]*node{},
	}
	n, err := c.resolve(name+".schema.json", "")
	if err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", name, err)
	}
	return n, nil
}

// resolve compiles the subschema at the JSON pointer ptr of file.
func (c *compiler) resolve(file, ptr string) (*node, error) {
	key := file + "#" + ptr
	if n, ok := c.nodes[key]; ok {
		return n, nil
	}
	doc, ok := c.docs[file]
	if !ok {
		data, err := c.load(file)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", file, err)
		}
		if doc, err = decodeJSON(data); err != nil {
			return nil, fmt.Errorf("decode %s: %w", file, err)
		}
		c.docs[file] = doc
	}
	v := doc
	if ptr != "" {
		for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := v.(type) {
			case map[string]any:
				v, ok = x[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				ok = err == nil && i >= 0 && i < len(x)
				if ok {
					v = x[i]
				}
			default:
				ok = false
			}
			if !ok {
				return nil, fmt.Errorf("%s: no %s", file, ptr)
			}
		}
	}
	n := &node{}
	c.nodes[key] = n // before compiling: a recursive $ref finds it
	if err := c.compile(n, file, ptr, v); err != nil {
		return nil, err
	}
	return n, nil
}

// compile fills n from the schema value v found at file#ptr.
func (c *compiler) compile(n *node, file, ptr string, v any) error {
	where := func(kw string) string { return file + "#" + ptr + "/" + kw }
	if b, ok := v.(bool); ok {
		n.always = &b
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s#%s: a schema is an object or a boolean", file, ptr)
	}
	sub := func(kw string) (*node, error) {
		if _, ok := m[kw]; !ok {
			return nil, nil
		}
		return c.resolve(file, ptr+"/"+kw)
	}
	subs := func(kw string) ([]*node, error) {
		list, ok := m[kw].([]any)
		if !ok {
			if _, present := m[kw]; present {
				return nil, fmt.Errorf("%s: want an array", where(kw))
			}
			return nil, nil
		}
		out := make([]*node, len(list))
		for i := range list {
			s, err := c.resolve(file, ptr+"/"+kw+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	count := func(kw string) (int, error) {
		raw, ok := m[kw]
		if !ok {
			return -1, nil
		}
		num, ok := raw.(json.Number)
		k, err := strconv.Atoi(string(num))
		if !ok || err != nil || k < 0 {
			return 0, fmt.Errorf("%s: want a non-negative integer", where(kw))
		}
		return k, nil
	}
	rat := func(kw string) (*big.Rat, error) {
		raw, ok := m[kw]
		if !ok {
			return nil, nil
		}
		num, ok := raw.(json.Number)
		r, good := new(big.Rat).SetString(string(num))
		if !ok || !good {
			return nil, fmt.Errorf("%s: want a number", where(kw))
		}
		return r, nil
	}
	strs := func(kw string) ([]string, error) {
		raw, ok := m[kw]
		if !ok {
			return nil, nil
		}
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an array of strings", where(kw))
		}
		out := make([]string, len(list))
		for i, x := range list {
			if out[i], ok = x.(string); !ok {
				return nil, fmt.Errorf("%s: want an array of strings", where(kw))
			}
		}
		return out, nil
	}

	n.minItems, n.maxItems, n.minLength, n.maxLength = -1, -1, -1, -1
	var err error
	var errs []error
	keep := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	for kw, raw := range m {
		switch kw {
		case "type":
			switch t := raw.(type) {
			case string:
				n.types = []string{t}
			default:
				n.types, err = strs("type")
				keep(err)
			}
		case "const":
			n.constant = []any{raw}
		case "enum":
			list, ok := raw.([]any)
			if !ok || len(list) == 0 {
				keep(fmt.Errorf("%s: want a non-empty array", where(kw)))
				continue
			}
			n.enum = list
			n.enumError = enumError(list)
		case "format":
			if raw != "date-time" {
				keep(fmt.Errorf("%s: format %v is not implemented (only date-time)", where(kw), raw))
			}
			n.format = "date-time"
		case "required":
			n.required, err = strs(kw)
			keep(err)
		case "properties":
			props, ok := raw.(map[string]any)
			if !ok {
				keep(fmt.Errorf("%s: want an object", where(kw)))
				continue
			}
			names := make([]string, 0, len(props))
			for name := range props {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				s, err := c.resolve(file, ptr+"/properties/"+escapePointer(name))
				keep(err)
				n.properties = append(n.properties, property{name: name, node: s})
			}
		case "propertyNames":
			n.propertyNames, err = sub(kw)
			keep(err)
		case "additionalProperties":
			if b, ok := raw.(bool); ok {
				if !b {
					n.noAdditional = true
				}
				continue
			}
			n.additional, err = sub(kw)
			keep(err)
		case "items":
			n.items, err = sub(kw)
			keep(err)
		case "minItems":
			n.minItems, err = count(kw)
			keep(err)
		case "maxItems":
			n.maxItems, err = count(kw)
			keep(err)
		case "minLength":
			n.minLength, err = count(kw)
			keep(err)
		case "maxLength":
			n.maxLength, err = count(kw)
			keep(err)
		case "pattern":
			p, ok := raw.(string)
			if !ok {
				keep(fmt.Errorf("%s: want a string", where(kw)))
				continue
			}
			// Checked now, compiled when first needed.
			if _, err := syntax.Parse(p, syntax.Perl); err != nil {
				keep(fmt.Errorf("%s: %w", where(kw), err))
				continue
			}
			n.patternSource = p
			n.pattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(p) })
		case "minimum":
			n.minimum, err = rat(kw)
			keep(err)
		case "exclusiveMinimum":
			n.exclusiveMinimum, err = rat(kw)
			keep(err)
		case "maximum":
			n.maximum, err = rat(kw)
			keep(err)
		case "exclusiveMaximum":
			n.exclusiveMaximum, err = rat(kw)
			keep(err)
		case "$ref":
			ref, ok := raw.(string)
			if !ok {
				keep(fmt.Errorf("%s: want a string", where(kw)))
				continue
			}
			target, frag, _ := strings.Cut(ref, "#")
			if target == "" {
				target = file
			} else {
				target = strings.TrimPrefix(target, baseURL)
			}
			if frag != "" && !strings.HasPrefix(frag, "/") {
				keep(fmt.Errorf("%s: %q: only JSON-pointer fragments are implemented", where(kw), ref))
				continue
			}
			n.ref, err = c.resolve(target, frag)
			keep(err)
		case "not":
			n.not, err = sub(kw)
			keep(err)
		case "allOf":
			n.allOf, err = subs(kw)
			keep(err)
		case "anyOf":
			n.anyOf, err = subs(kw)
			keep(err)
		case "oneOf":
			n.oneOf, err = subs(kw)
			keep(err)
		case "if":
			n.ifNode, err = sub(kw)
			keep(err)
		case "then":
			n.thenNode, err = sub(kw)
			keep(err)
		case "else":
			n.elseNode, err = sub(kw)
			keep(err)
		default:
			if !slices.Contains(annotations, kw) {
				keep(fmt.Errorf("%s: keyword not implemented by agora's validator", where(kw)))
			}
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// enumError is the message for a value outside enum.
func enumError(list []any) string {
	for _, x := range list {
		switch x.(type) {
		case map[string]any, []any:
			return "enum failed"
		}
	}
	if len(list) == 1 {
		return fmt.Sprintf("value must be %s", goString(list[0]))
	}
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = goString(x)
	}
	return "value must be one of " + strings.Join(parts, ", ")
}

// goString renders a JSON scalar as Go's %#v does for the decoded value.
func goString(v any) string {
	return fmt.Sprintf("%#v", v)
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
