package runner

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/agoradev/agora/schemas"
)

// logSink keeps a dispatch's output for storage, up to a cap, and forwards
// every chunk live. Past the cap it only counts, and the stored copy ends
// with a marker saying how much was dropped.
type logSink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	cap     int64
	dropped int64
	live    func([]byte)
	// last keeps the last complete line seen, for failure details.
	last []byte
	cur  []byte
}

func newLogSink(cap int64, live func([]byte)) *logSink {
	return &logSink{cap: cap, live: live}
}

// Write implements io.Writer; it never fails, so a slow store or a full
// buffer cannot block the container's output.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	room := s.cap - int64(s.buf.Len())
	switch {
	case room >= int64(len(p)):
		s.buf.Write(p)
	case room > 0:
		s.buf.Write(p[:room])
		s.dropped += int64(len(p)) - room
	default:
		s.dropped += int64(len(p))
	}
	for _, c := range p {
		if c == '\n' {
			if len(bytes.TrimSpace(s.cur)) > 0 {
				s.last = append(s.last[:0], s.cur...)
			}
			s.cur = s.cur[:0]
			continue
		}
		if len(s.cur) < 4096 {
			s.cur = append(s.cur, c)
		}
	}
	if s.live != nil {
		s.live(append([]byte(nil), p...))
	}
	return len(p), nil
}

// Bytes is what goes to storage: the kept output, plus the truncation
// marker when something was dropped.
func (s *logSink) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]byte(nil), s.buf.Bytes()...)
	if s.dropped > 0 {
		out = append(out, fmt.Sprintf("\n%c[agora: output truncated at %d bytes; %d more bytes dropped]\n", schemas.OutputMark, s.cap, s.dropped)...)
	}
	return out
}

// LastLine is the last non-empty line written, without its mark.
func (s *logSink) LastLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := s.last
	if len(bytes.TrimSpace(s.cur)) > 0 {
		line = s.cur
	}
	return string(bytes.TrimPrefix(line, []byte{schemas.OutputMark}))
}

// lineWriter calls fn with each complete line (without the newline).
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.fn(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	// A worker's event line is at most ~1 MiB; anything longer is not one.
	if len(w.buf) > 4<<20 {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// Flush hands over a last line that had no newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.fn(w.buf)
		w.buf = nil
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
