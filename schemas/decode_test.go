package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStrictDocuments runs the documents of issue 21, one fixture each in
// testdata/strict, through the reader the worker uses, with the outcome now:
// names in another case are ignored, integers are JSON Schema's, a
// duplicate key or an out-of-range integer is refused naming the member.
func TestStrictDocuments(t *testing.T) {
	t.Parallel()
	spec := func(f func(t *testing.T, s *DispatchSpec)) func(t *testing.T, data []byte) error {
		return func(t *testing.T, data []byte) error {
			s, err := ParseDispatchSpec(data)
			if err == nil {
				f(t, s)
			}
			return err
		}
	}
	sentinel := func(f func(t *testing.T, n *NeedsInput)) func(t *testing.T, data []byte) error {
		return func(t *testing.T, data []byte) error {
			n, err := ParseNeedsInput(data)
			if err == nil {
				f(t, n)
			}
			return err
		}
	}
	tests := []struct {
		file    string
		parse   func(t *testing.T, data []byte) error
		wantErr string // "" means accepted
	}{
		{"sentinel-options-upper-case.json", sentinel(func(t *testing.T, n *NeedsInput) {
			if n.Options != nil {
				t.Errorf("Options = %q, want none: OPTIONS is not options", n.Options)
			}
		}), ""},
		{"sentinel-question-other-case.json", sentinel(func(t *testing.T, n *NeedsInput) {
			if n.Question != "Deploy?" {
				t.Errorf("Question = %q, want %q", n.Question, "Deploy?")
			}
		}), ""},
		{"sentinel-duplicate-key.json", sentinel(nil), `invalid needs input: (document): key "question" appears more than once`},
		{"sentinel-duplicate-options.json", sentinel(nil), `invalid needs input: (document): key "options" appears more than once`},
		{"spec-timeout-upper-case.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.TimeoutSeconds != 0 {
				t.Errorf("TimeoutSeconds = %d, want 0: TIMEOUT_SECONDS is not timeout_seconds", s.TimeoutSeconds)
			}
		}), ""},
		{"spec-dispatch-id-upper-case.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.DispatchID != "d-1" {
				t.Errorf("DispatchID = %q, want d-1", s.DispatchID)
			}
		}), ""},
		{"spec-other-case-wrong-types.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.Subagent.Name != "fixer" || s.Resume.Options != nil || s.Resume.Context != "" {
				t.Errorf("got subagent %q, resume options %q context %q; want fixer and none", s.Subagent.Name, s.Resume.Options, s.Resume.Context)
			}
		}), ""},
		{"spec-round-2.0.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.Round != 2 {
				t.Errorf("Round = %d, want 2", s.Round)
			}
		}), ""},
		{"spec-round-1e2.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.Round != 100 {
				t.Errorf("Round = %d, want 100", s.Round)
			}
		}), ""},
		{"spec-timeout-60.0.json", spec(func(t *testing.T, s *DispatchSpec) {
			if s.TimeoutSeconds != 60 {
				t.Errorf("TimeoutSeconds = %d, want 60", s.TimeoutSeconds)
			}
		}), ""},
		{"spec-round-2.5.json", spec(nil), "/round"},
		{"spec-round-too-large.json", spec(nil), "invalid dispatch spec: /round: expected an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999"},
		{"spec-duplicate-round.json", spec(nil), `invalid dispatch spec: (document): key "round" appears more than once`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "strict", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			err = tt.parse(t, data)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("parse %s: %v, want it accepted", tt.file, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("parse %s: accepted, want error containing %q", tt.file, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("parse %s: %v, want error containing %q", tt.file, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "Go ") || err != nil && strings.Contains(err.Error(), "unmarshal") {
				t.Errorf("error %q shows Go's decoder", err)
			}
			if tt.wantErr != "" {
				// The validator alone says the same: it never judges another value.
				name := SchemaNeedsInput
				if strings.HasPrefix(tt.file, "spec-") {
					name = SchemaDispatchSpec
				}
				if verr := Validate(name, data); strings.Contains(tt.wantErr, "more than once") && (verr == nil || !strings.Contains(verr.Error(), "more than once")) {
					t.Errorf("Validate(%s) = %v, want the duplicate key refused", name, verr)
				}
			}
		})
	}
}

// TestDecodeDepth: a partial_state nested 10,001 deep is refused naming the
// limit, and one at the limit is read.
func TestDecodeDepth(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deep := `{"question":"Deploy?","partial_state":` + nested(10001) + `}`
	_, err := ParseNeedsInput([]byte(deep))
	if err == nil || !strings.Contains(err.Error(), "nested more than 64 levels deep") {
		t.Fatalf("ParseNeedsInput(10,001 deep) = %v, want the 64-level limit named", err)
	}
	ok := `{"question":"Deploy?","partial_state":` + nested(MaxDepth-1) + `}`
	if _, err := ParseNeedsInput([]byte(ok)); err != nil {
		t.Fatalf("ParseNeedsInput(%d deep) = %v, want it read", MaxDepth, err)
	}
	if err := Validate(SchemaNeedsInput, []byte(deep)); err == nil || !strings.Contains(err.Error(), "nested more than 64") {
		t.Fatalf("Validate(10,001 deep) = %v, want the same limit", err)
	}
}

