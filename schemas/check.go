package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// validate checks the decoded document v (numbers as json.Number) against n
// and returns the problems: the leaves of the failure, the causes a person
// can act on. loc is v's JSON pointer.
func (n *node) validate(v any, loc string) []Problem {
	var out []Problem
	n.check(v, loc, &out)
	return out
}

// valid reports whether v passes n, without building messages.
func (n *node) valid(v any, loc string) bool {
	var out []Problem
	n.check(v, loc, &out)
	return len(out) == 0
}

func (n *node) check(v any, loc string, out *[]Problem) {
	fail := func(format string, args ...any) {
		*out = append(*out, Problem{Pointer: loc, Message: fmt.Sprintf(format, args...)})
	}
	if n.always != nil {
		if !*n.always {
			fail("not allowed")
		}
		return
	}
	if len(n.types) > 0 {
		vType := jsonType(v)
		matched := false
		for _, t := range n.types {
			if vType == t || (t == "integer" && vType == "number" && isInteger(v.(json.Number))) {
				matched = true
				break
			}
		}
		if !matched {
			fail("expected %s, but got %s", strings.Join(n.types, " or "), vType)
			return
		}
	}
	if len(n.constant) > 0 && !equalJSON(v, n.constant[0]) {
		switch n.constant[0].(type) {
		case map[string]any, []any:
			fail("const failed")
		default:
			fail("value must be %s", goString(n.constant[0]))
		}
	}
	if len(n.enum) > 0 && !slices.ContainsFunc(n.enum, func(x any) bool { return equalJSON(v, x) }) {
		fail("%s", n.enumError)
	}
	if n.format == "date-time" {
		if s, ok := v.(string); ok && !isDateTime(s) {
			fail("%s is not valid 'date-time'", quote(s))
		}
	}

	switch v := v.(type) {
	case map[string]any:
		if len(n.required) > 0 {
			var missing []string
			for _, name := range n.required {
				if _, ok := v[name]; !ok {
					missing = append(missing, quote(name))
				}
			}
			if len(missing) > 0 {
				fail("missing properties: %s", strings.Join(missing, ", "))
			}
		}
		for _, p := range n.properties {
			if pv, ok := v[p.name]; ok {
				p.node.check(pv, loc+"/"+escapeLocation(p.name), out)
			}
		}
		names := sortedNames(v)
		if n.propertyNames != nil {
			for _, name := range names {
				n.propertyNames.check(name, loc+"/"+escapeLocation(name), out)
			}
		}
		if n.noAdditional || n.additional != nil {
			var extra []string
			for _, name := range names {
				if !slices.ContainsFunc(n.properties, func(p property) bool { return p.name == name }) {
					extra = append(extra, name)
				}
			}
			switch {
			case n.noAdditional && len(extra) > 0:
				quoted := make([]string, len(extra))
				for i, name := range extra {
					quoted[i] = quote(name)
				}
				fail("additionalProperties %s not allowed", strings.Join(quoted, ", "))
			case n.additional != nil:
				for _, name := range extra {
					n.additional.check(v[name], loc+"/"+escapeLocation(name), out)
				}
			}
		}
	case []any:
		if n.minItems >= 0 && len(v) < n.minItems {
			fail("minimum %d items required, but found %d items", n.minItems, len(v))
		}
		if n.maxItems >= 0 && len(v) > n.maxItems {
			fail("maximum %d items required, but found %d items", n.maxItems, len(v))
		}
		if n.items != nil {
			for i, item := range v {
				n.items.check(item, loc+"/"+strconv.Itoa(i), out)
			}
		}
	case string:
		if n.minLength >= 0 || n.maxLength >= 0 {
			length := utf8.RuneCountInString(v)
			if n.minLength >= 0 && length < n.minLength {
				fail("length must be >= %d, but got %d", n.minLength, length)
			}
			if n.maxLength >= 0 && length > n.maxLength {
				fail("length must be <= %d, but got %d", n.maxLength, length)
			}
		}
		if n.pattern != nil && !n.pattern().MatchString(v) {
			fail("does not match pattern %s", quote(n.patternSource))
		}
	case json.Number:
		num, _ := new(big.Rat).SetString(string(v))
		if num == nil {
			num = new(big.Rat)
		}
		f64 := func(r *big.Rat) float64 { f, _ := r.Float64(); return f }
		if n.minimum != nil && num.Cmp(n.minimum) < 0 {
			fail("must be >= %v but found %v", f64(n.minimum), v)
		}
		if n.exclusiveMinimum != nil && num.Cmp(n.exclusiveMinimum) <= 0 {
			fail("must be > %v but found %v", f64(n.exclusiveMinimum), v)
		}
		if n.maximum != nil && num.Cmp(n.maximum) > 0 {
			fail("must be <= %v but found %v", f64(n.maximum), v)
		}
		if n.exclusiveMaximum != nil && num.Cmp(n.exclusiveMaximum) >= 0 {
			fail("must be < %v but found %v", f64(n.exclusiveMaximum), v)
		}
	}

	// The in-place applicators: the same value against more schemas.
	if n.ref != nil {
		n.ref.check(v, loc, out)
	}
	if n.not != nil && n.not.valid(v, loc) {
		fail("not failed")
	}
	for _, s := range n.allOf {
		s.check(v, loc, out)
	}
	if len(n.anyOf) > 0 {
		var causes []Problem
		matched := false
		for _, s := range n.anyOf {
			p := s.validate(v, loc)
			if len(p) == 0 {
				matched = true
				break
			}
			causes = append(causes, p...)
		}
		if !matched {
			*out = append(*out, causes...)
		}
	}
	if len(n.oneOf) > 0 {
		matched := -1
		var causes []Problem
		for i, s := range n.oneOf {
			p := s.validate(v, loc)
			if len(p) > 0 {
				causes = append(causes, p...)
				continue
			}
			if matched >= 0 {
				fail("valid against schemas at indexes %d and %d", matched, i)
				break
			}
			matched = i
		}
		if matched < 0 {
			*out = append(*out, causes...)
		}
	}
	if n.ifNode != nil {
		if n.ifNode.valid(v, loc) {
			if n.thenNode != nil {
				n.thenNode.check(v, loc, out)
			}
		} else if n.elseNode != nil {
			n.elseNode.check(v, loc, out)
		}
	}
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func isInteger(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// equalJSON compares two decoded JSON values; numbers by value.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okx := new(big.Rat).SetString(string(a))
		y, oky := new(big.Rat).SetString(string(b))
		return okx && oky && x.Cmp(y) == 0
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equalJSON)
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// quote single-quotes s as the reference validator's messages do.
func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q[1:len(q)-1] + "'"
}

