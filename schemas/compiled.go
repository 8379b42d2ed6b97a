package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// compiledSchemas holds each schema, compiled by
// github.com/santhosh-tekuri/jsonschema/v5 (draft 2020-12, format
// assertions on) once per process, on its first use or when Prepare asks:
// a worker process compiles the dispatch spec, the event schema and
// perhaps the sentinel's, and nothing else.
var compiledSchemas = func() map[string]func() (*jsonschema.Schema, error) {
	out := map[string]func() (*jsonschema.Schema, error){}
	for _, name := range Names() {
		out[name] = sync.OnceValues(func() (*jsonschema.Schema, error) {
			s, _, err := compile(name, true)
			return s, err
		})
	}
	return out
}()

// Prepare compiles the named schemas in the background, each on a
// goroutine of its own, and returns at once: a process that knows which
// schemas it is about to use starts their compilation while it does other
// work (the worker, while it reads its configuration and dispatch spec),
// and compiles them in parallel. Validate waits for a compilation under
// way; a failed one is reported by Validate. Unknown names are ignored
// (Validate reports them).
func Prepare(names ...string) {
	for _, name := range names {
		if get, ok := compiledSchemas[name]; ok {
			go func() { _, _ = get() }()
		}
	}
}

// compile compiles the schema called name with a compiler of its own, so
// schemas compile in parallel (the library's compiler is not safe for
// concurrent use; a compiled *jsonschema.Schema is). The library checks
// every document it reads against the draft's meta-schema, which is most
// of a compilation's cost, so with trim set each other schema file the
// $refs reach is cut to the $defs they reach (see documents). It returns
// the files read, in order, and for each cut one the $defs kept (for
// tests).
func compile(name string, trim bool) (*jsonschema.Schema, []string, error) {
	docs, err := documents(name+".schema.json", trim)
	if err != nil {
		return nil, nil, fmt.Errorf("compile schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	var loaded []string
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		file, ok := strings.CutPrefix(url, baseURL)
		if !ok {
			return nil, fmt.Errorf("no schema at %s: only agora's own are loaded", url)
		}
		doc, ok := docs[file]
		if !ok {
			return nil, fmt.Errorf("no schema at %s", url)
		}
		loaded = append(loaded, doc.describe(file))
		return io.NopCloser(bytes.NewReader(doc.data)), nil
	}
	s, err := c.Compile(baseURL + name + ".schema.json")
	if err != nil {
		return nil, loaded, fmt.Errorf("compile schema %s: %w", name, err)
	}
	return s, loaded, nil
}

// document is one schema file as a compilation reads it.
type document struct {
	data []byte
	// defs lists the $defs kept when the file was cut; nil when it is
	// read whole.
	defs []string
}

func (d document) describe(file string) string {
	if d.defs == nil {
		return file
	}
	return file + " $defs " + strings.Join(d.defs, ",")
}

// documents returns the schema files that compiling root reads, by file
// name. The root is read whole. So is any other file that a $ref reaches
// other than through "#/$defs/NAME" (or that uses anchors or ids of its
// own, which a cut could lose), and every file when trim is false. The
// rest are cut to their $schema, $id and the $defs the $refs reach,
// directly or through each other: a $ref resolves to the same subschema,
// under the same base URI, in the cut file as in the whole one, so what
// is compiled validates alike (TestCutDocumentsValidateAlike), and the
// library checks only that much against the meta-schema. Each file is
// compiled whole, and checked whole, when it is itself the schema used.
func documents(root string, trim bool) (map[string]document, error) {
	parsed := map[string]map[string]any{}
	raw := map[string][]byte{}
	load := func(file string) (map[string]any, error) {
		if doc, ok := parsed[file]; ok {
			return doc, nil
		}
		data, err := files.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("no schema file %s", file)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("read schema file %s: %w", file, err)
		}
		parsed[file], raw[file] = doc, data
		return doc, nil
	}
	// A place is a file's whole document (def "") or one of its $defs.
	type place struct{ file, def string }
	whole := map[string]bool{}
	defs := map[string]map[string]bool{}
	queue := []place{{root, ""}}
	seen := map[place]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		doc, err := load(p.file)
		if err != nil {
			return nil, err
		}
		var node any = doc
		if p.def == "" {
			whole[p.file] = true
		} else {
			d, _ := doc["$defs"].(map[string]any)
			sub, ok := d[p.def]
			if !ok {
				return nil, fmt.Errorf("schema file %s has no $defs/%s", p.file, p.def)
			}
			if defs[p.file] == nil {
				defs[p.file] = map[string]bool{}
			}
			defs[p.file][p.def] = true
			node = sub
		}
		refs, local := references(node, p.def != "")
		if !local {
			whole[p.file] = true
		}
		for _, ref := range refs {
			file, frag, _ := strings.Cut(ref, "#")
			if file == "" {
				file = p.file
			}
			if _, err := files.ReadFile(file); err != nil {
				continue // not ours: the library reports it
			}
			def, ok := strings.CutPrefix(frag, "/$defs/")
			if !ok || def == "" || strings.ContainsAny(def, "/~%") {
				def = "" // anything else reads the whole document
			}
			queue = append(queue, place{file, def})
		}
	}
	out := map[string]document{}
	for file := range parsed {
		if whole[file] || !trim {
			out[file] = document{data: raw[file]}
			continue
		}
		doc := parsed[file]
		kept := map[string]any{}
		all, _ := doc["$defs"].(map[string]any)
		for def := range defs[file] {
			kept[def] = all[def]
		}
		cut := map[string]any{"$defs": kept}
		for _, k := range []string{"$schema", "$id"} {
			if v, ok := doc[k]; ok {
				cut[k] = v
			}
		}
		data, err := json.Marshal(cut)
		if err != nil {
			return nil, fmt.Errorf("cut schema file %s: %w", file, err)
		}
		out[file] = document{data: data, defs: slices.Sorted(maps.Keys(defs[file]))}
	}
	return out, nil
}

