package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

// readyWatcher is a Service that says when its watch is in place
// (orchestrator.Orchestrator does).
type readyWatcher interface {
	WatchReady(ctx context.Context, fn func(wire.Change), ready func()) error
}

// writeTimeout bounds one write to a page's event stream: a page that
// stops reading is dropped, not waited for.
const writeTimeout = 10 * time.Second

// change is what a page learns of a task change: enough to decide whether
// to refresh. The page then asks for its content again, so what it shows
// is always read through the same checks as a page load.
type change struct {
	TaskID  string     `json:"task_id"`
	State   wire.State `json:"state,omitempty"`
	Removed bool       `json:"removed,omitempty"`
}

// events serves the page's event stream: "sync" once the stream watches
// (the page refreshes, catching up on whatever changed while it was
// disconnected: EventSource reconnects by itself), then a "change" per
// task change the session may see (of one task with ?task=ID), each with
// the task's revision as its id, and heartbeat comments while idle.
func (h *handler) events(w http.ResponseWriter, r *http.Request, _ api.Session) {
	taskID := r.URL.Query().Get("task")
	if taskID != "" {
		if err := orchestrator.CheckTaskID(taskID); err != nil {
			http.Error(w, "task: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changes := make(chan wire.Change, 256)
	watched := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		fn := func(c wire.Change) {
			if taskID != "" && c.TaskID != taskID {
				return
			}
			select {
			case changes <- c:
			case <-ctx.Done():
			}
		}
		if rw, ok := h.svc.(readyWatcher); ok {
			watched <- rw.WatchReady(ctx, fn, func() { close(ready) })
			return
		}
		close(ready) // a Service that cannot say: as soon as asked
		watched <- h.svc.Watch(ctx, fn)
	}()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(format string, args ...any) error {
		if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	select {
	case <-ready:
	case err := <-watched:
		h.log.Warn("web: the event stream could not watch", "error", err)
		return
	case <-ctx.Done():
		<-watched
		return
	}
	// Retry after 2 s when the stream drops; sync: whatever changed before
	// this stream watched, the page reads now.
	if err := send("retry: 2000\nevent: sync\ndata: {}\n\n"); err != nil {
		return
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			<-watched
			return
		case c := <-changes:
			ch := change{TaskID: c.TaskID, Removed: c.Removed}
			var rev uint64
			if c.Task != nil {
				ch.State, rev = c.Task.State, c.Task.Revision
			}
			data, _ := json.Marshal(ch) // plain fields always encode
			err = send("id: %d\nevent: change\ndata: %s\n\n", rev, data)
		case <-heartbeat.C:
			err = send(": heartbeat\n\n")
		case werr := <-watched:
			if werr != nil {
				h.log.Warn("web: the event stream's watch ended", "error", werr)
			}
			return
		}
		if err != nil {
			cancel()
			<-watched
			return
		}
	}
}
