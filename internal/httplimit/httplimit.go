// Package httplimit bounds what a request can make a server hold before
// anything about it is checked: the size of its body and the time its
// body may take to arrive.
package httplimit

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// Defaults for Bodies.
const (
	// DefaultMaxBodyBytes caps a request body; a route may set a smaller
	// cap of its own (MaxBytes) before it reads.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultBodyTimeout bounds the time from a request's headers to the
	// end of its body, so a body sent a byte a second is cut off.
	DefaultBodyTimeout = 30 * time.Second
)

// Bodies serves next with every request body capped at max bytes and read
// under a deadline of timeout from now; the deadline is lifted once the
// body has been read to its end, so a handler that works longer after
// reading (or a stream, which has no body) is not cut off. A request
// without a body is passed on as it is.
func Bodies(next http.Handler, max int64, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// Not every connection supports deadlines (HTTP/2 test recorders);
		// the cap still holds there.
		deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		r.Body = &bounded{ReadCloser: http.MaxBytesReader(w, r.Body, max), rc: rc, deadline: deadline}
		next.ServeHTTP(w, r)
	})
}

// MaxBytes lowers r's body cap to max (a sign-in form needs a few hundred
// bytes): what it reads past max is an error, as with http.MaxBytesReader.
func MaxBytes(w http.ResponseWriter, r *http.Request, max int64) {
	r.Body = http.MaxBytesReader(w, r.Body, max)
}

// TooLarge reports whether err is a body over its cap.
func TooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// bounded lifts the read deadline when the body ends.
type bounded struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline bool
}

func (b *bounded) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && b.deadline {
		b.deadline = false
		_ = b.rc.SetReadDeadline(time.Time{}) // the connection may be gone; nothing waits on it then
	}
	return n, err
}
