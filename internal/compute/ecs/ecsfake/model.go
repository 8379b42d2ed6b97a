package ecsfake

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// The request shapes of the operations agora calls, trimmed from the
// service models AWS ships for its SDKs (Debian's python3-botocore; the
// version is each file's "source"). model/trim.py makes them again.
//
//go:embed model/ecs.json model/logs.json
var modelFiles embed.FS

// apiModel is one service's request shapes.
type apiModel struct {
	Source     string            `json:"source"`
	Operations map[string]string `json:"operations"`
	Shapes     map[string]*shape `json:"shapes"`
}

// shape is one shape of a botocore service model, as far as a request's
// validity goes.
type shape struct {
	Type     string            `json:"type"`
	Members  map[string]string `json:"members"`
	Required []string          `json:"required"`
	Enum     []string          `json:"enum"`
	Min      *float64          `json:"min"`
	Max      *float64          `json:"max"`
	Pattern  string            `json:"pattern"`
	Member   string            `json:"member"`
	Key      string            `json:"key"`
	Value    string            `json:"value"`

	re *regexp.Regexp
}

// models are the ECS and CloudWatch Logs models, by the fake's service
// names, loaded from the embedded files on first use.
var models = sync.OnceValues(func() (map[string]*apiModel, error) {
	out := map[string]*apiModel{}
	for _, service := range []string{"ecs", "logs"} {
		m, err := loadModel("model/" + service + ".json")
		if err != nil {
			return nil, err
		}
		out[service] = m
	}
	return out, nil
})

func loadModel(path string) (*apiModel, error) {
	b, err := modelFiles.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ecsfake: embedded model %s: %w", path, err)
	}
	var m apiModel
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("ecsfake: embedded model %s: %w", path, err)
	}
	for name, sh := range m.Shapes {
		if sh.Pattern != "" {
			// Java-style patterns; the ones these shapes use (\p{L}, \w,
			// classes) read the same in Go's RE2. The model's patterns
			// are whole-value matches.
			re, err := regexp.Compile(`^(?:` + sh.Pattern + `)$`)
			if err != nil {
				return nil, fmt.Errorf("ecsfake: model %s shape %s pattern %q: %w", path, name, sh.Pattern, err)
			}
			sh.re = re
		}
	}
	return &m, nil
}

// checkModel validates a request body against the operation's input shape:
// JSON types, required members, enums, lengths, ranges and patterns. It
// refuses as the service does: a body whose JSON does not fit the shape's
// types is a SerializationException; a value outside its constraints an
// InvalidParameterException naming the member, the value and the
// constraint in the AWS validation message's words ("1 validation error
// detected: Value 'X' at 'launchType' failed to satisfy constraint: Member
// must satisfy enum value set: [EC2, FARGATE, EXTERNAL]").
func checkModel(service, op string, body []byte) *apiError {
	all, err := models()
	if err != nil {
		return &apiError{500, "ServerException", err.Error()}
	}
	m := all[service]
	in, ok := m.Operations[op]
	if !ok {
		return nil // not an operation of the model; the handler says so
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return &apiError{400, "SerializationException", "the request body is not JSON: " + err.Error()}
	}
	var errs []string
	if serr := m.check(in, "", v, &errs); serr != nil {
		return serr
	}
	if len(errs) == 0 {
		return nil
	}
	word := "error"
	if len(errs) > 1 {
		word = "errors"
	}
	return invalidParam("%d validation %s detected: %s", len(errs), word, strings.Join(errs, "; "))
}