// TestDecode covers the reader on its own: exact names, integers, ranges,
// types named as JSON Schema names them, raw values kept as written.
func TestDecode(t *testing.T) {
	t.Parallel()
	type inner struct {
		N int8 `json:"n"`
	}
	type doc struct {
		Name  string            `json:"name"`
		Count int               `json:"count"`
		Small uint8             `json:"small"`
		Ratio float64           `json:"ratio"`
		On    bool              `json:"on"`
		List  []string          `json:"list"`
		Map   map[string]int    `json:"map"`
		Raw   json.RawMessage   `json:"raw"`
		Ptr   *inner            `json:"ptr"`
		Any   any               `json:"any"`
		Tags  map[string]string `json:"tags,omitempty"`
		Skip  string            `json:"-"`
		inner
	}
	tests := []struct {
		name, in string
		want     doc
		wantErr  string
	}{
		{name: "exact names", in: `{"name":"a","NAME":"b","Name":"c"}`, want: doc{Name: "a"}},
		{name: "integers", in: `{"count":1e2,"small":255.0,"n":-128}`, want: doc{Count: 100, Small: 255, inner: inner{N: -128}}},
		{name: "int8 range", in: `{"n":128}`, wantErr: "/n: expected an integer from -128 to 127, got 128"},
		{name: "uint8 negative", in: `{"small":-1}`, wantErr: "/small: expected an integer from 0 to 255, got -1"},
		{name: "fraction", in: `{"count":2.5}`, wantErr: "/count: expected an integer, got 2.5"},
		{name: "huge exponent", in: `{"count":1e999999999}`, wantErr: "/count: expected an integer from"},
		{name: "zero exponent", in: `{"count":0e999999999}`, want: doc{}},
		{name: "string for int", in: `{"count":"1"}`, wantErr: "/count: expected an integer, got a string"},
		{name: "array for string", in: `{"list":[1]}`, wantErr: "/list/0: expected a string, got a number"},
		{name: "object for array", in: `{"list":{}}`, wantErr: "/list: expected an array, got an object"},
		{name: "nested pointer", in: `{"ptr":{"n":1.0}}`, want: doc{Ptr: &inner{N: 1}}},
		{name: "map", in: `{"map":{"a/b":1}}`, want: doc{Map: map[string]int{"a/b": 1}}},
		{name: "map value", in: `{"map":{"a/b":true}}`, wantErr: "/map/a~1b: expected an integer, got a boolean"},
		{name: "raw as written", in: `{"raw": {"b":1, "a":[2]} }`, want: doc{Raw: json.RawMessage(`{"b":1, "a":[2]}`)}},
		{name: "any", in: `{"any":{"x":[1,"s",null,true]}}`, want: doc{Any: map[string]any{"x": []any{json.Number("1"), "s", nil, true}}}},
		{name: "null leaves alone", in: `{"name":null,"ptr":null}`, want: doc{}},
		{name: "dash tag", in: `{"-":"x","Skip":"y"}`, want: doc{}},
		{name: "duplicate nested", in: `{"ptr":{"n":1,"n":2}}`, wantErr: `/ptr: key "n" appears more than once`},
		{name: "trailing", in: `{} {}`, wantErr: "data after the JSON value"},
		{name: "syntax", in: `{"name":}`, wantErr: "not valid JSON at byte"},
		{name: "truncated", in: `{"name":"a"`, wantErr: "not valid JSON"},
		{name: "bad utf-8", in: "{\"name\":\"\xff\"}", wantErr: "not valid UTF-8"},
		{name: "not an object", in: `[]`, wantErr: "(document): expected an object, got an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got doc
			err := Decode("test document", []byte(tt.in), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode(%s) = %v, want error containing %q", tt.in, err, tt.wantErr)
				}
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Errorf("Decode(%s) error %T, want *ValidationError", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s) = %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// BenchmarkParse measures the worker's reading of a dispatch spec and a
// sentinel (validation included), as a no-op dispatch reads them.
func BenchmarkParse(b *testing.B) {
	spec, err := os.ReadFile("testdata/spec/valid-claude-resume.json")
	if err != nil {
		b.Fatal(err)
	}
	sentinel := []byte(`{"question":"Deploy to production?","options":["yes","no"],"context":"CI is green.","partial_state":{"step":3,"files":["a.go","b.go"]}}`)
	b.Run("spec", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseDispatchSpec(spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sentinel", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseNeedsInput(sentinel); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzParseStrict holds the reader's parser to encoding/json's grammar: it
// accepts exactly the valid documents, refusing only for a duplicate key
// or depth, and reads the same values.
func FuzzParseStrict(f *testing.F) {
	for _, seed := range []string{`{}`, `[]`, `{"a":[1,2.5,-0,1e2,"x\u00e9\n",true,false,null]}`, `{"a":1,"a":2}`,
		`[[[[]]]]`, `"\ud83d\ude00"`, `-`, `01`, `1.`, `1e`, `{"a" 1}`, `[1,]`, `{,}`, "\"\t\"", `nul`, ` 1 `, `{"a":{}}x`, `"\x"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseStrict(data)
		valid := json.Valid(data) && utf8.Valid(data)
		if err != nil {
			if valid && !strings.Contains(err.Error(), "appears more than once") && !strings.Contains(err.Error(), "levels deep") {
				t.Fatalf("parseStrict(%q) = %v; encoding/json reads it", data, err)
			}
			return
		}
		if !valid {
			t.Fatalf("parseStrict(%q) accepted what encoding/json refuses", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, _ := v.plain()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseStrict(%q) = %#v, encoding/json %#v", data, got, want)
		}
	})
}
