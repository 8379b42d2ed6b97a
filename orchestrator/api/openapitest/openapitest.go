// Package openapitest checks HTTP traffic against the API's OpenAPI
// document (api.OpenAPI) in tests: Handler wraps an API handler so that
// every request a test, the Go client or the CLI sends and every response
// the server gives is validated with kin-openapi's openapi3filter, and a
// mismatch fails the test.
//
// Only tests import it: it is the one importer of kin-openapi, which the
// server and the client never link.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

// maxBody bounds the response body kept for validation; a longer one is
// checked for its status, headers and content type only.
const maxBody = 8 << 20

// checker is the document, loaded once per test binary.
type checker struct {
	doc    *openapi3.T
	router routers.Router
}

var load = sync.OnceValues(func() (*checker, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("load openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	// The test servers listen on random ports: match paths, not the
	// document's example server.
	doc.Servers = nil
	openapi3filter.RegisterBodyDecoder("application/x-tar", openapi3filter.FileBodyDecoder)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &checker{doc: doc, router: router}, nil
})

// value checks one JSON value against a component schema.
func (c *checker) value(component string, data []byte) error {
	ref := c.doc.Components.Schemas[component]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("no schema %s in openapi.json", component)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return ref.Value.VisitJSON(v, openapi3.MultiErrors())
}

// stream checks what openapi.json says in words about the streams: the
// data of each server-sent event, and the Agora-Error trailer of a logs
// stream.
func (c *checker) stream(r *http.Request, header http.Header, rec *recorder) error {
	var errs []error
	if v := header.Get(http.TrailerPrefix + wire.TrailerError); v != "" {
		if err := c.value("ErrorBody", []byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("trailer %s: %w", wire.TrailerError, err))
		}
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if ct != "text/event-stream" || rec.truncated {
		return errors.Join(errs...)
	}
	event := ""
	for line := range strings.Lines(rec.body.String()) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			event = ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			schema := map[string]string{wire.EventTask: "Change", wire.EventError: "ErrorBody"}[event]
			if schema == "" {
				errs = append(errs, fmt.Errorf("event %q of %s is not in openapi.json", event, r.URL.Path))
				continue
			}
			if err := c.value(schema, []byte(strings.TrimPrefix(line, "data: "))); err != nil {
				errs = append(errs, fmt.Errorf("event %s: %w", event, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Mode says how a request the document refuses is judged.
type Mode int

const (
	// Lenient lets a test send a request the document refuses on purpose
	// (a bad body, a bad query), and then requires the server to refuse it
	// too: a 4xx answer.
	Lenient Mode = iota
	// Strict fails the test on any request the document refuses: for
	// suites whose requests come from the Go client or the CLI, which must
	// only send what the document allows.
	Strict
)

// Handler wraps h, an API handler, so that every request and response is
// checked against the document; t.Errorf reports each mismatch. A request
// to a path or method the document does not have is left to h (its 404 or
// 405 is checked like any error body only when the path is documented).
func Handler(t testing.TB, h http.Handler, mode Mode) http.Handler {
	t.Helper()
	w, err := Wrap(h, mode, func(msg string) { t.Errorf("%s", msg) })
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	return w
}

// Wrap is Handler for a server that is not in a test's process (an agora
// binary the test started, built with the openapicheck tag): report gets
// each mismatch, one message each.
func Wrap(h http.Handler, mode Mode, report func(msg string)) (http.Handler, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	t := reporter(report)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, ok := findRoute(c.router, r)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		opts := &openapi3filter.Options{
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			IncludeResponseStatus: true,
			SkipSettingDefaults:   true,
			MultiError:            true,
		}
		if mode == Lenient && r.Header.Get("Content-Type") == "" {
			// The server reads a body as what the operation takes whatever
			// Content-Type says; tests often send none.
			if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil {
				for ct := range rb.Value.Content {
					r.Header.Set("Content-Type", ct)
				}
			}
		}
		var reqBody []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			if reqBody, err = io.ReadAll(r.Body); err != nil {
				t.Errorf("openapitest: read the body of %s %s: %v", r.Method, r.URL, err)
			}
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
		reqErr := openapi3filter.ValidateRequest(r.Context(), in)
		if reqErr != nil && mode == Strict {
			t.Errorf("openapitest: request %s %s breaks openapi.json: %v\nbody: %.2000s", r.Method, r.URL, reqErr, reqBody)
		}
		covered(route.Operation.OperationID, r.Method)
		rec := &recorder{ResponseWriter: w}
		panicked := true
		defer func() {
			if panicked {
				return // http.ErrAbortHandler and the like: no response to judge
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			if reqErr != nil && mode == Lenient && (status < 400 || status >= 500) {
				t.Errorf("openapitest: request %s %s breaks openapi.json (%v) but the server answered %d, not a 4xx refusal",
					r.Method, r.URL, reqErr, status)
			}
			if err := c.stream(r, w.Header(), rec); err != nil {
				t.Errorf("openapitest: stream of %s %s breaks openapi.json: %v", r.Method, r.URL, err)
			}
			if err := checkResponse(r.Context(), in, status, w.Header(), rec); err != nil {
				t.Errorf("openapitest: response %d to %s %s breaks openapi.json: %v\nbody: %.2000s",
					status, r.Method, r.URL, err, rec.body.String())
			}
		}()
		h.ServeHTTP(rec, r)
		panicked = false
	}), nil
}

// reporter turns report into the one method Wrap's checks call.
type reporter func(msg string)

func (r reporter) Errorf(format string, args ...any) { r(fmt.Sprintf(format, args...)) }

// findRoute finds r's operation. An artifact's name may hold '/', which a
// path template cannot match: it is escaped for the lookup. HEAD is
// looked up as GET, which the server answers HEAD for.
func findRoute(router routers.Router, r *http.Request) (*routers.Route, map[string]string, bool) {
	lookup := r.Clone(r.Context())
	if lookup.Method == http.MethodHead {
		lookup.Method = http.MethodGet
	}
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/tasks/"); ok {
		if id, name, ok := strings.Cut(rest, "/artifacts/"); ok && !strings.Contains(id, "/") {
			u := *r.URL
			u.RawPath = "/v1/tasks/" + id + "/artifacts/" + strings.ReplaceAll(name, "/", "%2F")
			if p, err := url.PathUnescape(u.RawPath); err == nil {
				u.Path = p
			}
			lookup.URL = &u
		}
	}
	route, params, err := router.FindRoute(lookup)
	if err != nil {
		return nil, nil, false
	}
	return route, params, true
}

// checkResponse validates the response; bodies other than JSON (logs,
// events, artifacts) are checked for their content type only.
func checkResponse(ctx context.Context, in *openapi3filter.RequestValidationInput, status int, header http.Header, rec *recorder) error {
	opts := *in.Options
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: &opts}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	hasBody := in.Request.Method != http.MethodHead && status != http.StatusNoContent
	if ct != "application/json" || rec.truncated {
		opts.ExcludeResponseBody = true
		if hasBody && rec.body.Len() > 0 {
			if err := declared(in.Route, status, ct); err != nil {
				return err
			}
		}
	}
	if status == http.StatusNoContent && rec.body.Len() > 0 {
		return fmt.Errorf("204 with a body of %d bytes", rec.body.Len())
	}
	out.SetBodyBytes(rec.body.Bytes())
	return openapi3filter.ValidateResponse(ctx, out)
}

// declared says whether the operation's response for status has content
// of type ct.
func declared(route *routers.Route, status int, ct string) error {
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("status %d is not documented", status)
	}
	if resp.Value.Content.Get(ct) == nil {
		return fmt.Errorf("content type %q is not documented for status %d", ct, status)
	}
	return nil
}

// recorder passes the response through and keeps its status and the
// first maxBody bytes of its body.
type recorder struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	truncated bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(b) <= maxBody {
		w.body.Write(b)
	} else {
		w.truncated = true
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streams (events, logs) reach the client as they are written.
func (w *recorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// CoverageEnv names a file that, when set, gets one line per checked
// request, "operationId METHOD", so a run of several suites can say which
// operations of the document they exercised.
const CoverageEnv = "AGORA_OPENAPI_COVERAGE"

var coverageMu sync.Mutex

func covered(operationID, method string) {
	name := os.Getenv(CoverageEnv)
	if name == "" {
		return
	}
	coverageMu.Lock()
	defer coverageMu.Unlock()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return // coverage is a report, not a check
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s %s\n", operationID, method)
}

// ReportEnv names the file an agora binary built with the openapicheck
// tag (testenv.Binary builds cmd/agora so) appends each mismatch of its
// HTTP API to, one JSON string a line; without it the binary writes them
// to its stderr.
const ReportEnv = "AGORA_OPENAPI_REPORT"

// Env is ReportEnv=FILE for an agora process the test starts: when the
// test ends (after the process is stopped: call Env before starting it),
// every mismatch the process reported fails the test.
func Env(t testing.TB) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "openapi-report")
	t.Cleanup(func() {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			t.Errorf("openapitest: read the agora process's report: %v", err)
			return
		}
		for line := range strings.Lines(string(data)) {
			var msg string
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				msg = line
			}
			t.Errorf("agora process: %s", msg)
		}
	})
	return ReportEnv + "=" + file
}

// ReportTo is a report for Wrap that appends each message to file (as
// Env reads it), or writes it to stderr when file is "".
func ReportTo(file string, stderr io.Writer) func(msg string) {
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if file == "" {
			fmt.Fprintln(stderr, msg)
			return
		}
		line, _ := json.Marshal(msg)
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "%s (and %s: %v)\n", msg, file, err)
			return
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			fmt.Fprintf(stderr, "%s (and %s: %v)\n", msg, file, err)
		}
	}
}
