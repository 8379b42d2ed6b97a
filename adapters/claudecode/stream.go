package claudecode

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/agoradev/agora/schemas"
)

// maxStreamLine bounds the memory spent on one stream-json line. Lines longer
// than this (a tool result with a whole file in it) are still passed through
// but not parsed; the two lines read for usage — system/init and result — are
// far smaller.
const maxStreamLine = 8 << 20

// streamMessage holds the fields of a stream-json message that agora reads.
// Claude Code writes one JSON object per line:
//
//	{"type":"system","subtype":"init","model":"…","session_id":"…",…}
//	{"type":"assistant","message":{…},"session_id":"…"}
//	{"type":"result","subtype":"success","num_turns":2,"total_cost_usd":0.01,
//	 "usage":{"input_tokens":…,"output_tokens":…},…}
//
// The result message's fields are the Agent SDK's SDKResultMessage
// (https://code.claude.com/docs/en/agent-sdk/typescript): session_id,
// num_turns, total_cost_usd, usage with the prompt cache's
// cache_creation_input_tokens and cache_read_input_tokens, and on an error
// result is_error and errors.
type streamMessage struct {
	Type         string   `json:"type"`
	Subtype      string   `json:"subtype"`
	Model        string   `json:"model"`
	SessionID    string   `json:"session_id"`
	NumTurns     *int     `json:"num_turns"`
	Result       *string  `json:"result"`
	IsError      bool     `json:"is_error"`
	Errors       []string `json:"errors"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// streamWriter passes Claude Code's stdout through to dst unchanged and reads
// the usage out of it line by line as it arrives. Lines that are not the JSON
// it expects are ignored: the stream is the runtime's, and a line it cannot
// read must never fail the dispatch.
type streamWriter struct {
	dst io.Writer
	log *slog.Logger

	mu       sync.Mutex
	line     []byte
	skipping bool // the current line outgrew maxStreamLine; drop it up to its end
	usage    schemas.Usage
	reported bool // the stream carried an init or result message
	text     *string
	// errors are the last result message's errors, when it was one.
	errors []string
}

func newStreamWriter(dst io.Writer, log *slog.Logger) *streamWriter {
	if dst == nil {
		dst = io.Discard
	}
	return &streamWriter{dst: dst, log: log}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	n, err := w.dst.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scan(p[:n])
	return n, err
}

// scan feeds p into the line buffer and parses each completed line.
func (w *streamWriter) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.skipping {
			if len(w.line)+len(chunk) > maxStreamLine {
				w.log.Debug("stream-json line too long to parse; passed through", "limit", maxStreamLine)
				w.skipping, w.line = true, w.line[:0]
			} else {
				w.line = append(w.line, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !w.skipping {
			w.parse(w.line)
		}
		w.skipping, w.line = false, w.line[:0]
		p = p[i+1:]
	}
}

// flush parses a last line that had no newline.
func (w *streamWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.skipping && len(w.line) > 0 {
		w.parse(w.line)
	}
	w.skipping, w.line = false, nil
}

func (w *streamWriter) parse(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var m streamMessage
	if err := json.Unmarshal(line, &m); err != nil {
		w.log.Debug("stream-json line ignored", "err", err)
		return
	}
	switch {
	case m.Type == "system" && m.Subtype == "init":
		if m.Model != "" {
			w.usage.Model = m.Model
		}
		if m.SessionID != "" {
			w.usage.SessionID = m.SessionID
		}
		w.reported = true
	case m.Type == "result":
		// Claude Code writes one result, last; should there be more, the
		// last one wins.
		if m.NumTurns != nil {
			w.usage.Turns = *m.NumTurns
		}
		if m.TotalCostUSD != nil {
			w.usage.CostUSD = *m.TotalCostUSD
		}
		if m.Usage != nil {
			w.usage.InputTokens = m.Usage.InputTokens
			w.usage.OutputTokens = m.Usage.OutputTokens
			w.usage.CacheCreationInputTokens = m.Usage.CacheCreationInputTokens
			w.usage.CacheReadInputTokens = m.Usage.CacheReadInputTokens
		}
		// The init message names the session; a result without one (a
		// run that failed before it began) does not unname it.
		if m.SessionID != "" && w.usage.SessionID == "" {
			w.usage.SessionID = m.SessionID
		}
		w.text, w.errors = nil, nil
		if m.Result != nil && !m.IsError {
			w.text = m.Result
		}
		if m.IsError {
			w.errors = m.Errors
		}
		w.reported = true
	}
}

// Usage is what the stream reported, nil when it carried neither an init nor
// a result message.
func (w *streamWriter) Usage() *schemas.Usage {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.reported {
		return nil
	}
	u := w.usage
	return &u
}

// Text is the final result message's text, nil when the stream carried no
// successful result message with one.
func (w *streamWriter) Text() *string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text
}

// Errors are the error messages of the last result message, when it was
// an error result.
func (w *streamWriter) Errors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errors
}

// phraseWatcher passes what is written through to dst and reports whether
// phrase appeared in it, also across writes.
type phraseWatcher struct {
	dst    io.Writer
	phrase []byte

	mu   sync.Mutex
	tail []byte // the last len(phrase)-1 bytes written
	seen bool
}

func newPhraseWatcher(dst io.Writer, phrase string) *phraseWatcher {
	if dst == nil {
		dst = io.Discard
	}
	return &phraseWatcher{dst: dst, phrase: []byte(phrase)}
}

func (w *phraseWatcher) Write(p []byte) (int, error) {
	n, err := w.dst.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		buf := append(w.tail, p[:n]...)
		w.seen = bytes.Contains(buf, w.phrase)
		keep := min(len(buf), len(w.phrase)-1)
		w.tail = append(w.tail[:0:0], buf[len(buf)-keep:]...)
	}
	return n, err
}

// Seen reports whether the phrase was written.
func (w *phraseWatcher) Seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
