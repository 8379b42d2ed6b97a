package runner

import (
	"bytes"
	"io"
	"sync"

	"github.com/agoradev/agora/schemas"
)

// Output.
//
// A container's output mixes three writers: the worker's event lines
// (stdout), the worker's log lines and the sub-agent's output (stderr; and
// a sub-agent can write to either, through /proc/1/fd). Only the runner
// holds the dispatch's key, so the runner marks, in the output it stores
// and streams, each line it verified as the worker's — an event line
// (schemas.VerifyEventLine) or a log line (schemas.VerifyLogLine) — with
// schemas.OutputMark at its start, and no other line: a sub-agent line
// that begins with the mark has it replaced by "␞" (U+241E). Pages and
// agora logs show the sub-agent's lines and keep agora's behind a toggle
// (docs/web.md).

// outputMarkStand is what a sub-agent line's leading mark becomes.
const outputMarkStand = "\u241e"

// maxMarkedLine bounds a line held back to be classified: a longer one is
// passed on in pieces, as the sub-agent's.
const maxMarkedLine = 64 << 10

// outputMarker writes a container's output to dst one whole line at a
// time, marked. Stdout and stderr each get a writer of their own, so a
// line split between chunks of one stream is joined before it is judged.
type outputMarker struct {
	mu  sync.Mutex
	dst io.Writer
	key []byte
}

func newOutputMarker(dst io.Writer, key []byte) *outputMarker {
	return &outputMarker{dst: dst, key: key}
}

// stream returns a writer for one of the container's streams; Flush it
// when the stream ends.
func (m *outputMarker) stream() *markedStream { return &markedStream{m: m} }

// line writes one line (with its newline, or a piece without one).
func (m *outputMarker) line(l []byte) {
	var out []byte
	switch {
	case m.key == nil:
	case bytes.HasSuffix(l, []byte("\n")):
		if _, ok := schemas.VerifyEventLine(m.key, l); ok {
			out = append([]byte{schemas.OutputMark}, l...)
		} else if data, ok := schemas.VerifyLogLine(m.key, l); ok {
			out = append(append([]byte{schemas.OutputMark}, data...), '\n')
		}
	}
	if out == nil {
		out = l
		if len(l) > 0 && l[0] == schemas.OutputMark {
			out = append([]byte(outputMarkStand), l[1:]...)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.dst.Write(out) // the log sink never fails
}

// markedStream is one stream's writer.
type markedStream struct {
	m   *outputMarker
	mu  sync.Mutex
	buf []byte
}

func (s *markedStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		s.m.line(s.buf[:i+1])
		s.buf = s.buf[i+1:]
	}
	if len(s.buf) > maxMarkedLine {
		s.m.line(s.buf)
		s.buf = nil
	}
	if len(s.buf) == 0 {
		s.buf = nil // let a large line's array go
	}
	return len(p), nil
}

// Flush passes on a last line that had no newline.
func (s *markedStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.m.line(s.buf)
		s.buf = nil
	}
}
