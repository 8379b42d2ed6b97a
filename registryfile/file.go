// Package registryfile reads the registry's files as people write them:
// sub-agent, capability and env definitions in YAML or JSON, checked
// against their JSON Schemas with errors that name the file, the line and
// the field, and a capability's directory packed into the tar the API
// takes. The CLI uses it before it sends anything (agora subagent
// register, agora validate, agora dispatch --subagent-file); the server
// receives the parsed JSON and checks it again.
package registryfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// CapabilityFile is a capability as its file describes it: a directory to
// pack. Its format is schemas/capability.schema.json.
type CapabilityFile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Path        string `json:"path"`
}

// MaxFileBytes caps a registry file (sub-agent, capability or env).
const MaxFileBytes = 1 << 20

// FileError is a registry file that cannot be used; every problem names
// the file, the line when known, the field and what is wrong.
type FileError struct {
	File     string
	Problems []FileProblem
}

// FileProblem is one thing wrong in a file.
type FileProblem struct {
	Line int // 0: unknown
	// Field is the dotted path, e.g. limits.max_rounds; "" is the document.
	Field   string
	Message string
}

func (p FileProblem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %s: ", p.Field)
	}
	b.WriteString(p.Message)
	return b.String()
}

func (e *FileError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return e.File + ": " + strings.Join(parts, "; ")
}

