package worker

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/agoradev/agora/schemas"
)

// Redaction limits.
const (
	// MinRedactBytes: a secret value shorter than this is not redacted (it
	// would mangle ordinary output); the worker logs a warning naming it.
	MinRedactBytes = 4
	// minRedactLineBytes: each line of a multi-line secret at least this
	// long is redacted on its own too, so a PEM key printed in pieces, or
	// re-wrapped, is still caught.
	minRedactLineBytes = 8
	// redactHoldMax bounds how much of an unfinished line the streaming
	// writer holds back before it writes it out anyway.
	redactHoldMax = 64 << 10
)

// redactor replaces every known secret value by [REDACTED:NAME]. Secrets
// are added once the env bundles are resolved; until then it passes
// everything through.
type redactor struct {
	mu      sync.RWMutex
	pats    []redactPattern // longest first
	byFirst [256][]int      // indexes into pats by first byte, longest first
	seen    map[string]bool
}

type redactPattern struct {
	val  []byte
	repl []byte
}

func newRedactor() *redactor { return &redactor{seen: map[string]bool{}} }

// add registers a secret. It returns false when the value is too short to
// be redacted; the caller warns, naming the secret.
func (r *redactor) add(name, value string) bool {
	if len(value) < MinRedactBytes {
		return false
	}
	repl := "[REDACTED:" + name + "]"
	// A stored value keeps its trailing newline, and a program prints it
	// inside a line: match it without, so the output keeps its lines.
	base := strings.TrimRight(value, "\r\n")
	if len(base) < MinRedactBytes {
		base = value
	}
	cands := []string{base}
	// Multi-line values also line by line.
	if strings.Contains(base, "\n") {
		for _, line := range strings.Split(base, "\n") {
			if line = strings.TrimRight(line, "\r"); len(line) >= minRedactLineBytes {
				cands = append(cands, line)
			}
		}
	}
	// The value as it appears inside a JSON string (a runtime's JSON
	// stream, a JSON log line): newlines, quotes and backslashes escaped.
	if esc := jsonEscaped(base); esc != base {
		cands = append(cands, esc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cands {
		if r.seen[c] {
			continue // the first secret with this value names it
		}
		r.seen[c] = true
		r.pats = append(r.pats, redactPattern{val: []byte(c), repl: []byte(repl)})
	}
	sort.SliceStable(r.pats, func(i, j int) bool { return len(r.pats[i].val) > len(r.pats[j].val) })
	r.byFirst = [256][]int{}
	for i, p := range r.pats {
		r.byFirst[p.val[0]] = append(r.byFirst[p.val[0]], i)
	}
	return true
}

func jsonEscaped(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return s
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	return out[1 : len(out)-1]
}

func (r *redactor) active() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.pats) > 0
}

// matchAt reports the longest secret starting at buf[i]: its length and
// replacement. partial is true when buf ends inside what could still become
// a longer match, so a streaming caller must wait for more bytes. r.mu is
// held for reading.
func (r *redactor) matchAt(buf []byte, i int, final bool) (n int, repl []byte, partial bool) {
	rest := buf[i:]
	for _, pi := range r.byFirst[rest[0]] {
		p := r.pats[pi]
		if len(rest) >= len(p.val) {
			if n == 0 && bytes.Equal(rest[:len(p.val)], p.val) {
				n, repl = len(p.val), p.repl
			}
			continue
		}
		// Longer than what is buffered: only a prefix can be checked.
		if !final && n == 0 && bytes.HasPrefix(p.val, rest) {
			partial = true
		}
	}
	return n, repl, partial
}

// scan redacts buf[:limit] (matches may run past limit, up to len(buf))
// into out. It returns how far it got: less than limit when buf ends
// inside a possible secret and final is false.
func (r *redactor) scan(out, buf []byte, limit int, final bool) ([]byte, int) {
	i := 0
	for i < limit {
		// Copy the run of bytes no secret starts with in one go.
		j := i
		for j < limit && len(r.byFirst[buf[j]]) == 0 {
			j++
		}
		out = append(out, buf[i:j]...)
		if i = j; i >= limit {
			break
		}
		n, repl, partial := r.matchAt(buf, i, final)
		switch {
		case partial:
			return out, i
		case n > 0:
			out = append(out, repl...)
			i += n
		default:
			out = append(out, buf[i])
			i++
		}
	}
	return out, i
}

// String returns s with every secret replaced.
func (r *redactor) String(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.pats) == 0 || s == "" {
		return s
	}
	out, _ := r.scan(make([]byte, 0, len(s)), []byte(s), len(s), true)
	return string(out)
}

