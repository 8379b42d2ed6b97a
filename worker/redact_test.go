package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

const testPEM = "-----BEGIN OPENSSH PRIVATE KEY-----\n" +
	"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" +
	"QyNTUxOQAAACDdMfHxmCFdOsI1Ci3CdE1ckZ8mR2tXk3v2rR2mX8F1fQAAAJgT5yGCE+ch\n" +
	"-----END OPENSSH PRIVATE KEY-----\n"

func testRedactor(t *testing.T) *redactor {
	t.Helper()
	r := newRedactor()
	for name, v := range map[string]string{
		"GITHUB_TOKEN": "ghp_abcdef123456",
		"DB_PASSWORD":  "hunter2!\n", // stored with its newline
		"SSH_KEY":      testPEM,
		"QUOTED":       `pa"ss\word`,
	} {
		if !r.add(name, v) {
			t.Fatalf("add(%s) = false", name)
		}
	}
	return r
}

func TestRedactString(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	pemLine := strings.Split(testPEM, "\n")[1]
	tests := []struct{ in, want string }{
		{"no secrets here", "no secrets here"},
		{"token=ghp_abcdef123456.", "token=[REDACTED:GITHUB_TOKEN]."},
		{"ghp_abcdef123456ghp_abcdef123456", "[REDACTED:GITHUB_TOKEN][REDACTED:GITHUB_TOKEN]"},
		{"ghp_abcdef12345", "ghp_abcdef12345"}, // a prefix is not the secret
		{"pw: hunter2!\n\n", "pw: [REDACTED:DB_PASSWORD]\n\n"},
		{"pw: hunter2! (without its newline)", "pw: [REDACTED:DB_PASSWORD] (without its newline)"},
		{"key:\n" + testPEM + "done", "key:\n[REDACTED:SSH_KEY]\ndone"},
		{"one line of it: " + pemLine, "one line of it: [REDACTED:SSH_KEY]"},
		{"in JSON: " + jsonString(testPEM), "in JSON: \"[REDACTED:SSH_KEY]\\n\""},
		{"in JSON: " + jsonString(`pa"ss\word`), "in JSON: \"[REDACTED:QUOTED]\""},
		{"raw: pa\"ss\\word", "raw: [REDACTED:QUOTED]"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestRedactShortAndDuplicate(t *testing.T) {
	t.Parallel()
	r := newRedactor()
	if r.add("PIN", "123") {
		t.Error("add of a 3-byte secret = true, want false (too short to redact)")
	}
	if r.add("EMPTY", "") {
		t.Error("add of an empty secret = true")
	}
	if got := r.String("pin 123"); got != "pin 123" {
		t.Errorf("a short secret was redacted: %q", got)
	}
	if !r.add("FIRST", "same-value") || !r.add("SECOND", "same-value") {
		t.Fatal("add = false")
	}
	if got := r.String("x same-value y"); got != "x [REDACTED:FIRST] y" {
		t.Errorf("two secrets with one value: %q, want the first name", got)
	}
	// Overlapping secrets: the longest match at the leftmost position wins.
	if !r.add("LONG", "abcd-efgh-ijkl") || !r.add("SHORT", "efgh") {
		t.Fatal("add = false")
	}
	if got := r.String("abcd-efgh-ijkl efgh"); got != "[REDACTED:LONG] [REDACTED:SHORT]" {
		t.Errorf("overlapping secrets: %q", got)
	}
}

// TestRedactWriterSplits writes an output holding every secret at every
// possible split into two writes, and in one-byte writes: the result is
// always the same as redacting it whole.
func TestRedactWriterSplits(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	input := "start ghp_abcdef123456 mid hunter2!\nkey:\n" + testPEM + "json " + jsonString(testPEM) + " end without newline ghp_abcdef123456"
	want := r.String(input)
	if strings.Contains(want, "ghp_") || strings.Contains(want, "hunter2") || strings.Contains(want, "b3BlbnNza") {
		t.Fatalf("String left a secret in %q", want)
	}
	for cut := 0; cut <= len(input); cut++ {
		var out bytes.Buffer
		w := newRedactWriter(&out, r)
		for _, part := range []string{input[:cut], input[cut:]} {
			if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(part))
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("split at %d: got\n%q\nwant\n%q", cut, out.String(), want)
		}
	}
	var out bytes.Buffer
	w := newRedactWriter(&out, r)
	for i := range len(input) {
		w.Write([]byte{input[i]})
	}
	w.Close()
	if out.String() != want {
		t.Errorf("one-byte writes: got\n%q\nwant\n%q", out.String(), want)
	}
}

// TestRedactWriterStreams: complete lines go out at once, an unfinished
// line is held until its newline, Close, or the hold limit.
func TestRedactWriterStreams(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	var out bytes.Buffer
	w := newRedactWriter(&out, r)
	w.Write([]byte("line one ghp_abcdef123456\npartial ghp_abc"))
	if got := out.String(); got != "line one [REDACTED:GITHUB_TOKEN]\n" {
		t.Errorf("after a line and a half: %q", got)
	}
	w.Write([]byte("def123456 rest\n"))
	if got := out.String(); got != "line one [REDACTED:GITHUB_TOKEN]\npartial [REDACTED:GITHUB_TOKEN] rest\n" {
		t.Errorf("after the newline: %q", got)
	}
	w.Write([]byte("no newline at the end"))
	w.Close()
	if !strings.HasSuffix(out.String(), "no newline at the end") {
		t.Errorf("Close lost the held bytes: %q", out.String())
	}
	// After Close writes are redacted one by one.
	w.Write([]byte("late ghp_abcdef123456"))
	if !strings.HasSuffix(out.String(), "late [REDACTED:GITHUB_TOKEN]") {
		t.Errorf("write after Close: %q", out.String())
	}

	// A line without a newline is not held forever.
	out.Reset()
	w = newRedactWriter(&out, r)
	long := strings.Repeat("x", redactHoldMax+1)
	w.Write([]byte(long))
	if out.Len() != len(long) {
		t.Errorf("after %d bytes without a newline %d were written, want all", len(long), out.Len())
	}
	// …except a tail that may be the start of a secret.
	w.Write([]byte(strings.Repeat("y", redactHoldMax) + "ghp_abc"))
	if strings.HasSuffix(out.String(), "ghp_abc") {
		t.Error("the start of a secret was written before it could be decided")
	}
	w.Write([]byte("def123456"))
	w.Close()
	if !strings.HasSuffix(out.String(), "y[REDACTED:GITHUB_TOKEN]") {
		t.Errorf("secret across the hold limit: tail %q", out.String()[out.Len()-40:])
	}
}

// TestRedactWriterBeforeSecrets: until a secret is known, writes pass
// through unbuffered; secrets added later apply from then on.
func TestRedactWriterBeforeSecrets(t *testing.T) {
	t.Parallel()
	r := newRedactor()
	var out bytes.Buffer
	w := newRedactWriter(&out, r)
	w.Write([]byte("early, no newline"))
	if out.String() != "early, no newline" {
		t.Errorf("write before any secret held back: %q", out.String())
	}
	r.add("T", "later-secret")
	w.Write([]byte(" later-secret\n"))
	w.Close()
	if out.String() != "early, no newline [REDACTED:T]\n" {
		t.Errorf("got %q", out.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRedactWriterError(t *testing.T) {
	t.Parallel()
	w := newRedactWriter(failWriter{}, testRedactor(t))
	if _, err := w.Write([]byte("a line\n")); err == nil {
		t.Error("Write to a failing destination = nil error")
	}
	if _, err := w.Write([]byte("more\n")); err == nil {
		t.Error("second Write = nil error")
	}
	if err := w.Close(); err == nil {
		t.Error("Close = nil error")
	}
}

// TestRedactWriterConcurrent: two streams (a runtime's stdout and stderr)
// writing lines at once lose nothing and leak nothing. Run with -race.
func TestRedactWriterConcurrent(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	var out testutil.Buffer
	w := newRedactWriter(&out, r)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				fmt.Fprintf(w, "stream %d line %d ghp_abcdef123456\n", g, i)
			}
		}()
	}
	wg.Wait()
	w.Close()
	got := out.String()
	if strings.Contains(got, "ghp_") || strings.Count(got, "[REDACTED:GITHUB_TOKEN]\n") != 400 {
		t.Errorf("concurrent writes: %d redacted lines, leak=%v", strings.Count(got, "[REDACTED:GITHUB_TOKEN]\n"), strings.Contains(got, "ghp_"))
	}
}

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"b": "ghp_abcdef123456", "n": 12345678901234567890, "f": 1.50, "t": true, "z": null}`,
			`{"b":"[REDACTED:GITHUB_TOKEN]","f":1.50,"n":12345678901234567890,"t":true,"z":null}`},
		{`["x", {"deep": ["token ghp_abcdef123456 here"]}]`, `["x",{"deep":["token [REDACTED:GITHUB_TOKEN] here"]}]`},
		{`{"ghp_abcdef123456": "as a key"}`, `{"[REDACTED:GITHUB_TOKEN]":"as a key"}`},
		{`{"key": ` + jsonString(testPEM) + `}`, `{"key":"[REDACTED:SSH_KEY]\n"}`},
		{`"ghp_abcdef123456"`, `"[REDACTED:GITHUB_TOKEN]"`},
		{`12`, `12`},
	}
	for _, tt := range tests {
		if got := string(r.JSON(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("JSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Unchanged means byte for byte, spacing included.
	in := json.RawMessage("{ \"a\" : [1, 2] }")
	if got := r.JSON(in); string(got) != string(in) {
		t.Errorf("JSON without secrets = %s, want it untouched", got)
	}
}

func TestRedactNeedsInput(t *testing.T) {
	t.Parallel()
	r := testRedactor(t)
	def := "use ghp_abcdef123456"
	q := &schemas.NeedsInput{
		Question:     "Is ghp_abcdef123456 right?",
		Options:      []string{"yes", "hunter2!"},
		Context:      "key:\n" + testPEM,
		Default:      &def,
		PartialState: json.RawMessage(`{"pw":"hunter2!\n","n":3}`),
	}
	r.needsInput(q)
	data, _ := json.Marshal(q)
	for _, leak := range []string{"ghp_", "hunter2", "b3BlbnNza"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("needs_input after redaction holds %q: %s", leak, data)
		}
	}
	want := `{"question":"Is [REDACTED:GITHUB_TOKEN] right?","options":["yes","[REDACTED:DB_PASSWORD]"],"context":"key:\n[REDACTED:SSH_KEY]\n","default":"use [REDACTED:GITHUB_TOKEN]","partial_state":{"n":3,"pw":"[REDACTED:DB_PASSWORD]\n"}}`
	if string(data) != want {
		t.Errorf("needs_input = %s\nwant %s", data, want)
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestRedactHandler(t *testing.T) {
	t.Parallel()
	r := newRedactor()
	var buf bytes.Buffer
	log := slog.New(newRedactHandler(slog.NewTextHandler(&buf, nil), r)).With("dispatch_id", "d-1")
	log.Info("before ghp_abcdef123456 is known")
	r.add("GITHUB_TOKEN", "ghp_abcdef123456")
	r.add("SSH_KEY", testPEM)
	log.With("bound", "ghp_abcdef123456").WithGroup("g").Info("msg ghp_abcdef123456",
		"s", "x ghp_abcdef123456",
		"err", errors.New("open ghp_abcdef123456: denied"),
		"str", stringer{"ghp_abcdef123456"},
		"bytes", []byte("ghp_abcdef123456"),
		"pem", testPEM,
		slog.Group("inner", "deep", "ghp_abcdef123456"),
		"n", 42,
		"lazy", slog.AnyValue(lazy{}),
	)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines = %d, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "before ghp_abcdef123456 is known") {
		t.Errorf("a line logged before the secret was known changed: %s", lines[0])
	}
	got := lines[1]
	if strings.Contains(got, "ghp_") || strings.Contains(got, "b3BlbnNza") {
		t.Errorf("log line leaks a secret: %s", got)
	}
	for _, want := range []string{
		`msg="msg [REDACTED:GITHUB_TOKEN]"`, `bound=[REDACTED:GITHUB_TOKEN]`, `g.s="x [REDACTED:GITHUB_TOKEN]"`,
		`g.err="open [REDACTED:GITHUB_TOKEN]: denied"`, `g.str=[REDACTED:GITHUB_TOKEN]`, `g.bytes=[REDACTED:GITHUB_TOKEN]`,
		`g.pem="[REDACTED:SSH_KEY]\n"`, `g.inner.deep=[REDACTED:GITHUB_TOKEN]`, `g.n=42`, `g.lazy=[REDACTED:GITHUB_TOKEN]`, `dispatch_id=d-1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log line lacks %s: %s", want, got)
		}
	}
}

// lazy is a slog.LogValuer resolved only when the record is handled.
type lazy struct{}

func (lazy) LogValue() slog.Value { return slog.StringValue("ghp_abcdef123456") }

// BenchmarkRedactWriter: the cost of redaction on a runtime's output, with
// a handful of secrets (one a PEM key), per MB of ordinary log lines.
func BenchmarkRedactWriter(b *testing.B) {
	r := newRedactor()
	r.add("GITHUB_TOKEN", "ghp_abcdef123456")
	r.add("DB_PASSWORD", "hunter2!\n")
	r.add("SSH_KEY", testPEM)
	r.add("API", "sk-live-0123456789abcdef")
	line := []byte("2026-11-22T08:00:00Z INFO compiling package github.com/example/project/internal/thing (step 3 of 9)\n")
	var chunk []byte
	for len(chunk) < 32<<10 {
		chunk = append(chunk, line...)
	}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	w := newRedactWriter(io.Discard, r)
	for b.Loop() {
		w.Write(chunk)
	}
	w.Close()
}