func fileErr(file string, line int, field, format string, args ...any) *FileError {
	return &FileError{File: file, Problems: []FileProblem{{Line: line, Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// ReadFile reads a registry file with a size cap.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fileErr(path, 0, "", "larger than %d bytes", MaxFileBytes)
	}
	return data, nil
}

// ParseSubagent reads a sub-agent file (YAML or JSON) and checks it against
// schemas/subagent.schema.json. file names it in errors.
func ParseSubagent(file string, data []byte) (*wire.Subagent, error) {
	var s wire.Subagent
	if err := parse(file, data, schemas.SchemaSubagent, &s); err != nil {
		return nil, err
	}
	if _, err := schemas.CheckNetwork(s.Network, s.Egress); err != nil {
		return nil, fileErr(file, 0, "", "%v", err)
	}
	if err := schemas.CheckOutputs(s.Outputs); err != nil {
		return nil, fileErr(file, 0, "outputs", "%v", strings.TrimPrefix(err.Error(), "outputs: "))
	}
	return &s, nil
}

// ParseCapability reads a capability file.
func ParseCapability(file string, data []byte) (*CapabilityFile, error) {
	var c CapabilityFile
	if err := parse(file, data, schemas.SchemaCapability, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// ParseEnv reads an env bundle file.
func ParseEnv(file string, data []byte) (*wire.Env, error) {
	var e wire.Env
	if err := parse(file, data, schemas.SchemaEnv, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// parse decodes YAML (JSON is YAML too) into a JSON document, validates it
// against schema and decodes it into out. Problems carry the YAML line of
// the field they are about.
func parse(file string, data []byte, schema string, out any) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fileErr(file, yamlErrLine(err), "", "not valid YAML or JSON: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return fileErr(file, 0, "", "the file is empty")
	}
	doc := root.Content[0]
	v, err := plain(doc)
	if err != nil {
		return &FileError{File: file, Problems: []FileProblem{*err}}
	}
	js, jerr := json.Marshal(v)
	if jerr != nil {
		return fileErr(file, 0, "", "%v", jerr)
	}
	if err := schemas.Validate(schema, js); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		fe := &FileError{File: file}
		for _, p := range mergeTypeProblems(ve.Problems) {
			fe.Problems = append(fe.Problems, explain(schema, doc, p)...)
		}
		return fe
	}
	// Decoded as every outside document is (docs/contract.md, "Reading
	// JSON"): exact names, JSON Schema integers, errors that name the field.
	if err := schemas.Decode(schema+" file", js, out); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		fe := &FileError{File: file}
		for _, p := range ve.Problems {
			fe.Problems = append(fe.Problems, explain(schema, doc, p)...)
		}
		return fe
	}
	return nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// plain turns a YAML node into the JSON-compatible value it denotes.
func plain(n *yaml.Node) (any, *FileProblem) {
	switch n.Kind {
	case yaml.DocumentNode:
		return plain(n.Content[0])
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, &FileProblem{Line: k.Line, Message: "a key must be a plain string"}
			}
			if _, dup := m[k.Value]; dup {
				return nil, &FileProblem{Line: k.Line, Field: k.Value, Message: "given twice"}
			}
			v, p := plain(n.Content[i+1])
			if p != nil {
				return nil, p
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, p := plain(c)
			if p != nil {
				return nil, p
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, &FileProblem{Line: n.Line, Message: err.Error()}
			}
			return b, nil
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, &FileProblem{Line: n.Line, Message: fmt.Sprintf("%q is not a finite number", n.Value)}
			}
			return json.Number(n.Value), nil
		}
		return n.Value, nil
	}
	return nil, &FileProblem{Line: n.Line, Message: "unsupported YAML node"}
}

var wrongType = regexp.MustCompile(`^expected (.+), but got (.+)$`)

// mergeTypeProblems folds the type mismatches of one value (a oneOf of a
// string or a list) into one: "expected string or array, but got object".
func mergeTypeProblems(in []schemas.Problem) []schemas.Problem {
	var out []schemas.Problem
	at := map[string]int{} // pointer → index in out of its type problem
	for _, p := range in {
		m := wrongType.FindStringSubmatch(p.Message)
		if m == nil {
			out = append(out, p)
			continue
		}
		if i, ok := at[p.Pointer]; ok {
			prev := wrongType.FindStringSubmatch(out[i].Message)
			out[i].Message = fmt.Sprintf("expected %s or %s, but got %s", prev[1], m[1], m[2])
			continue
		}
		at[p.Pointer] = len(out)
		out = append(out, p)
	}
	return out
}

var additional = regexp.MustCompile(`additionalProperties ('.*') not allowed`)

// explain turns one schema problem into what a person fixes: the line and
// dotted field, and for an unknown field the fields that are known there.
func explain(schema string, doc *yaml.Node, p schemas.Problem) []FileProblem {
	tokens := pointerTokens(p.Pointer)
	node := find(doc, tokens)
	line := 0
	if node != nil {
		line = node.Line
	}
	field := strings.Join(tokens, ".")
	if m := additional.FindStringSubmatch(p.Message); m != nil {
		var out []FileProblem
		known := knownFields(schema, tokens)
		for _, name := range strings.Split(m[1], ", ") {
			name = strings.Trim(name, "'")
			l := line
			if k := findKey(node, name); k != nil {
				l = k.Line
			}
			msg := "unknown field"
			if len(known) > 0 {
				msg += " (known: " + strings.Join(known, ", ") + ")"
			}
			out = append(out, FileProblem{Line: l, Field: join(field, name), Message: msg})
		}
		return out
	}
	if strings.HasPrefix(p.Message, "missing properties: ") {
		var out []FileProblem
		for _, name := range strings.Split(strings.TrimPrefix(p.Message, "missing properties: "), ", ") {
			out = append(out, FileProblem{Line: line, Field: join(field, strings.Trim(name, "'")), Message: "missing"})
		}
		return out
	}
	if len(tokens) == 2 && tokens[0] == "outputs" && strings.HasPrefix(p.Message, "does not match pattern") && node != nil {
		// The pattern says it exactly, but not in words.
		return []FileProblem{{Line: line, Field: field, Message: fmt.Sprintf("%q is not a glob of files inside the workspace: want a relative path with '/' separators, no leading '/', no '.' or '..' segment, no backslash, e.g. dist/*.tar.gz or reports/**", node.Value)}}
	}
	return []FileProblem{{Line: line, Field: field, Message: p.Message}}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func pointerTokens(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// find walks tokens (keys and indexes) down from n.
func find(n *yaml.Node, tokens []string) *yaml.Node {
	for _, tok := range tokens {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch {
		case n == nil:
			return nil
		case n.Kind == yaml.MappingNode:
			k := findKey(n, tok)
			if k == nil {
				return n
			}
			n = valueOf(n, k)
		case n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n
			}
			n = n.Content[i]
		default:
			return n
		}
	}
	return n
}

func findKey(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func valueOf(m, key *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i] == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// knownFields lists the properties the schema allows at tokens.
func knownFields(schema string, tokens []string) []string {
	raw, err := schemas.Schema(schema)
	if err != nil {
		return nil
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	for _, tok := range tokens {
		props, _ := s["properties"].(map[string]any)
		next, _ := props[tok].(map[string]any)
		if next == nil {
			return nil
		}
		s = next
	}
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// File is a registry file read and checked as register sends it: one of
// Subagent, Capability (with Archive, its directory packed) and Env.
type File struct {
	Subagent   *wire.Subagent
	Capability *CapabilityFile
	Archive    []byte
	Env        *wire.Env
}

// Parse checks a registry file of kind the one way register and validate
// both do: YAML or JSON against the kind's schema, and for a capability
// its directory packed. file names it in errors and is where a
// capability's relative path starts.
func Parse(kind wire.Kind, file string, data []byte) (File, error) {
	var f File
	var err error
	switch kind {
	case wire.KindSubagent:
		f.Subagent, err = ParseSubagent(file, data)
	case wire.KindCapability:
		if f.Capability, err = ParseCapability(file, data); err != nil {
			break
		}
		dir := f.Capability.Path
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(file), dir)
		}
		if f.Archive, _, err = PackDir(dir, wire.MaxCapabilityBytes); err != nil {
			err = fmt.Errorf("%s: field path: %w", file, err)
		}
	case wire.KindEnv:
		f.Env, err = ParseEnv(file, data)
	default:
		err = fmt.Errorf("%s: no registry kind %q", file, kind)
	}
	return f, err
}
