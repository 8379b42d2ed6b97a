package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

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

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// unicodeBlanks are strings of white space only, as ECMA-262's \s or
// Unicode's White_Space define it, none of them ASCII.
var unicodeBlanks = []string{
	"\u00a0", "\u3000", "\u2028", "\u2029", "\u2003\u2003", "\u0085", "\u1680", "\u200a",
	"\u202f", "\u205f", "\ufeff", "\v", " \t\r\n\f\u00a0",
}

// targeted are documents written for the findings of issue 21: white-space
// questions, integers written as decimals, field names in another case,
// wrong types. Each must be judged alike by both implementations.
func targeted(t *testing.T) map[string][]string {
	t.Helper()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var ni []string
	for _, b := range unicodeBlanks {
		ni = append(ni, `{"question":`+q(b)+`}`, `{"question":`+q(b+"x"+b)+`}`, `{"question":"Deploy?","options":[`+q(b)+`]}`)
	}
	ni = append(ni,
		`{"question":"Deploy?","OPTIONS":["A","B"]}`,
		`{"question":"Deploy?","Question":"other?"}`,
		`{"Question":"Deploy?"}`,
		`{"question":"Deploy?","options":5}`,
		`{"question":"Deploy?","context":{"a":1}}`,
		`{"question":"Deploy?","default":"A","options":["A","B"]}`,
		`{"question":"\u200b"}`, // zero-width space is not white space
		`{"question":"Deploy?","partial_state":[[[[[[[[[[1]]]]]]]]]]}`,
		`{"question":5}`, `{"question":null}`, `[]`, `"x"`,
	)
	spec := func(extra string) string {
		return `{"dispatch_id":"d-1","subagent":{"name":"x","runtime":"exec","command":["true"]}` + extra + `}`
	}
	var ds []string
	for _, n := range []string{"2", "2.0", "1e2", "1E0", "100e-2", "2.5", "-1", "0", "-0", "99999999999999999999", `"2"`, "true", "null"} {
		ds = append(ds, spec(`,"round":`+n), spec(`,"timeout_seconds":`+n))
	}
	ds = append(ds,
		spec(`,"TIMEOUT_SECONDS":1`), spec(`,"DISPATCH_ID":"x"`), spec(`,"Subagent":5`), spec(`,"Options":5`),
		spec(`,"task_id":5`), spec(`,"input":[]`), spec(`,"input":"x"`), spec(`,"env":{}`),
		`{"dispatch_id":"d\n","subagent":{"name":"x","runtime":"exec","command":["true"]}}`,
		`{"dispatch_id":"d-1","subagent":{"name":"x","runtime":"exec","command":"true"}}`,
		`{"dispatch_id":"d-1","subagent":{"name":"x","runtime":"exec2","command":["true"]}}`,
	)
	env := []string{
		`{"name":"e","secrets":{"T":"env:X\n"}}`, `{"name":"e","secrets":{"T":"env:\u2028"}}`,
		`{"name":"e","secrets":{"T":"env:"}}`, `{"name":"e","secrets":{"T":"env:\n"}}`,
	}
	return map[string][]string{SchemaNeedsInput: ni, SchemaDispatchSpec: ds, SchemaEnv: env, SchemaEvent: goEvents(t)}
}

