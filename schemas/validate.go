package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

//go:embed *.schema.json
var files embed.FS

// Schema names accepted by Schema and Validate.
const (
	SchemaDispatchSpec = "dispatch-spec"
	SchemaNeedsInput   = "needs-input"
	SchemaEvent        = "event"
	SchemaRequest      = "dispatch-request"
	// The registry's files, written by people: strict about unknown fields.
	SchemaSubagent   = "subagent"
	SchemaCapability = "capability"
	SchemaEnv        = "env"
)

// Names lists the schemas this package ships.
func Names() []string {
	return []string{SchemaRequest, SchemaDispatchSpec, SchemaEvent, SchemaNeedsInput, SchemaSubagent, SchemaCapability, SchemaEnv}
}

// Schema returns the raw JSON Schema document called name, for integrators
// who validate on their side (`agora schema <name>`).
func Schema(name string) ([]byte, error) {
	data, err := files.ReadFile(name + ".schema.json")
	if err != nil {
		return nil, fmt.Errorf("unknown schema %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return data, nil
}

const baseURL = "https://agora.dev/schemas/"

// Problem is one way a document breaks its schema.
type Problem struct {
	// Pointer is the JSON pointer of the offending value; "" is the document itself.
	Pointer string
	Message string
}

func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(document)"
	}
	return ptr + ": " + p.Message
}

// ValidationError lists every problem found in one document.
type ValidationError struct {
	// What names the document, e.g. "dispatch spec".
	What     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("invalid %s: %s", e.What, strings.Join(parts, "; "))
}

// Validate checks data against the schema called name. A document that is
// not JSON, or breaks the schema, yields a *ValidationError.
func Validate(name string, data []byte) error {
	get, ok := compiledSchemas[name]
	if !ok {
		return fmt.Errorf("unknown schema %q (have %s)", name, strings.Join(Names(), ", "))
	}
	s, err := get()
	if err != nil {
		return err
	}
	what := strings.ReplaceAll(name, "-", " ")
	if !utf8.Valid(data) {
		return &ValidationError{What: what, Problems: []Problem{{Message: "not valid UTF-8"}}}
	}
	doc, err := decodeJSON(data)
	if err != nil {
		return &ValidationError{What: what, Problems: []Problem{{Message: "not valid JSON: " + err.Error()}}}
	}
	ps, err := check(s, doc)
	if err != nil {
		return fmt.Errorf("validate %s: %w", what, err)
	}
	if len(ps) > 0 {
		return &ValidationError{What: what, Problems: ps}
	}
	return nil
}

// decodeJSON decodes exactly one JSON value, keeping numbers exact.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// dedupSorted drops repeated problems and orders them by pointer, keeping
// the order of problems at the same pointer.
func dedupSorted(ps []Problem) []Problem {
	out := ps[:0:0]
	seen := map[Problem]bool{}
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// ParseDispatchSpec validates data as a dispatch spec and decodes it.
func ParseDispatchSpec(data []byte) (*DispatchSpec, error) {
	if err := Validate(SchemaDispatchSpec, data); err != nil {
		return nil, err
	}
	var s DispatchSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode dispatch spec: %w", err)
	}
	return &s, nil
}

// ParseNeedsInput validates data as a needs_input sentinel and decodes it.
// Unknown fields are ignored.
func ParseNeedsInput(data []byte) (*NeedsInput, error) {
	if err := Validate(SchemaNeedsInput, data); err != nil {
		return nil, err
	}
	var n NeedsInput
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("decode sentinel: %w", err)
	}
	n.PartialStateRef = nil // a sentinel carries state inline; refs are the worker's to make
	if isJSONNull(n.PartialState) {
		n.PartialState = nil
	} else {
		// Compact so the state travels and hashes the same however it was written.
		var buf bytes.Buffer
		if err := json.Compact(&buf, n.PartialState); err != nil {
			return nil, fmt.Errorf("decode sentinel partial_state: %w", err)
		}
		n.PartialState = buf.Bytes()
	}
	return &n, nil
}

// ParseDispatchRequest validates data as a dispatch request and decodes it.
func ParseDispatchRequest(data []byte) (*DispatchRequest, error) {
	if err := Validate(SchemaRequest, data); err != nil {
		return nil, err
	}
	var r DispatchRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode dispatch request: %w", err)
	}
	return &r, nil
}

// ParseEvent validates data as a lifecycle event and decodes it.
func ParseEvent(data []byte) (*Event, error) {
	if err := Validate(SchemaEvent, data); err != nil {
		return nil, err
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	return &e, nil
}

func isJSONNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}