// references lists the $ref values in a schema (sub)document. local is
// false when, inside a $defs entry (inDef), it declares an $id, an anchor
// or a $dynamicRef: resolving those may need more of the file than the
// entry, so the file is then read whole.
func references(node any, inDef bool) (refs []string, local bool) {
	local = true
	var walk func(any)
	walk = func(n any) {
		switch v := n.(type) {
		case map[string]any:
			for k, child := range v {
				switch k {
				case "$ref":
					if s, ok := child.(string); ok {
						refs = append(refs, s)
					}
				case "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor":
					if inDef {
						local = false
					}
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(node)
	return refs, local
}

// check validates doc (decoded with json.Number) against s and returns the
// problems a person can act on, or an error when validation itself broke.
func check(s *jsonschema.Schema, doc any) ([]Problem, error) {
	err := s.Validate(doc)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Problem{Pointer: e.InstanceLocation, Message: message(e)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return dedupSorted(out), nil
}

// patternMeanings says in words what a pattern of the schemas asks, where
// quoting the pattern would not help a person (NonBlankPattern lists
// invisible characters).
var patternMeanings = map[string]string{
	NonBlankPattern: "must contain a character that is not white space",
}

// message is the library's message for a leaf error, with the patterns of
// patternMeanings said in words and the fields an additionalProperties
// error names in order (the library lists them in map order, so the same
// document got different messages).
func message(e *jsonschema.ValidationError) string {
	if strings.HasSuffix(e.KeywordLocation, "/additionalProperties") {
		if names, ok := strings.CutPrefix(e.Message, "additionalProperties "); ok {
			names, ok := strings.CutSuffix(names, " not allowed")
			if ok && len(names) >= 2 && names[0] == '\'' && names[len(names)-1] == '\'' {
				// Inside a quoted name every ' is escaped, so "', '"
				// only ever separates two names.
				list := strings.Split(names[1:len(names)-1], "', '")
				slices.Sort(list)
				return "additionalProperties '" + strings.Join(list, "', '") + "' not allowed"
			}
		}
	}
	if strings.HasSuffix(e.KeywordLocation, "/pattern") {
		for p, meaning := range patternMeanings {
			if e.Message == "does not match pattern "+quotePattern(p) {
				return meaning
			}
		}
	}
	return e.Message
}

// quotePattern quotes a pattern as the library does in its messages.
func quotePattern(p string) string {
	q := fmt.Sprintf("%q", p)
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q[1:len(q)-1] + "'"
}

// NonBlankPattern is the schemas' pattern for "at least one character that
// is not white space": white space as ECMA-262's \s (which JSON Schema's
// patterns use) and Unicode's White_Space property define it, listed
// explicitly so that Go's regexp, where \s is ASCII only, means the same.
const NonBlankPattern = "[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
