package schemas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The limits every reader of an outside document applies (docs/contract.md,
// "Reading JSON"). A reader may cap a document's bytes lower (a sentinel,
// an API body, a registry file: 1 MiB each); none reads more.
const (
	// MaxDepth is the deepest nesting of arrays and objects in a document:
	// the document itself is level 1, so {"a":[1]} is 2 deep.
	MaxDepth = 64
	// MaxDocumentBytes is the largest document Decode reads.
	MaxDocumentBytes = 16 << 20
)

// Decode reads data, one JSON document from outside agora, into v (a
// non-nil pointer) the way the JSON Schemas read it, not the way Go's
// encoding/json does:
//
//   - a member sets the field whose json tag is exactly its name (case
//     matters); members no field names are ignored (the schema decides
//     whether they are allowed);
//   - a key repeated in one object is refused, naming it;
//   - an integer is any number with a zero fraction (2.0 and 1e2 are
//     integers, 2.5 is not); one out of the field's range is refused,
//     naming the range;
//   - nesting deeper than MaxDepth and documents over MaxDocumentBytes
//     are refused, as is invalid UTF-8 and anything after the value.
//
// what names the document in errors ("dispatch spec"). A refused document
// yields a *ValidationError whose problem names the member by JSON pointer
// and says what was expected, never a Go type.
func Decode(what string, data []byte, v any) error {
	return decode(what, data, v, false)
}

// DecodeKnown is Decode for documents whose schema allows no other
// members (a registry file, an env bundle): a member no field names is
// refused, naming it and the known ones.
func DecodeKnown(what string, data []byte, v any) error {
	return decode(what, data, v, true)
}

func decode(what string, data []byte, v any, known bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode %s: need a non-nil pointer", what)
	}
	doc, err := parseStrict(data)
	if err != nil {
		return decodeProblem(what, err)
	}
	d := decoder{known: known}
	if err := d.assign(doc, rv.Elem(), ""); err != nil {
		return decodeProblem(what, err)
	}
	return nil
}

// Detail is the problems without the "invalid <what>:" prefix, for a
// message that names the document itself; a problem with the whole
// document is its message alone.
func (e *ValidationError) Detail() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
		if p.Pointer == "" {
			parts[i] = p.Message
		}
	}
	return strings.Join(parts, "; ")
}

// decoder maps a parsed document onto Go values.
type decoder struct {
	known bool // refuse object members no struct field names
}

func decodeProblem(what string, err error) error {
	var pe *pointerError
	if errors.As(err, &pe) {
		return &ValidationError{What: what, Problems: []Problem{{Pointer: pe.ptr, Message: pe.msg}}}
	}
	return &ValidationError{What: what, Problems: []Problem{{Message: err.Error()}}}
}

// pointerError is one problem at a JSON pointer.
type pointerError struct{ ptr, msg string }

func (e *pointerError) Error() string { return e.ptr + ": " + e.msg }

func problemAt(ptr, format string, args ...any) error {
	return &pointerError{ptr: ptr, msg: fmt.Sprintf(format, args...)}
}

// jvalue is one parsed JSON value with the bytes it was written as.
type jvalue struct {
	kind  byte   // '{', '[', '"', '0' (number), 't' (true/false), 'n' (null)
	text  string // a string's value or a number as written
	b     bool
	keys  []string
	vals  []*jvalue // object members (with keys) or array elements
	raw   []byte
	index map[string]int // key → position, for objects with many members
}

