package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/agoradev/agora/wire"
)

// logsCommitDelay is how long a followed round may stay silent before the
// response's headers go out anyway, so the client knows the request was
// accepted; an error after that comes in the TrailerError trailer.
const logsCommitDelay = 500 * time.Millisecond

// logs streams a round's output as text/plain, each chunk flushed as it
// comes: GET /v1/tasks/{id}/logs?round=N&follow=1. An error before any
// output is an ordinary error response; after it, the TrailerError
// trailer.
func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	round, follow, err := logsQuery(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	lw := &logsWriter{w: w, rc: http.NewResponseController(w)}
	var commit *time.Timer
	if follow {
		commit = time.AfterFunc(logsCommitDelay, lw.commit)
	}
	err = h.svc.Logs(r.Context(), r.PathValue("id"), round, follow, lw)
	if commit != nil {
		commit.Stop()
	}
	started := lw.close()
	switch {
	case err == nil:
		if !started {
			lw.start()
		}
	case !started:
		h.fail(w, r, err)
	case r.Context().Err() == nil:
		status, code := classify(err)
		if status >= 500 {
			h.log.Error("stream task output", "task_id", r.PathValue("id"), "error", err)
		}
		data, _ := json.Marshal(wire.ErrorBody{Error: err.Error(), Code: code})
		w.Header().Set(http.TrailerPrefix+wire.TrailerError, string(data))
	}
}

// logsQuery reads ?round=N (default 0: the current round) and ?follow=1.
func logsQuery(q url.Values) (round int, follow bool, err error) {
	for _, k := range []string{"round", "follow"} {
		if len(q[k]) > 1 {
			return 0, false, invalid(fmt.Sprintf("query: %s given %d times; give it once", k, len(q[k])))
		}
	}
	if s := q.Get("round"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, false, invalid(fmt.Sprintf("query: round %q; want a round number (1, 2, …) or none for the current round", s))
		}
		round = n
	}
	switch s := q.Get("follow"); s {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		return 0, false, invalid(fmt.Sprintf("query: follow %q; want 1 or 0", s))
	}
	return round, follow, nil
}

// logsWriter sends the response's headers on the first write (or when
// commit is called), flushes every write, and bounds each by
// streamWriteTimeout: a client that stops reading is disconnected.
type logsWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	mu      sync.Mutex
	started bool
	closed  bool
}

// start sends the headers; mu is held or nothing else writes.
func (l *logsWriter) start() {
	l.started = true
	h := l.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	l.w.WriteHeader(http.StatusOK)
}

func (l *logsWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errLogsClosed
	}
	if !l.started {
		l.start()
	}
	if err := l.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !isNotSupported(err) {
		return 0, err
	}
	n, err := l.w.Write(p)
	if err == nil {
		err = l.rc.Flush()
	}
	// A followed round may be silent for long: no deadline between writes.
	if derr := l.rc.SetWriteDeadline(time.Time{}); err == nil && derr != nil && !isNotSupported(derr) {
		err = derr
	}
	return n, err
}

// commit sends the headers of a stream that has no output yet.
func (l *logsWriter) commit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.started {
		return
	}
	l.start()
	_ = l.rc.Flush()
}

// close stops further writes and commits, and says whether the headers
// went out.
func (l *logsWriter) close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.started
}

// errLogsClosed: the service wrote after its Logs call returned.
var errLogsClosed = errors.New("api: write to a finished logs response")

func isNotSupported(err error) bool { return errors.Is(err, http.ErrNotSupported) }
