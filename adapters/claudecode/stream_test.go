package claudecode

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/schemas"
)

const (
	initLine   = `{"type":"system","subtype":"init","model":"claude-x","session_id":"s"}`
	resultLine = `{"type":"result","subtype":"success","num_turns":4,"total_cost_usd":0.5,"session_id":"s","usage":{"input_tokens":100,"output_tokens":20,"cache_creation_input_tokens":30,"cache_read_input_tokens":400}}`
)

func TestStreamWriter(t *testing.T) {
	t.Parallel()
	full := &schemas.Usage{Model: "claude-x", Turns: 4, CostUSD: 0.5, InputTokens: 100, OutputTokens: 20,
		CacheCreationInputTokens: 30, CacheReadInputTokens: 400, SessionID: "s"}
	tests := []struct {
		name  string
		input string
		chunk int // write in pieces of this size; 0 means at once
		want  *schemas.Usage
	}{
		{name: "init and result", input: initLine + "\n" + resultLine + "\n", want: full},
		{name: "one byte at a time", input: initLine + "\n" + resultLine + "\n", chunk: 1, want: full},
		{name: "last line without newline", input: initLine + "\n" + resultLine, want: full},
		{name: "CRLF line ends", input: initLine + "\r\n" + resultLine + "\r\n", want: full},
		{name: "no stream-json at all", input: "plain text\nmore text\n", want: nil},
		{name: "empty", input: "", want: nil},
		{name: "init only", input: initLine + "\n", want: &schemas.Usage{Model: "claude-x", SessionID: "s"}},
		{name: "result without usage", input: `{"type":"result","num_turns":1}` + "\n", want: &schemas.Usage{Turns: 1}},
		{name: "result names the session without an init", input: resultLine + "\n", want: &schemas.Usage{Turns: 4, CostUSD: 0.5,
			InputTokens: 100, OutputTokens: 20, CacheCreationInputTokens: 30, CacheReadInputTokens: 400, SessionID: "s"}},
		{name: "init names the session", input: initLine + "\n" + strings.Replace(resultLine, `"s"`, `"other"`, 1) + "\n", want: full},
		{
			name:  "malformed lines are ignored",
			input: "{not json\n" + initLine + "\n" + `{"type":"result","num_turns":"four"}` + "\n" + `[1,2]` + "\n" + resultLine + "\n",
			want:  full,
		},
		{name: "last result wins", input: `{"type":"result","num_turns":1}` + "\n" + initLine + "\n" + resultLine + "\n", want: full},
		{
			name:  "over-long line is skipped, the next one parsed",
			input: `{"type":"assistant","text":"` + strings.Repeat("x", maxStreamLine) + `"}` + "\n" + initLine + "\n" + resultLine + "\n",
			chunk: 1 << 20,
			want:  full,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var dst bytes.Buffer
			w := newStreamWriter(&dst, slog.New(slog.DiscardHandler))
			writeChunks(t, w, tt.input, tt.chunk)
			w.flush()
			if dst.String() != tt.input {
				t.Errorf("stream passed through as %d bytes, want the %d bytes written, unchanged", dst.Len(), len(tt.input))
			}
			got := w.Usage()
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("Usage() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A failing destination fails the write (the process's output is lost and
// that must show), but what did get through is still parsed.
func TestStreamWriterDestinationError(t *testing.T) {
	t.Parallel()
	errFull := errors.New("disk full")
	w := newStreamWriter(failAfter{n: len(initLine) + 1, err: errFull}, slog.New(slog.DiscardHandler))
	n, err := w.Write([]byte(initLine + "\n" + resultLine + "\n"))
	if !errors.Is(err, errFull) || n != len(initLine)+1 {
		t.Errorf("Write() = %d, %v; want %d, %v", n, err, len(initLine)+1, errFull)
	}
	if got := w.Usage(); got == nil || got.Model != "claude-x" || got.Turns != 0 {
		t.Errorf("Usage() = %+v, want only the init line's model", got)
	}
}

func writeChunks(t *testing.T, w *streamWriter, s string, size int) {
	t.Helper()
	if size <= 0 {
		size = max(len(s), 1)
	}
	for len(s) > 0 {
		n := min(size, len(s))
		if _, err := w.Write([]byte(s[:n])); err != nil {
			t.Fatal(err)
		}
		s = s[n:]
	}
}

type failAfter struct {
	n   int
	err error
}

func (f failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		return len(p), nil
	}
	return f.n, f.err
}

// An error result's errors are kept until a later result replaces them.
func TestStreamWriterErrors(t *testing.T) {
	t.Parallel()
	errLine := `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: x"]}`
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"error result", errLine + "\n", []string{"No conversation found with session ID: x"}},
		{"success after the error", errLine + "\n" + resultLine + "\n", nil},
		{"errors on a success are not errors", `{"type":"result","is_error":false,"errors":["x"]}` + "\n", nil},
		{"no result", initLine + "\n", nil},
	}
	for _, tt := range tests {
		w := newStreamWriter(nil, slog.New(slog.DiscardHandler))
		writeChunks(t, w, tt.input, 0)
		w.flush()
		if got := w.Errors(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Errors() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The phrase is found however the writes cut it, and everything is passed
// through.
func TestPhraseWatcher(t *testing.T) {
	t.Parallel()
	const phrase = "No conversation found with session ID"
	tests := []struct {
		name  string
		input string
		chunk int
		want  bool
	}{
		{"whole", "Error: " + phrase + ": abc\n", 0, true},
		{"a byte at a time", "Error: " + phrase + ": abc\n", 1, true},
		{"cut in three", "xx" + phrase + "yy", 7, true},
		{"absent", "No conversation found with session", 3, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		var dst bytes.Buffer
		w := newPhraseWatcher(&dst, phrase)
		s, size := tt.input, tt.chunk
		if size <= 0 {
			size = max(len(s), 1)
		}
		for len(s) > 0 {
			n := min(size, len(s))
			if _, err := w.Write([]byte(s[:n])); err != nil {
				t.Fatal(err)
			}
			s = s[n:]
		}
		if w.Seen() != tt.want || dst.String() != tt.input {
			t.Errorf("%s: Seen() = %t, passed %q; want %t, %q", tt.name, w.Seen(), dst.String(), tt.want, tt.input)
		}
	}
}