// parseStrict parses data as exactly one JSON value, refusing duplicate
// keys, nesting beyond MaxDepth, invalid UTF-8 and trailing data.
func parseStrict(data []byte) (*jvalue, error) {
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("larger than the %d-byte limit on a JSON document", MaxDocumentBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	p := &scanner{data: data}
	v, err := p.value("", 0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(data) {
		return nil, errors.New("not valid JSON: unexpected data after the JSON value (want exactly one value)")
	}
	return v, nil
}

// scanner is a recursive-descent JSON parser over a whole document.
type scanner struct {
	data []byte
	i    int
}

func (p *scanner) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// syntax reports a syntax error in encoding/json's words ("invalid
// character 'i' looking for beginning of object key string"), at the
// 1-based position of the offending byte.
func (p *scanner) syntax() error {
	if p.i >= len(p.data) {
		return errors.New("not valid JSON: the document ends early")
	}
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(p.data, new(json.RawMessage)), &se) {
		if se.Offset >= int64(len(p.data)) && strings.Contains(se.Error(), "end of JSON input") {
			return errors.New("not valid JSON: the document ends early")
		}
		return fmt.Errorf("not valid JSON at byte %d: %s", se.Offset, se.Error())
	}
	return fmt.Errorf("not valid JSON at byte %d: unexpected %q", p.i+1, p.data[p.i])
}

func (p *scanner) peek() byte {
	if p.i < len(p.data) {
		return p.data[p.i]
	}
	return 0
}

func (p *scanner) value(ptr string, depth int) (*jvalue, error) {
	p.space()
	if p.i >= len(p.data) {
		return nil, p.syntax()
	}
	start := p.i
	v := &jvalue{}
	switch c := p.data[p.i]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return nil, problemAt(ptr, "nested more than %d levels deep (the limit on every JSON document agora reads)", MaxDepth)
		}
		v.kind = c
		p.i++
		p.space()
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if p.peek() == end {
			p.i++
			break
		}
		for n := 0; ; n++ {
			if c == '{' {
				p.space()
				if p.peek() != '"' {
					return nil, p.syntax()
				}
				key, err := p.str()
				if err != nil {
					return nil, err
				}
				if v.has(key) {
					return nil, problemAt(ptr, "key %q appears more than once (a key may appear once in an object)", key)
				}
				p.space()
				if p.peek() != ':' {
					return nil, p.syntax()
				}
				p.i++
				child, err := p.value(ptr+"/"+pointerToken(key), depth+1)
				if err != nil {
					return nil, err
				}
				v.add(key, child)
			} else {
				child, err := p.value(ptr+"/"+strconv.Itoa(n), depth+1)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, child)
			}
			p.space()
			switch p.peek() {
			case ',':
				p.i++
				continue
			case end:
				p.i++
			default:
				return nil, p.syntax()
			}
			break
		}
	case c == '"':
		text, err := p.str()
		if err != nil {
			return nil, err
		}
		v.kind, v.text = '"', text
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.i:], []byte(lit)) {
				p.i += len(lit)
				v.kind, v.b = 't', lit == "true"
				if lit == "null" {
					v.kind = 'n'
				}
				break
			}
		}
		if v.kind == 0 {
			return nil, p.syntax()
		}
	case c == '-' || c >= '0' && c <= '9':
		if err := p.number(); err != nil {
			return nil, err
		}
		v.kind, v.text = '0', string(p.data[start:p.i])
	default:
		return nil, p.syntax()
	}
	v.raw = p.data[start:p.i]
	return v, nil
}

// str reads the string at p.i (a '"').
func (p *scanner) str() (string, error) {
	start := p.i
	escaped := false
	for j := p.i + 1; j < len(p.data); j++ {
		switch c := p.data[j]; {
		case c == '"':
			p.i = j + 1
			if !escaped {
				return string(p.data[start+1 : j]), nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.i], &s); err != nil {
				p.i = start
				return "", p.syntax()
			}
			return s, nil
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			p.i = j
			return "", p.syntax()
		}
	}
	p.i = len(p.data)
	return "", p.syntax()
}

// number reads a number at p.i by JSON's grammar.
func (p *scanner) number() error {
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		return p.syntax()
	}
	if p.peek() == '.' {
		p.i++
		if digits() == 0 {
			return p.syntax()
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if digits() == 0 {
			return p.syntax()
		}
	}
	return nil
}

func (v *jvalue) has(key string) bool {
	if v.index != nil {
		_, ok := v.index[key]
		return ok
	}
	for _, k := range v.keys {
		if k == key {
			return true
		}
	}
	return false
}

func (v *jvalue) add(key string, child *jvalue) {
	v.keys = append(v.keys, key)
	v.vals = append(v.vals, child)
	if v.index == nil && len(v.keys) > 16 {
		v.index = make(map[string]int, 2*len(v.keys))
		for i, k := range v.keys {
			v.index[k] = i
		}
	} else if v.index != nil {
		v.index[key] = len(v.keys) - 1
	}
}