// check walks v against shape name at path. Type mismatches return a
// SerializationException at once; constraint failures are collected.
func (m *apiModel) check(name, path string, v any, errs *[]string) *apiError {
	sh := m.Shapes[name]
	if sh == nil {
		return &apiError{500, "ServerException", "ecsfake: the model has no shape " + name}
	}
	serial := func(want string) *apiError {
		return &apiError{400, "SerializationException", fmt.Sprintf("%s: expected %s, got %s", orTop(path), want, jsonKind(v))}
	}
	fail := func(constraint string) {
		*errs = append(*errs, fmt.Sprintf("Value %s at '%s' failed to satisfy constraint: %s", quoteValue(v), orTop(path), constraint))
	}
	switch sh.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			return serial("an object")
		}
		for _, r := range sh.Required {
			if x, ok := obj[r]; !ok || x == nil {
				*errs = append(*errs, fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", join(path, r)))
			}
		}
		for _, k := range sortedKeys(obj) {
			member, ok := sh.Members[k]
			if !ok {
				return &apiError{400, "SerializationException", fmt.Sprintf("%s: unknown member %q of %s", orTop(path), k, name)}
			}
			if obj[k] == nil {
				continue
			}
			if err := m.check(member, join(path, k), obj[k], errs); err != nil {
				return err
			}
		}
	case "list":
		arr, ok := v.([]any)
		if !ok {
			return serial("an array")
		}
		if sh.Min != nil && float64(len(arr)) < *sh.Min {
			fail(fmt.Sprintf("Member must have length greater than or equal to %v", *sh.Min))
		}
		if sh.Max != nil && float64(len(arr)) > *sh.Max {
			fail(fmt.Sprintf("Member must have length less than or equal to %v", *sh.Max))
		}
		for i, x := range arr {
			if err := m.check(sh.Member, fmt.Sprintf("%s.%d.member", path, i+1), x, errs); err != nil {
				return err
			}
		}
	case "map":
		obj, ok := v.(map[string]any)
		if !ok {
			return serial("an object")
		}
		for _, k := range sortedKeys(obj) {
			if err := m.check(sh.Key, join(path, k)+".key", k, errs); err != nil {
				return err
			}
			if err := m.check(sh.Value, join(path, k), obj[k], errs); err != nil {
				return err
			}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return serial("a string")
		}
		n := float64(utf8.RuneCountInString(s))
		if sh.Min != nil && n < *sh.Min {
			fail(fmt.Sprintf("Member must have length greater than or equal to %v", *sh.Min))
		}
		if sh.Max != nil && n > *sh.Max {
			fail(fmt.Sprintf("Member must have length less than or equal to %v", *sh.Max))
		}
		if len(sh.Enum) > 0 && !slices.Contains(sh.Enum, s) {
			fail("Member must satisfy enum value set: [" + strings.Join(sh.Enum, ", ") + "]")
		}
		if sh.re != nil && !sh.re.MatchString(s) {
			fail("Member must satisfy regular expression pattern: " + sh.Pattern)
		}
	case "integer", "long":
		num, ok := v.(json.Number)
		if !ok {
			return serial("a number")
		}
		r, ok := new(big.Rat).SetString(num.String())
		if !ok || !r.IsInt() {
			return serial("an integer")
		}
		bits := 32
		if sh.Type == "long" {
			bits = 64
		}
		if r.Num().BitLen() >= bits {
			return &apiError{400, "SerializationException", fmt.Sprintf("%s: %s does not fit a %d-bit %s", orTop(path), num, bits, sh.Type)}
		}
		f, _ := r.Float64()
		if sh.Min != nil && f < *sh.Min {
			fail(fmt.Sprintf("Member must have value greater than or equal to %v", *sh.Min))
		}
		if sh.Max != nil && f > *sh.Max {
			fail(fmt.Sprintf("Member must have value less than or equal to %v", *sh.Max))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return serial("a boolean")
		}
	default:
		return &apiError{500, "ServerException", fmt.Sprintf("ecsfake: shape %s has type %s, which the fake does not check", name, sh.Type)}
	}
	return nil
}

func join(path, member string) string {
	if path == "" {
		return member
	}
	return path + "." + member
}

func orTop(path string) string {
	if path == "" {
		return "the request"
	}
	return path
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func quoteValue(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case json.Number:
		return "'" + x.String() + "'"
	case []any:
		return fmt.Sprintf("'[%d items]'", len(x))
	}
	return "null"
}
