package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The reference validator is github.com/santhosh-tekuri/jsonschema/v5, the
// library Validate used before it had its own compiler (which keeps its
// package init and meta-schema compilation out of the worker). Tests only.

// referenceCompile compiles name as Validate did with the library.
func referenceCompile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	for _, n := range Names() {
		data, err := Schema(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(baseURL+n+".schema.json", bytes.NewReader(data)); err != nil {
			t.Fatalf("add schema %s: %v", n, err)
		}
	}
	s, err := c.Compile(baseURL + name + ".schema.json")
	if err != nil {
		t.Fatalf("reference compile %s: %v", name, err)
	}
	return s
}

// referenceProblems validates data with the library, flattened to leaves as
// Validate did.
func referenceProblems(t *testing.T, s *jsonschema.Schema, data []byte) []Problem {
	t.Helper()
	doc, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("reference validate: %v", err)
	}
	var out []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Problem{Pointer: e.InstanceLocation, Message: e.Message})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return normalize(dedupSorted(out))
}

var namesList = regexp.MustCompile(`^additionalProperties (.*) not allowed$`)

// normalize makes the comparison independent of map order where the
// reference validator's output depends on it: the names in an
// additionalProperties message, and the order of problems at one pointer.
func normalize(ps []Problem) []Problem {
	out := slices.Clone(ps)
	for i, p := range out {
		if m := namesList.FindStringSubmatch(p.Message); m != nil {
			names := strings.Split(m[1], ", ")
			sort.Strings(names)
			out[i].Message = "additionalProperties " + strings.Join(names, ", ") + " not allowed"
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pointer != out[j].Pointer {
			return out[i].Pointer < out[j].Pointer
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// seeds are valid documents of each schema; mutations of them make the
// invalid ones.
var seeds = map[string][]string{
	SchemaDispatchSpec: {
		`{"dispatch_id":"d-1","task_id":"t_1","round":2,"subagent":{"name":"x","runtime":"exec","command":["sh","-c","true"],"version":"v"},"input":{"a":1},"capabilities":[{"name":"c","sha256":"` + strings.Repeat("a", 64) + `","uri":"file:///x","version":"1"}],"env":[{"name":"e","sha256":"` + strings.Repeat("b", 64) + `"}],"timeout_seconds":60,"resume":{"question":"q","answer":"a","options":["a"],"context":"c","partial_state":{"k":[1,2]},"history":[{"round":1,"question":"q","answer":"a"}]}}`,
		`{"dispatch_id":"d","subagent":{"name":"c","runtime":"claude-code","prompt":"p","model":"m"},"resume":{"question":"q","answer":"a","partial_state_ref":{"uri":"s3://b/k","sha256":"` + strings.Repeat("c", 64) + `","size":12}}}`,
	},
	SchemaNeedsInput: {
		`{"question":"A or B?","options":["A","B"],"context":"c","default":"A","partial_state":{"x":1},"extra":true}`,
	},
	SchemaEvent: {
		`{"kind":"dispatch.needs_input","dispatch_id":"d-1","task_id":"t-1","round":2,"time":"2026-11-22T08:00:00Z","subagent":"s","runtime":"exec","exit_code":0,"duration_ms":12,"needs_input":{"question":"A or B?","options":["A","B"],"partial_state":{"k":1}}}`,
		`{"kind":"dispatch.failed","dispatch_id":"d","time":"2026-11-22T08:00:00.123+02:00","exit_code":1,"duration_ms":5,"failure":{"reason":"timeout","detail":"x"}}`,
	},
	SchemaRequest: {
		`{"spec":{"dispatch_id":"d","subagent":{"name":"x","runtime":"exec","command":["t"]}},"resources":{"cpus":0.5,"pids":64},"network":"none"}`,
	},
	SchemaSubagent: {
		`{"name":"rev","runtime":"exec","command":"make test","capabilities":["go@0123456789ab"],"env":["e"],"allow_memory":true,"timeout_seconds":5,"limits":{"max_rounds":3,"max_wait_seconds":60},"image":"img","network":"bridge","resources":{"cpus":1.5,"memory_mb":512,"pids":100},"workspace":"fresh"}`,
		`{"name":"c","runtime":"claude-code","prompt":"p","model":"m","command":["a","b"]}`,
		`{"name":"r","runtime":"exec","command":"x","retry":{"attempts":3,"backoff":{"initial_seconds":1,"max_seconds":60,"multiplier":1.5},"on":["worker-lost","timeout"]}}`,
	},
	SchemaCapability: {`{"name":"go","path":"./tools"}`},
	SchemaEnv: {
		`{"name":"e","values":{"A":"1","B_2":"x"},"secrets":{"TOKEN":"env:TOKEN"}}`,
	},
}

// replacements stand in for a value when mutating a document.
var replacements = []string{
	`null`, `true`, `0`, `-1`, `1.5`, `1.0`, `604801`, `""`, `" "`, `"x"`, `"a b"`, `"-bad"`,
	`"exec"`, `"claude-code"`, `"2026-13-01T00:00:00Z"`, `"2026-11-22T23:59:60Z"`,
	`"` + strings.Repeat("a", 64) + `"`, `"` + strings.Repeat("é", 201) + `"`,
	`[]`, `["x"]`, `[1]`, `{}`, `{"x":1}`, `{"question":"q","answer":"a"}`,
}

// mutations returns doc with, at every position, each replacement, the
// value removed, and an unknown field added.
func mutations(t *testing.T, seed string) []string {
	t.Helper()
	doc, err := decodeJSON([]byte(seed))
	if err != nil {
		t.Fatalf("seed %s: %v", seed, err)
	}
	var out []string
	emit := func() {
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			v["unknown field/~"] = json.Number("1")
			emit()
			delete(v, "unknown field/~")
			for _, k := range sortedNames(v) {
				orig := v[k]
				delete(v, k)
				emit()
				for _, r := range replacements {
					v[k], _ = decodeJSON([]byte(r))
					emit()
				}
				v[k] = orig
				walk(orig)
			}
		case []any:
			for i, orig := range v {
				for _, r := range replacements {
					v[i], _ = decodeJSON([]byte(r))
					emit()
				}
				v[i] = orig
				walk(orig)
			}
		}
	}
	emit()
	walk(doc)
	return out
}

// TestValidatorMatchesReference: Validate finds exactly the problems the
// reference validator finds, on every fixture, on the valid seeds and on
// every mutation of them.
func TestValidatorMatchesReference(t *testing.T) {
	t.Parallel()
	fixtures, err := filepath.Glob("testdata/spec/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref := referenceCompile(t, name)
			docs := []string{`{}`, `[]`, `"x"`, `1`, `null`}
			for _, seed := range seeds[name] {
				if err := Validate(name, []byte(seed)); err != nil {
					t.Errorf("seed is not valid: %v\n%s", err, seed)
				}
				docs = append(docs, mutations(t, seed)...)
			}
			if name == SchemaDispatchSpec {
				for _, f := range fixtures {
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					docs = append(docs, string(data))
				}
			}
			mismatches := 0
			for _, doc := range docs {
				want := referenceProblems(t, ref, []byte(doc))
				var got []Problem
				err := Validate(name, []byte(doc))
				var ve *ValidationError
				switch {
				case errors.As(err, &ve):
					got = normalize(ve.Problems)
				case err != nil:
					t.Fatalf("Validate: %v", err)
				}
				if !slices.Equal(got, want) {
					mismatches++
					if mismatches <= 10 {
						t.Errorf("Validate(%s, %s)\n got %v\nwant %v", name, doc, got, want)
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d documents differ", mismatches, len(docs))
			}
			t.Logf("%d documents agree", len(docs))
		})
	}
}

// TestCompileRefusesUnknownKeywords: a schema may only use what the
// compiler implements.
func TestCompileRefusesUnknownKeywords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"unknown keyword", `{"type":"object","uniqueItems":true}`, "uniqueItems"},
		{"unknown format", `{"type":"string","format":"email"}`, "email"},
		{"anchor ref", `{"$ref":"#foo"}`, "JSON-pointer"},
		{"missing ref", `{"$ref":"#/$defs/nope"}`, "no /$defs/nope"},
		{"bad pattern", `{"pattern":"("}`, "missing closing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &compiler{
				load:  func(string) ([]byte, error) { return []byte(tc.schema), nil },
				docs:  map[string]any{},
				nodes: map[string]*node{},
			}
			_, err := c.resolve("x.schema.json", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("compile %s: error = %v, want one naming %q", tc.schema, err, tc.want)
			}
		})
	}
}

// TestCompileOnlyWhatIsReached: compiling a schema loads only the
// documents its $refs reach.
func TestCompileOnlyWhatIsReached(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][]string{
		SchemaNeedsInput:   {"needs-input.schema.json"},
		SchemaDispatchSpec: {"dispatch-spec.schema.json"},
		SchemaEvent:        {"dispatch-spec.schema.json", "event.schema.json"},
		SchemaEnv:          {"env.schema.json", "subagent.schema.json"},
	} {
		var loaded []string
		c := &compiler{
			load: func(file string) ([]byte, error) {
				loaded = append(loaded, file)
				return files.ReadFile(file)
			},
			docs:  map[string]any{},
			nodes: map[string]*node{},
		}
		if _, err := c.resolve(name+".schema.json", ""); err != nil {
			t.Fatal(err)
		}
		slices.Sort(loaded)
		if !slices.Equal(loaded, want) {
			t.Errorf("compiling %s loaded %v, want %v", name, loaded, want)
		}
	}
}

func ExampleValidate() {
	err := Validate(SchemaNeedsInput, []byte(`{"question":" ","options":["A",2]}`))
	fmt.Println(err)
	// Output: invalid needs input: /options/1: expected string, but got number; /question: does not match pattern '\\S'
}
