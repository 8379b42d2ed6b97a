package worker

import (
	"bytes"
	"io"
	"sync"

	"github.com/agoradev/agora/schemas"
)

// LogWriter is where the worker's own logger writes (stderr, which the
// runtime's output shares). Once Run has read the event key, LogWriter
// signs each line with it (schemas.SignLogLine), so the runner can tell
// the worker's lines from the sub-agent's and mark them in the stored
// output (docs/runner.md, "Output"); a line written before, or without a
// key, goes out as it is.
type LogWriter struct {
	mu  sync.Mutex
	w   io.Writer
	key []byte
}

// NewLogWriter returns a LogWriter writing to w.
func NewLogWriter(w io.Writer) *LogWriter { return &LogWriter{w: w} }

// SetKey is the key lines are signed with from now on.
func (l *LogWriter) SetKey(key []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.key = key
}

// Write signs each complete line of p (slog writes one record, one line,
// per call) and writes them in one call, so they stay whole between the
// runtime's output.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.key == nil {
		return l.w.Write(p)
	}
	out := make([]byte, 0, len(p)+80)
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			out = append(out, rest...)
			break
		}
		out = append(append(out, schemas.SignLogLine(l.key, rest[:i])...), '\n')
		rest = rest[i+1:]
	}
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