// goEvents are events as the worker and the runner make them: the Go type
// marshalled, every kind and every failure reason, with and without their
// optional parts, and with Unicode in the free text.
func goEvents(t *testing.T) []string {
	t.Helper()
	at := time.Date(2026, 11, 26, 9, 0, 0, 123456789, time.FixedZone("x", 5*3600+30*60))
	code, ms, dflt := 0, int64(12), "A"
	var evs []Event
	for _, k := range EventKinds {
		ev := Event{Kind: k, DispatchID: "d-1", TaskID: "t_1", Round: 3, Time: at, Subagent: "s", Runtime: RuntimeExec}
		evs = append(evs, ev)
		if k.Terminal() {
			ev.ExitCode, ev.DurationMS = &code, &ms
			evs = append(evs, ev)
		}
	}
	for _, r := range FailureReasons {
		evs = append(evs, Event{Kind: KindFailed, DispatchID: "d", Time: at.UTC(), ExitCode: &code, DurationMS: &ms,
			Failure: &Failure{Reason: r, Detail: "détail\u2028"}})
	}
	evs = append(evs,
		Event{Kind: KindNeedsInput, DispatchID: "d", Time: at, ExitCode: &code, DurationMS: &ms,
			NeedsInput: &NeedsInput{Question: "\u3000?", Options: []string{"A", "\u00a0"}, Default: &dflt, Context: "c", PartialState: json.RawMessage(`{"k":[1,2.5,null]}`)}},
		Event{Kind: KindFinished, DispatchID: "d", Time: at, ExitCode: &code, DurationMS: &ms, Result: json.RawMessage(`{"verdict":"ok"}`),
			Artifacts: []Artifact{{Name: "out/a b.txt", Size: 3, SHA256: strings.Repeat("a", 64), URI: "file:///s"}}},
		Event{Kind: KindFinished, DispatchID: "d", Time: at, ExitCode: &code, DurationMS: &ms,
			ResultRef: &ObjectRef{URI: "s3://b/k", SHA256: strings.Repeat("b", 64), Size: 1 << 40}},
	)
	var out []string
	for _, ev := range evs {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(data))
	}
	return out
}

// corpus is every document of the cross-check, by schema: bare values,
// the seeds and every mutation of them, the targeted documents, and for the
// dispatch spec every fixture in testdata/spec.
func corpus(t *testing.T) map[string][]string {
	t.Helper()
	fixtures, err := filepath.Glob("testdata/spec/*.json")
	if err != nil {
		t.Fatal(err)
	}
	extra := targeted(t)
	out := map[string][]string{}
	for _, name := range Names() {
		docs := []string{`{}`, `[]`, `"x"`, `1`, `null`}
		for _, seed := range seeds[name] {
			if err := Validate(name, []byte(seed)); err != nil {
				t.Errorf("seed is not valid: %v\n%s", err, seed)
			}
			docs = append(docs, mutations(t, seed)...)
		}
		docs = append(docs, extra[name]...)
		if name == SchemaDispatchSpec {
			for _, f := range fixtures {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(data))
			}
		}
		out[name] = docs
	}
	for name, docs := range repoDocs(t) {
		out[name] = append(out[name], docs...)
	}
	return out
}

// repoDocs are the documents of these schemas that the rest of the
// repository's tests feed agora: the sentinel fixtures (those that are
// JSON; the others test the decoder), the runner's dispatch requests and
// the registry's env file.
func repoDocs(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	read := func(pattern string) [][]byte {
		paths, err := filepath.Glob(pattern)
		if err != nil || len(paths) == 0 {
			t.Fatalf("no files match %s: %v", pattern, err)
		}
		var docs [][]byte
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, data)
		}
		return docs
	}
	for _, dir := range []string{"valid", "invalid"} {
		for _, data := range read("../worker/sentinel/testdata/" + dir + "/*.json") {
			if json.Valid(data) && utf8.Valid(data) {
				out[SchemaNeedsInput] = append(out[SchemaNeedsInput], string(data))
			}
		}
	}
	for _, data := range read("../runner/testdata/compile/*.json") {
		var c struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(data, &c); err == nil && len(c.Request) > 0 {
			out[SchemaRequest] = append(out[SchemaRequest], string(c.Request))
		}
	}
	for _, data := range read("../orchestrator/registry/testdata/*.json") {
		out[SchemaEnv] = append(out[SchemaEnv], string(data))
	}
	if len(out[SchemaRequest]) == 0 {
		t.Fatal("no dispatch requests in ../runner/testdata/compile")
	}
	return out
}

