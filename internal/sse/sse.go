// Package sse writes server-sent event streams: the headers a stream
// needs through proxies, and each write flushed and bounded by a deadline,
// so a client that stops reading is dropped instead of holding up what
// feeds it. The API's /v1/events and the web inbox's /ui/events use it.
//
// What it may import: docs/architecture.md.
package sse

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Stream is one client's open event stream.
type Stream struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
}

// Open starts the stream on w: status 200, text/event-stream, no caching
// and no proxy buffering. Each later write must finish within timeout.
func Open(w http.ResponseWriter, timeout time.Duration) *Stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	return &Stream{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// Send writes the formatted text (whole events or comment lines, ending
// in a blank line) and flushes it.
func (s *Stream) Send(format string, args ...any) error {
	if err := s.Write(format, args...); err != nil {
		return err
	}
	return s.rc.Flush()
}

// Write is Send without the flush: a caller with several events at hand
// writes them all and flushes once (Flush), one system call instead of
// one per event. What it writes may reach the client before the flush.
func (s *Stream) Write(format string, args ...any) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	_, err := fmt.Fprintf(s.w, format, args...)
	return err
}

// Flush sends what Write wrote.
func (s *Stream) Flush() error { return s.rc.Flush() }