// JSON redacts every string (and object key) inside raw, leaving numbers,
// booleans and nulls alone. raw comes back unchanged, byte for byte, when
// it holds no secret.
func (r *redactor) JSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !r.active() {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep their exact text
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	v, changed := r.walk(v)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func (r *redactor) walk(v any) (any, bool) {
	switch t := v.(type) {
	case string:
		red := r.String(t)
		return red, red != t
	case []any:
		changed := false
		for i, e := range t {
			var c bool
			t[i], c = r.walk(e)
			changed = changed || c
		}
		return t, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(t))
		for k, e := range t {
			e, c := r.walk(e)
			rk := r.String(k)
			out[rk] = e
			changed = changed || c || rk != k
		}
		return out, changed
	}
	return v, false
}

// needsInput redacts the sentinel's question, options, context, default
// and the strings inside partial_state.
func (r *redactor) needsInput(q *schemas.NeedsInput) {
	q.Question = r.String(q.Question)
	q.Context = r.String(q.Context)
	if q.Default != nil {
		d := r.String(*q.Default)
		q.Default = &d
	}
	for i, o := range q.Options {
		q.Options[i] = r.String(o)
	}
	q.PartialState = r.JSON(q.PartialState)
}

// redactWriter is a streaming redacting writer: it passes complete lines
// through the redactor and holds back the rest, so a secret split across
// writes is still caught. An unfinished line longer than redactHoldMax is
// written out anyway, except a tail that could be the start of a secret.
// Close writes whatever is held. Safe for concurrent use.
type redactWriter struct {
	mu     sync.Mutex
	dst    io.Writer
	r      *redactor
	buf    []byte
	out    []byte
	err    error
	closed bool
}

func newRedactWriter(dst io.Writer, r *redactor) *redactWriter {
	return &redactWriter{dst: dst, r: r}
}

// Write implements io.Writer. It reports len(p) written unless writing to
// the destination failed.
func (w *redactWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	switch {
	case w.closed:
		// Nothing is held back any more: each write is redacted whole.
		_, w.err = w.dst.Write([]byte(w.r.String(string(p))))
	case len(w.buf) == 0 && !w.r.active():
		// No secrets known yet: nothing to hold back.
		_, w.err = w.dst.Write(p)
	default:
		w.buf = append(w.buf, p...)
		w.drain(false)
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// drain writes out what can be decided. w.mu is held.
func (w *redactWriter) drain(final bool) {
	limit := len(w.buf)
	if !final && len(w.buf) <= redactHoldMax {
		limit = bytes.LastIndexByte(w.buf, '\n') + 1
	}
	if limit == 0 {
		return
	}
	w.r.mu.RLock()
	out, done := w.r.scan(w.out[:0], w.buf, limit, final)
	w.r.mu.RUnlock()
	w.out = out
	if len(out) > 0 {
		if _, err := w.dst.Write(out); err != nil {
			w.err = err
		}
	}
	n := copy(w.buf, w.buf[done:])
	w.buf = w.buf[:n]
}

// Close writes out everything held back. A write after Close is redacted
// on its own, unbuffered. Idempotent.
func (w *redactWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	if w.err == nil && len(w.buf) > 0 {
		w.drain(true)
	}
	w.closed = true
	return w.err
}

// redactHandler redacts a log record's message and attribute values before
// the handler it wraps formats them: redacting the formatted line would
// miss a secret the format escaped (quotes, newlines).
type redactHandler struct {
	inner slog.Handler
	r     *redactor
}

func newRedactHandler(inner slog.Handler, r *redactor) *redactHandler {
	return &redactHandler{inner: inner, r: r}
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	if !h.r.active() {
		return h.inner.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.r.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts the attributes as they are bound: attributes bound
// before a secret is known (dispatch and task ids) cannot hold it.
func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.r.attr(a)
	}
	return &redactHandler{inner: h.inner.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{inner: h.inner.WithGroup(name), r: h.r}
}

// attr redacts one attribute's value: strings, groups, and anything else
// by the text a handler would print for it (an error's message, say).
func (r *redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, g := range group {
			out[i] = r.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case encoding.TextMarshaler:
			b, err := x.MarshalText()
			if err != nil {
				return slog.Attr{Key: a.Key, Value: v}
			}
			s = string(b)
		case []byte:
			s = string(x)
		default:
			s = fmt.Sprintf("%+v", x)
		}
		if red := r.String(s); red != s {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

var _ slog.Handler = (*redactHandler)(nil)