// escapeLocation is one token of an instance location: a JSON pointer token,
// URL-path-escaped as the reference validator writes it.
func escapeLocation(tok string) string {
	return url.PathEscape(escapePointer(tok))
}

// isDateTime is RFC 3339's date-time: a full-date, 'T', a full-time (with
// a leap second allowed only at 23:59 UTC).
func isDateTime(s string) bool {
	if len(s) < 20 || (s[10] != 'T' && s[10] != 't') {
		return false
	}
	if _, err := time.Parse("2006-01-02", s[:10]); err != nil {
		return false
	}
	return isTime(s[11:])
}

func isTime(str string) bool {
	if len(str) < 9 || str[2] != ':' || str[5] != ':' {
		return false
	}
	inRange := func(str string, lo, hi int) (int, bool) {
		n, err := strconv.Atoi(str)
		return n, err == nil && n >= lo && n <= hi
	}
	h, ok := inRange(str[0:2], 0, 23)
	if !ok {
		return false
	}
	m, ok := inRange(str[3:5], 0, 59)
	if !ok {
		return false
	}
	sec, ok := inRange(str[6:8], 0, 60)
	if !ok {
		return false
	}
	str = str[8:]
	if str[0] == '.' {
		str = str[1:]
		digits := 0
		for str != "" && str[0] >= '0' && str[0] <= '9' {
			digits++
			str = str[1:]
		}
		if digits == 0 {
			return false
		}
	}
	if str == "" {
		return false
	}
	if str[0] == 'z' || str[0] == 'Z' {
		if len(str) != 1 {
			return false
		}
	} else {
		if len(str) != 6 || str[3] != ':' {
			return false
		}
		var sign int
		switch str[0] {
		case '+':
			sign = -1
		case '-':
			sign = +1
		default:
			return false
		}
		zh, ok := inRange(str[1:3], 0, 23)
		if !ok {
			return false
		}
		zm, ok := inRange(str[4:6], 0, 59)
		if !ok {
			return false
		}
		hm := (h*60 + m) + sign*(zh*60+zm)
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	return sec != 60 || (h == 23 && m == 59)
}
