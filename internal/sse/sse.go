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
	// buf holds what Write wrote until Flush sends it in one write: an
	// event of a few KB is larger than net/http's buffer, so written
	// through it each event would be a system call of its own.
	buf []byte
}

// maxBuffered is how much Write holds before it sends without a Flush.
const maxBuffered = 256 << 10

// Open starts the stream on w, the response to r: status 200,
// text/event-stream, no caching and no proxy buffering. Each later write
// must finish within timeout.
//
// Over HTTP/1.1 the stream is sent without chunked transfer coding, as the
// SSE specification recommends (net/http's "Transfer-Encoding: identity"):
// the body ends when the connection closes. Chunked, every flush is two
// system calls — the data, then the chunk's closing CRLF — and with 200
// streams open those were a third of serve's CPU (docs/capacity.md, "The
// API under load").
func Open(w http.ResponseWriter, r *http.Request, timeout time.Duration) *Stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if r.ProtoMajor == 1 && r.ProtoMinor >= 1 {
		w.Header().Set("Transfer-Encoding", "identity")
	}
	w.WriteHeader(http.StatusOK)
	return &Stream{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// Send writes the formatted text (whole events or comment lines, ending
// in a blank line) and flushes it.
func (s *Stream) Send(format string, args ...any) error {
	if err := s.Write(format, args...); err != nil {
		return err
	}
	return s.Flush()
}

// Write is Send without the flush: a caller with several events at hand
// writes them all and flushes once (Flush), one system call instead of
// one per event. Past maxBuffered it sends what it holds.
func (s *Stream) Write(format string, args ...any) error {
	s.buf = fmt.Appendf(s.buf, format, args...)
	if len(s.buf) >= maxBuffered {
		return s.send()
	}
	return nil
}

// Event is Write of one event, name and data (one line), without the
// formatting: the API's streams write thousands a second.
func (s *Stream) Event(name string, data []byte) error {
	s.buf = append(s.buf, "event: "...)
	s.buf = append(s.buf, name...)
	s.buf = append(s.buf, "\ndata: "...)
	s.buf = append(s.buf, data...)
	s.buf = append(s.buf, "\n\n"...)
	if len(s.buf) >= maxBuffered {
		return s.send()
	}
	return nil
}

// Flush sends what Write wrote, within the stream's timeout.
func (s *Stream) Flush() error {
	if err := s.send(); err != nil {
		return err
	}
	return s.rc.Flush()
}

// send writes what is held to the response.
func (s *Stream) send() error {
	if len(s.buf) == 0 {
		return nil
	}
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	_, err := s.w.Write(s.buf)
	if cap(s.buf) > maxBuffered {
		s.buf = nil // one burst does not keep a large buffer for the stream's life
	} else {
		s.buf = s.buf[:0]
	}
	return err
}
