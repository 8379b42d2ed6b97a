package schemas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// compiledSchemas holds each schema, compiled by
// github.com/santhosh-tekuri/jsonschema/v5 (draft 2020-12, format
// assertions on) on its first use or when Prepare asks: a worker process validates a dispatch
// spec, its events and perhaps a sentinel, and compiles nothing else.
var compiledSchemas = func() map[string]func() (*jsonschema.Schema, error) {
	out := map[string]func() (*jsonschema.Schema, error){}
	for _, name := range Names() {
		out[name] = sync.OnceValues(func() (*jsonschema.Schema, error) { return theCompiler.compile(name) })
	}
	return out
}()

// Prepare compiles the named schemas in the background, in order, on one
// goroutine, and returns at once: a process that knows which schemas it is
// about to use starts their compilation while it does other work (the
// worker, while it reads its configuration and fetches its dispatch spec,
// from S3 on Fargate). Validate waits for a compilation under way; a failed
// one is reported by Validate. Unknown names are ignored (Validate reports
// them). The schemas share one compiler, so each file is read and checked
// against the meta-schema once: compiling them on goroutines of their own
// would check the files they share once each, more CPU for a worker that
// shares its machine (docs/benchmarks.md).
func Prepare(names ...string) {
	var gets []func() (*jsonschema.Schema, error)
	for _, name := range names {
		if get, ok := compiledSchemas[name]; ok {
			gets = append(gets, get)
		}
	}
	if len(gets) == 0 {
		return
	}
	go func() {
		for _, get := range gets {
			_, _ = get()
		}
	}()
}

// theCompiler is the one compiler of the process: a schema's document is
// read, checked against the meta-schema and compiled once, however many of
// the schemas $ref it (the event schema reaches into the dispatch spec's).
var theCompiler = &sharedCompiler{}

// sharedCompiler serialises the library's compiler, which is not safe for
// concurrent use; a compiled *jsonschema.Schema is.
type sharedCompiler struct {
	mu sync.Mutex
	c  *jsonschema.Compiler
	// loaded lists the schema files read, in order (for tests).
	loaded []string
}

// compile compiles the schema called name, loading the embedded schema
// files only as the $refs reach them.
func (sc *sharedCompiler) compile(name string) (*jsonschema.Schema, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.c == nil {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.AssertFormat = true
		c.LoadURL = func(url string) (io.ReadCloser, error) {
			file, ok := strings.CutPrefix(url, baseURL)
			if !ok {
				return nil, fmt.Errorf("no schema at %s: only agora's own are loaded", url)
			}
			data, err := files.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("no schema at %s", url)
			}
			sc.loaded = append(sc.loaded, file)
			return io.NopCloser(bytes.NewReader(data)), nil
		}
		sc.c = c
	}
	s, err := sc.c.Compile(baseURL + name + ".schema.json")
	if err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", name, err)
	}
	return s, nil
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
