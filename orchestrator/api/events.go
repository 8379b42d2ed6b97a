package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// streamWriteTimeout bounds each write to an event stream: a client that
// stops reading is disconnected instead of holding the service's watcher.
const streamWriteTimeout = 30 * time.Second

// events streams task changes as server-sent events until the client goes
// away or the service's watch ends:
//
//	event: task
//	data: {"task_id":"t-42","task":{…}}
//
// with a ": heartbeat" comment after every Heartbeat without a change.
// ?task=ID keeps the changes of one task. Changes made while no stream is
// open are not replayed: a client that reconnects gets the task again.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	taskID := r.URL.Query().Get("task")
	if taskID != "" {
		if err := orchestrator.CheckTaskID(taskID); err != nil {
			h.fail(w, r, invalid("query: task: "+err.Error()))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	changes := make(chan wire.Change, 64)
	watched := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		fn := func(c wire.Change) {
			if taskID != "" && c.TaskID != taskID {
				return
			}
			// Blocking here holds the watcher back while this client
			// reads; the write deadline bounds how long.
			select {
			case changes <- c:
			case <-ctx.Done():
			}
		}
		if rw, ok := h.svc.(interface {
			WatchReady(context.Context, func(wire.Change), func()) error
		}); ok {
			watched <- rw.WatchReady(ctx, fn, func() { close(ready) })
			return
		}
		close(ready)
		watched <- h.svc.Watch(ctx, fn)
	}()
	watchEnded := false
	defer func() {
		cancel()
		if !watchEnded {
			<-watched
		}
	}()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	send := func(format string, args ...any) error {
		if err := rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	sendChange := func(c wire.Change) error {
		data, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("encode change of task %s: %w", c.TaskID, err)
		}
		return send("event: %s\ndata: %s\n\n", EventTask, data)
	}
	// "stream open" once the watch is in place: a client that reads the
	// state after it misses no change.
	select {
	case <-ready:
	case werr := <-watched:
		watchEnded = true
		if werr != nil && ctx.Err() == nil {
			h.log.Error("watch task changes", "error", werr)
			data, _ := json.Marshal(ErrorBody{Error: werr.Error(), Code: CodeInternal})
			_ = send("event: %s\ndata: %s\n\n", EventError, data)
		}
		return
	case <-ctx.Done():
		return
	}
	if err := send(": stream open\n\n"); err != nil {
		return
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case c := <-changes:
			err = sendChange(c)
		case <-heartbeat.C:
			err = send(": heartbeat\n\n")
		case werr := <-watched:
			watchEnded = true
			for len(changes) > 0 {
				if err := sendChange(<-changes); err != nil {
					return
				}
			}
			if werr != nil && ctx.Err() == nil {
				h.log.Error("watch task changes", "error", werr)
				data, _ := json.Marshal(ErrorBody{Error: werr.Error(), Code: CodeInternal})
				_ = send("event: %s\ndata: %s\n\n", EventError, data)
			}
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				h.log.Debug("event stream ended", "remote_addr", r.RemoteAddr, "error", err)
			}
			return
		}
	}
}
