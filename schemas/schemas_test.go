package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVocabularyMatchesSchema keeps the Go constants in step with the enums
// in event.schema.json, which are the source of truth.
func TestVocabularyMatchesSchema(t *testing.T) {
	t.Parallel()
	raw, err := Schema(SchemaEvent)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Kind    struct{ Enum []string } `json:"kind"`
			Failure struct {
				Properties struct {
					Reason struct{ Enum []string } `json:"reason"`
				} `json:"properties"`
			} `json:"failure"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range EventKinds {
		kinds = append(kinds, string(k))
	}
	if !slices.Equal(kinds, doc.Properties.Kind.Enum) {
		t.Errorf("EventKinds = %v, schema enum = %v", kinds, doc.Properties.Kind.Enum)
	}
	var reasons []string
	for _, r := range FailureReasons {
		reasons = append(reasons, string(r))
	}
	if !slices.Equal(reasons, doc.Properties.Failure.Properties.Reason.Enum) {
		t.Errorf("FailureReasons = %v, schema enum = %v", reasons, doc.Properties.Failure.Properties.Reason.Enum)
	}
	if len(EventKinds) != 6 {
		t.Errorf("the vocabulary is closed at six kinds, have %d", len(EventKinds))
	}
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	for _, k := range EventKinds {
		want := k != KindAccepted && k != KindStarted
		if got := k.Terminal(); got != want {
			t.Errorf("%s.Terminal() = %v, want %v", k, got, want)
		}
		if !k.Known() {
			t.Errorf("%s.Known() = false", k)
		}
	}
	if EventKind("dispatch.progress").Known() {
		t.Error("dispatch.progress must not be a known kind")
	}
}

func TestSchemaNames(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		data, err := Schema(n)
		if err != nil {
			t.Fatalf("Schema(%q): %v", n, err)
		}
		if !json.Valid(data) {
			t.Errorf("Schema(%q) is not JSON", n)
		}
	}
	if _, err := Schema("nope"); err == nil || !strings.Contains(err.Error(), "dispatch-spec") {
		t.Errorf("Schema(nope) error = %v, want one listing the known schemas", err)
	}
}

// TestDispatchSpecFixtures runs every testdata/spec/*.json: names starting
// with "valid-" must parse; the others must fail with the pointer and message
// given in the fixture's sibling .err file.
func TestDispatchSpecFixtures(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("testdata/spec/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := ParseDispatchSpec(data)
			if strings.HasPrefix(name, "valid-") {
				if err != nil {
					t.Fatalf("ParseDispatchSpec: %v", err)
				}
				if spec.DispatchID == "" || spec.Subagent.Name == "" {
					t.Errorf("decoded spec lost fields: %+v", spec)
				}
				return
			}
			want, rerr := os.ReadFile(strings.TrimSuffix(path, ".json") + ".err")
			if rerr != nil {
				t.Fatal(rerr)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseDispatchSpec error = %v, want *ValidationError", err)
			}
			if !strings.Contains(err.Error(), strings.TrimSpace(string(want))) {
				t.Errorf("ParseDispatchSpec error =\n  %v\nwant it to contain\n  %s", err, want)
			}
		})
	}
}

func TestParseNeedsInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string // substring of the error; "" means valid
		options []string
		state   string
	}{
		{name: "minimal", in: `{"question":"A or B?"}`},
		{name: "full", in: `{"question":"A or B?","options":["A","B"],"context":"c","default":"A","partial_state":{"done":[1,2]}}`, options: []string{"A", "B"}, state: `{"done":[1,2]}`},
		{name: "unknown fields ignored", in: `{"question":"q","future":{"x":1}}`},
		{name: "null state dropped", in: `{"question":"q","partial_state":null}`},
		{name: "state any json", in: `{"question":"q","partial_state":"text"}`, state: `"text"`},
		{name: "not json", in: `{"question":`, want: "not valid JSON"},
		{name: "trailing data", in: `{"question":"q"} {}`, want: "unexpected data"},
		{name: "not object", in: `["q"]`, want: "(document): expected object"},
		{name: "no question", in: `{"options":["A"]}`, want: "missing properties: 'question'"},
		{name: "empty question", in: `{"question":""}`, want: "/question"},
		{name: "blank question", in: `{"question":"  \n"}`, want: "/question"},
		{name: "question not string", in: `{"question":42}`, want: "/question: expected string"},
		{name: "options not array", in: `{"question":"q","options":"A"}`, want: "/options: expected array"},
		{name: "option not string", in: `{"question":"q","options":["A",2]}`, want: "/options/1: expected string"},
		{name: "context not string", in: `{"question":"q","context":{}}`, want: "/context: expected string"},
		{name: "bad utf8", in: "{\"question\":\"\xff\"}", want: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseNeedsInput([]byte(tt.in))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("ParseNeedsInput(%s) error = %v, want it to contain %q", tt.in, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNeedsInput(%s): %v", tt.in, err)
			}
			if !slices.Equal(got.Options, tt.options) {
				t.Errorf("options = %v, want %v", got.Options, tt.options)
			}
			if string(got.PartialState) != tt.state {
				t.Errorf("partial_state = %s, want %s", got.PartialState, tt.state)
			}
		})
	}
}

func TestEventRoundTrip(t *testing.T) {
	t.Parallel()
	code, ms := 0, int64(12)
	ev := Event{
		Kind: KindNeedsInput, DispatchID: "d-1", TaskID: "t-1", Round: 2,
		Time: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), ExitCode: &code, DurationMS: &ms,
		NeedsInput: &NeedsInput{Question: "A or B?", Options: []string{"A", "B"}, PartialState: json.RawMessage(`{"k":1}`)},
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEvent(data)
	if err != nil {
		t.Fatalf("ParseEvent(%s): %v", data, err)
	}
	if got.MsgID() != "d-1.dispatch.needs_input" || string(got.NeedsInput.PartialState) != `{"k":1}` {
		t.Errorf("round trip lost data: %s", data)
	}

	// A terminal event without exit_code breaks the contract.
	bad := `{"kind":"dispatch.failed","dispatch_id":"d","time":"2026-11-22T08:00:00Z","duration_ms":1}`
	if _, err := ParseEvent([]byte(bad)); err == nil || !strings.Contains(err.Error(), "exit_code") {
		t.Errorf("ParseEvent(no exit_code) error = %v, want one naming exit_code and failure", err)
	}
	badTime := `{"kind":"dispatch.started","dispatch_id":"d","time":"yesterday"}`
	if _, err := ParseEvent([]byte(badTime)); err == nil || !strings.Contains(err.Error(), "/time") {
		t.Errorf("ParseEvent(bad time) error = %v, want one naming /time (format assertions on)", err)
	}
}

func TestParseDispatchRequest(t *testing.T) {
	t.Parallel()
	good := `{"spec":{"dispatch_id":"d-1","subagent":{"name":"x","runtime":"exec","command":["true"]}},"network":"bridge","resources":{"cpus":0.5,"memory_mb":256,"pids":64},"workspace":{"mode":"persist","restore_from":"d-0"}}`
	r, err := ParseDispatchRequest([]byte(good))
	if err != nil {
		t.Fatalf("ParseDispatchRequest: %v", err)
	}
	if r.Spec.DispatchID != "d-1" || r.NetworkMode() != "bridge" || r.Resources.MemoryMB != 256 || r.Fresh() || r.Workspace.RestoreFrom != "d-0" {
		t.Errorf("decoded request = %+v", r)
	}
	for in, want := range map[string]string{
		`{"spec":{"dispatch_id":"d","subagent":{"name":"x","runtime":"exec"}}}`:                                 "/spec/subagent: missing properties: 'command'",
		`{"spec":{"dispatch_id":"d","subagent":{"name":"x","runtime":"exec","command":["t"]}},"network":"wan"}`: "/network: value must be one of",
		`{"image":"x"}`: "missing properties: 'spec'",
	} {
		if _, err := ParseDispatchRequest([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDispatchRequest(%s) = %v, want an error containing %q", in, err, want)
		}
	}
	if (&DispatchRequest{}).NetworkMode() != NetworkNone {
		t.Error("the default network must be none")
	}
}

// TestMaximumsMatchSchemas keeps the contract's maximums (limits.go) in
// step with the "maximum"s of the schemas, which are the source of truth.
func TestMaximumsMatchSchemas(t *testing.T) {
	t.Parallel()
	maximum := func(schema string, path ...string) float64 {
		t.Helper()
		raw, err := Schema(schema)
		if err != nil {
			t.Fatal(err)
		}
		var node any
		if err := json.Unmarshal(raw, &node); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			m, ok := node.(map[string]any)
			if !ok {
				t.Fatalf("%s: no %s", schema, strings.Join(path, "/"))
			}
			node = m[p]
		}
		v, ok := node.(float64)
		if !ok {
			t.Fatalf("%s: %s is %v, want a number", schema, strings.Join(path, "/"), node)
		}
		return v
	}
	res := func(field string) []string {
		return []string{"properties", "resources", "properties", field, "maximum"}
	}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"dispatch-spec timeout_seconds", maximum(SchemaDispatchSpec, "properties", "timeout_seconds", "maximum"), MaxTimeoutSeconds},
		{"dispatch-request cpus", maximum(SchemaRequest, res("cpus")...), MaxCPUs},
		{"dispatch-request memory_mb", maximum(SchemaRequest, res("memory_mb")...), MaxMemoryMB},
		{"dispatch-request pids", maximum(SchemaRequest, res("pids")...), MaxPids},
		{"subagent timeout_seconds", maximum(SchemaSubagent, "properties", "timeout_seconds", "maximum"), MaxTimeoutSeconds},
		{"subagent cpus", maximum(SchemaSubagent, res("cpus")...), MaxCPUs},
		{"subagent memory_mb", maximum(SchemaSubagent, res("memory_mb")...), MaxMemoryMB},
		{"subagent pids", maximum(SchemaSubagent, res("pids")...), MaxPids},
		{"subagent max_rounds", maximum(SchemaSubagent, "properties", "limits", "properties", "max_rounds", "maximum"), MaxRounds},
		{"subagent max_wait_seconds", maximum(SchemaSubagent, "properties", "limits", "properties", "max_wait_seconds", "maximum"), MaxWaitSeconds},
		{"dispatch-request egress", maximum(SchemaRequest, "properties", "egress", "maxItems"), MaxEgressHosts},
		{"subagent egress", maximum(SchemaSubagent, "properties", "egress", "maxItems"), MaxEgressHosts},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: schema maximum %v, Go constant %v", tt.name, tt.got, tt.want)
		}
	}
	// The largest memory_mb the contract allows is a limit in bytes that
	// fits an int64.
	if int64(MaxMemoryMB) > (1<<63-1)>>20 {
		t.Errorf("MaxMemoryMB %d << 20 overflows an int64", MaxMemoryMB)
	}
}

// TestArtifactNamePattern keeps ArtifactNamePattern the event schema's
// artifact_name pattern and the sub-agent schema's output pattern, and
// shows what it lets through.
func TestArtifactNamePattern(t *testing.T) {
	t.Parallel()
	for _, src := range []struct{ schema, def string }{{SchemaEvent, "artifact_name"}, {SchemaSubagent, "output"}, {SchemaDispatchSpec, "output"}} {
		raw, err := Schema(src.schema)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Defs map[string]struct {
				Pattern string `json:"pattern"`
			} `json:"$defs"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if got := doc.Defs[src.def].Pattern; got != ArtifactNamePattern {
			t.Errorf("%s $defs/%s pattern = %s, want ArtifactNamePattern %s", src.schema, src.def, got, ArtifactNamePattern)
		}
	}
	for name, want := range map[string]bool{
		"report.txt": true, "out/report.txt": true, ".hidden": true, "a/.b/c": true, "...": true, "dist/*.tar.gz": true, "reports/**": true,
		"": false, ".": false, "..": false, "../x": false, "a/../b": false, "/etc/passwd": false, "a//b": false, "a/": false,
		"a/.": false, `a\b`: false, "a\x00b": false, "a\nb": false,
	} {
		if got := ValidArtifactName(name); got != want {
			t.Errorf("ValidArtifactName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEventResultAndArtifacts(t *testing.T) {
	t.Parallel()
	code, ms := 0, int64(3)
	ev := Event{Kind: KindFinished, DispatchID: "d-1", Time: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), ExitCode: &code, DurationMS: &ms,
		Result:    json.RawMessage(`{"verdict":"ok"}`),
		Artifacts: []Artifact{{Name: "out/a.txt", Size: 3, SHA256: strings.Repeat("a", 64), URI: "file:///s/blobs/sha256/" + strings.Repeat("a", 64)}},
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEvent(data)
	if err != nil {
		t.Fatalf("ParseEvent(%s): %v", data, err)
	}
	if string(got.Result) != `{"verdict":"ok"}` || len(got.Artifacts) != 1 || got.Artifacts[0].Name != "out/a.txt" {
		t.Errorf("round trip lost data: %s", data)
	}
	for name, in := range map[string]string{
		"result and result_ref": `{"kind":"dispatch.finished","dispatch_id":"d","time":"2026-11-26T09:00:00Z","exit_code":0,"duration_ms":1,"result":1,"result_ref":{"uri":"x","sha256":"` + strings.Repeat("a", 64) + `","size":1}}`,
		"escaping name":         `{"kind":"dispatch.finished","dispatch_id":"d","time":"2026-11-26T09:00:00Z","exit_code":0,"duration_ms":1,"artifacts":[{"name":"../x","size":1,"sha256":"` + strings.Repeat("a", 64) + `"}]}`,
		"bad sha256":            `{"kind":"dispatch.finished","dispatch_id":"d","time":"2026-11-26T09:00:00Z","exit_code":0,"duration_ms":1,"artifacts":[{"name":"x","size":1,"sha256":"../../etc"}]}`,
	} {
		if _, err := ParseEvent([]byte(in)); err == nil {
			t.Errorf("ParseEvent(%s) accepted an event with %s", in, name)
		}
	}
}