func pointerToken(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// describe names a JSON value's type the way JSON Schema does.
func (v *jvalue) describe() string {
	switch v.kind {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't':
		return "a boolean"
	}
	return "null"
}

// plain turns v into the values encoding/json gives an `any` with
// UseNumber: numbers stay json.Number, exact.
func (v *jvalue) plain() (any, error) {
	switch v.kind {
	case '{':
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			x, err := v.vals[i].plain()
			if err != nil {
				return nil, err
			}
			m[k] = x
		}
		return m, nil
	case '[':
		a := make([]any, len(v.vals))
		for i, e := range v.vals {
			x, err := e.plain()
			if err != nil {
				return nil, err
			}
			a[i] = x
		}
		return a, nil
	case '"':
		return v.text, nil
	case '0':
		return json.Number(v.text), nil
	case 't':
		return v.b, nil
	}
	return nil, nil
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
	unmarshalerT   = reflect.TypeFor[json.Unmarshaler]()
)

// assign stores v into rv, which is settable.
func (d decoder) assign(v *jvalue, rv reflect.Value, ptr string) error {
	t := rv.Type()
	if t == rawMessageType {
		rv.SetBytes(bytes.Clone(v.raw))
		return nil
	}
	if v.kind == 'n' {
		switch rv.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
			rv.SetZero()
		}
		return nil // as encoding/json: null leaves other values alone
	}
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		return d.assign(v, rv.Elem(), ptr)
	}
	if t == timeType {
		if v.kind != '"' {
			return problemAt(ptr, "expected a date-time string (RFC 3339), got %s", v.describe())
		}
		tm, err := time.Parse(time.RFC3339Nano, v.text)
		if err != nil {
			return problemAt(ptr, "expected a date-time (RFC 3339, e.g. 2026-01-02T15:04:05Z), got %q", v.text)
		}
		rv.Set(reflect.ValueOf(tm))
		return nil
	}
	if rv.CanAddr() && reflect.PointerTo(t).Implements(unmarshalerT) {
		if err := rv.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(v.raw); err != nil {
			return problemAt(ptr, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return nil
	}
	switch rv.Kind() {
	case reflect.Struct:
		if v.kind != '{' {
			return problemAt(ptr, "expected an object, got %s", v.describe())
		}
		fields := fieldsOf(t)
		for i, k := range v.keys {
			idx, ok := fields[k]
			if !ok {
				if d.known {
					return problemAt(ptr, "unknown field %q (known: %s)", k, strings.Join(sortedKeys(fields), ", "))
				}
				continue
			}
			f, err := fieldByIndex(rv, idx)
			if err != nil {
				return err
			}
			if err := d.assign(v.vals[i], f, ptr+"/"+pointerToken(k)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if v.kind != '{' {
			return problemAt(ptr, "expected an object, got %s", v.describe())
		}
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("decode: map key type %s is not supported", t.Key())
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMapWithSize(t, len(v.keys)))
		}
		for i, k := range v.keys {
			e := reflect.New(t.Elem()).Elem()
			if err := d.assign(v.vals[i], e, ptr+"/"+pointerToken(k)); err != nil {
				return err
			}
			rv.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
		}
		return nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if v.kind != '"' {
				return problemAt(ptr, "expected a base64 string, got %s", v.describe())
			}
			b, err := base64.StdEncoding.DecodeString(v.text)
			if err != nil {
				return problemAt(ptr, "expected base64 (RFC 4648), got %q", v.text)
			}
			rv.SetBytes(b)
			return nil
		}
		if v.kind != '[' {
			return problemAt(ptr, "expected an array, got %s", v.describe())
		}
		s := reflect.MakeSlice(t, len(v.vals), len(v.vals))
		for i, e := range v.vals {
			if err := d.assign(e, s.Index(i), ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		rv.Set(s)
		return nil
	case reflect.Array:
		if v.kind != '[' {
			return problemAt(ptr, "expected an array, got %s", v.describe())
		}
		if len(v.vals) != rv.Len() {
			return problemAt(ptr, "expected an array of %d items, got %d", rv.Len(), len(v.vals))
		}
		for i, e := range v.vals {
			if err := d.assign(e, rv.Index(i), ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Interface:
		if rv.NumMethod() != 0 {
			return fmt.Errorf("decode: interface type %s is not supported", t)
		}
		x, err := v.plain()
		if err != nil {
			return err
		}
		rv.Set(reflect.ValueOf(&x).Elem())
		return nil
	case reflect.String:
		if v.kind != '"' {
			return problemAt(ptr, "expected a string, got %s", v.describe())
		}
		rv.SetString(v.text)
		return nil
	case reflect.Bool:
		if v.kind != 't' {
			return problemAt(ptr, "expected a boolean, got %s", v.describe())
		}
		rv.SetBool(v.b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		lo, hi := -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		n, err := integer(v, ptr, lo, hi)
		if err != nil {
			return err
		}
		rv.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		hi := int64(math.MaxInt64)
		if t.Bits() < 64 {
			hi = int64(1)<<t.Bits() - 1
		}
		n, err := integer(v, ptr, 0, hi)
		if err != nil {
			return err
		}
		rv.SetUint(uint64(n))
		return nil
	case reflect.Float32, reflect.Float64:
		if v.kind != '0' {
			return problemAt(ptr, "expected a number, got %s", v.describe())
		}
		f, err := strconv.ParseFloat(v.text, t.Bits())
		if err != nil {
			return problemAt(ptr, "number %s is out of range", v.text)
		}
		rv.SetFloat(f)
		return nil
	}
	return fmt.Errorf("decode: %s fields are not supported", t)
}

// integer reads v as a JSON Schema integer (a number whose fraction is
// zero, however written) within [lo, hi].
func integer(v *jvalue, ptr string, lo, hi int64) (int64, error) {
	if v.kind != '0' {
		return 0, problemAt(ptr, "expected an integer, got %s", v.describe())
	}
	if n, err := strconv.ParseInt(v.text, 10, 64); err == nil && n >= lo && n <= hi {
		return n, nil
	}
	// 2.0, 1e2, 99999999999999999999: exact, whatever the exponent. An
	// exponent beyond ±10000 is not expanded: the number is 0 or lies
	// outside every range (too large, or a fraction).
	if i := strings.IndexAny(v.text, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(v.text[i+1:]); err != nil || exp > 10000 || exp < -10000 {
			if strings.Trim(v.text[:i], "-0.") == "" {
				return 0, nil
			}
			return 0, outOfRange(v, ptr, lo, hi, false)
		}
	}
	r, ok := new(big.Rat).SetString(v.text)
	if !ok {
		return 0, problemAt(ptr, "expected an integer, got %s", v.text)
	}
	if !r.IsInt() {
		return 0, outOfRange(v, ptr, lo, hi, true)
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() < lo || n.Int64() > hi {
		return 0, outOfRange(v, ptr, lo, hi, false)
	}
	return n.Int64(), nil
}

func outOfRange(v *jvalue, ptr string, lo, hi int64, fraction bool) error {
	if fraction {
		return problemAt(ptr, "expected an integer, got %s", v.text)
	}
	if lo == 0 && strings.HasPrefix(v.text, "-") {
		return problemAt(ptr, "expected an integer from 0 to %d, got %s", hi, v.text)
	}
	return problemAt(ptr, "expected an integer from %d to %d, got %s", lo, hi, v.text)
}

// fieldsOf maps each exact member name to the field it sets, following
// encoding/json's rules for tags, "-" and embedded structs.
func fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			ft := f.Type
			if f.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if d, seen := depthOf[name]; seen && d <= len(idx) {
				continue // the shallower field wins, as in encoding/json
			}
			depthOf[name] = len(idx)
			m[name] = idx
		}
	}
	walk(t, nil)
	fieldCache.Store(t, m)
	return m
}

var fieldCache sync.Map // reflect.Type → map[string][]int

// fieldByIndex is reflect.Value.FieldByIndex, allocating nil embedded pointers.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, fmt.Errorf("decode: cannot set embedded pointer to unexported struct %s", v.Type().Elem())
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

func sortedKeys(m map[string][]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