// secondImplementation is a python3 whose jsonschema module is version 4 or
// later (draft 2020-12): Debian's (/usr/bin/python3 with
// python3-jsonschema) first. Without one the test skips, but fails under
// CI=true, where .ci/run installs it (make tools does too).
func secondImplementation(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		out, err := exec.Command(py, "-c", "import jsonschema, sys; from jsonschema import Draft202012Validator; print(sys.version)").CombinedOutput()
		if err == nil {
			t.Logf("second implementation: %s's jsonschema, Python %s", py, strings.TrimSpace(string(out)))
			return py
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no python3 with jsonschema ≥ 4: .ci/run installs Debian's python3-jsonschema (apt-get install python3-jsonschema)")
	}
	t.Skip("no python3 with jsonschema ≥ 4 here: apt-get install python3-jsonschema to run the cross-check")
	return ""
}

// TestSecondImplementationAgrees holds the schemas to meaning the same in
// every dialect: Validate (github.com/santhosh-tekuri/jsonschema/v5, Go's
// regexp) and Python's jsonschema (Python's re) must call the same
// documents valid, over the whole corpus.
func TestSecondImplementationAgrees(t *testing.T) {
	t.Parallel()
	py := secondImplementation(t)
	type item struct {
		Schema string `json:"schema"`
		Doc    string `json:"doc"`
	}
	var items []item
	docs := corpus(t)
	for _, name := range Names() {
		for _, d := range docs[name] {
			items = append(items, item{name, d})
		}
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, filepath.Join("testdata", "crosscheck.py"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crosscheck.py: %v\n%s", err, stderr.String())
	}
	verdicts := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(verdicts) != len(items) {
		t.Fatalf("crosscheck.py gave %d verdicts for %d documents\n%s", len(verdicts), len(items), stderr.String())
	}
	valid, disagree := 0, 0
	for i, it := range items {
		goErr := Validate(it.Schema, []byte(it.Doc))
		var ve *ValidationError
		if goErr != nil && !errors.As(goErr, &ve) {
			t.Fatalf("Validate(%s, %q): %v", it.Schema, it.Doc, goErr)
		}
		pyValid := verdicts[i] == "valid"
		if goErr == nil {
			valid++
		}
		if (goErr == nil) != pyValid {
			disagree++
			if disagree <= 10 {
				t.Errorf("%s %q: Go says %v, Python says %s", it.Schema, it.Doc, goErr, verdicts[i])
			}
		}
	}
	if disagree > 0 {
		t.Errorf("%d of %d documents judged differently", disagree, len(items))
	}
	t.Logf("%d documents (%d valid, %d invalid), %d disagreements", len(items), valid, len(items)-valid, disagree)
}

// TestUnicodeBlankQuestionsRefused: a question of white space only is
// refused whatever the white space, with a message in words.
func TestUnicodeBlankQuestionsRefused(t *testing.T) {
	t.Parallel()
	for _, b := range unicodeBlanks {
		doc, _ := json.Marshal(map[string]string{"question": b})
		err := Validate(SchemaNeedsInput, doc)
		want := "invalid needs input: /question: must contain a character that is not white space"
		if err == nil || err.Error() != want {
			t.Errorf("Validate(needs-input, %s) = %v, want %q", doc, err, want)
		}
		doc, _ = json.Marshal(map[string]string{"question": b + "?" + b})
		if err := Validate(SchemaNeedsInput, doc); err != nil {
			t.Errorf("Validate(needs-input, %s) = %v, want valid", doc, err)
		}
	}
}

// TestPatternsReadAlikeInEveryDialect: every pattern in the schema files
// uses only what ECMA-262, Go's regexp and Python's re read alike — no
// shorthand class (\s \d \w \b and their negations, whose reach differs),
// no "." (ECMA's stops at \r, \u2028 and \u2029 too, Go's and Python's do
// not), no \u or \x{} escape (each only in some dialects), and "$" only at
// the end. The non-blank class is the one NonBlankPattern names.
func TestPatternsReadAlikeInEveryDialect(t *testing.T) {
	t.Parallel()
	forbidden := regexp.MustCompile(`\\[sSdDwWbBuUpPzZAQ]|\\x\{|\(\?`)
	count := 0
	for _, name := range Names() {
		raw, err := Schema(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch v := v.(type) {
			case map[string]any:
				for k, c := range v {
					if p, ok := c.(string); ok && k == "pattern" {
						count++
						if m := forbidden.FindString(p); m != "" {
							t.Errorf("%s %s: pattern %q uses %s", name, at, p, m)
						}
						unescaped := regexp.MustCompile(`\\.`).ReplaceAllString(p, "")
						unescaped = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(unescaped, "")
						if strings.Contains(unescaped, ".") {
							t.Errorf("%s %s: pattern %q uses '.'", name, at, p)
						}
						if i := strings.Index(unescaped, "$"); i >= 0 && i != len(unescaped)-1 {
							t.Errorf("%s %s: pattern %q has '$' before its end", name, at, p)
						}
						if strings.ContainsAny(p, "\u00a0\u3000") && p != NonBlankPattern {
							t.Errorf("%s %s: pattern %q is not NonBlankPattern", name, at, p)
						}
					}
					walk(c, at+"/"+k)
				}
			case []any:
				for i, c := range v {
					walk(c, fmt.Sprintf("%s/%d", at, i))
				}
			}
		}
		walk(doc, "")
	}
	if count == 0 {
		t.Fatal("no patterns found")
	}
}

// TestNonBlankPatternIsWhiteSpace: the class lists exactly the union of
// Unicode's White_Space (Go's unicode.IsSpace) and ECMA-262's \s
// (unicode.IsSpace plus U+FEFF, less U+0085), and IsSpace, Blank and
// TrimSpace read white space the same way.
func TestNonBlankPatternIsWhiteSpace(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(NonBlankPattern)
	for r := rune(0); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		space := unicode.IsSpace(r) || r == '\ufeff'
		if re.MatchString(string(r)) == space {
			t.Errorf("U+%04X: white space %v, but the pattern matches it: %v", r, space, !space)
		}
		if IsSpace(r) != space {
			t.Errorf("IsSpace(U+%04X) = %v, want %v (the pattern's reading)", r, IsSpace(r), space)
		}
		if Blank(string(r)) != space || (TrimSpace(string(r)) == "") != space {
			t.Errorf("U+%04X: Blank %v, TrimSpace %q; white space %v", r, Blank(string(r)), TrimSpace(string(r)), space)
		}
	}
}

func ExampleValidate() {
	err := Validate(SchemaNeedsInput, []byte(`{"question":" ","options":["A",2]}`))
	fmt.Println(err)
	// Output: invalid needs input: /options/1: expected string, but got number; /question: must contain a character that is not white space
}

// TestCompileLoadsOnlyWhatIsReached: compiling a schema reads only the
// schema files its $refs reach, each once however many schemas reach it.
func TestCompileLoadsOnlyWhatIsReached(t *testing.T) {
	t.Parallel()
	sc := &sharedCompiler{}
	for _, step := range []struct {
		name string
		want []string
	}{
		{SchemaNeedsInput, []string{"needs-input.schema.json"}},
		{SchemaDispatchSpec, []string{"needs-input.schema.json", "dispatch-spec.schema.json"}},
		{SchemaEvent, []string{"needs-input.schema.json", "dispatch-spec.schema.json", "event.schema.json"}},
		{SchemaEvent, []string{"needs-input.schema.json", "dispatch-spec.schema.json", "event.schema.json"}},
	} {
		if _, err := sc.compile(step.name); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sc.loaded, step.want) {
			t.Errorf("after compiling %s: loaded %v, want %v", step.name, sc.loaded, step.want)
		}
	}
}
