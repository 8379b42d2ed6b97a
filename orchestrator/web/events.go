package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agoradev/agora/internal/sse"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

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
		if err := wire.CheckTaskID(taskID); err != nil {
			http.Error(w, "task: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	f := orchestrator.Follow(ctx, h.svc, func(c wire.Change) bool { return taskID == "" || c.TaskID == taskID }, 256)
	select {
	case <-f.Ready:
	case err := <-f.Done:
		h.log.Warn("web: the event stream could not watch", "error", err)
		http.Error(w, "the event stream could not start; the page retries", http.StatusServiceUnavailable)
		return
	case <-ctx.Done():
		<-f.Done
		return
	}
	stream := sse.Open(w, r, writeTimeout)
	// Retry after 2 s when the stream drops; sync: whatever changed before
	// this stream watched, the page reads now.
	if err := stream.Send("retry: 2000\nevent: sync\ndata: {}\n\n"); err != nil {
		cancel()
		<-f.Done
		return
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			<-f.Done
			return
		case c := <-f.Changes:
			ch := change{TaskID: c.TaskID, Removed: c.Removed}
			var rev uint64
			if c.Task != nil {
				ch.State, rev = c.Task.State, c.Task.Revision
			}
			data, _ := json.Marshal(ch) // plain fields always encode
			err = stream.Send("id: %d\nevent: change\ndata: %s\n\n", rev, data)
		case <-heartbeat.C:
			err = stream.Send(": heartbeat\n\n")
		case werr := <-f.Done:
			if werr != nil {
				h.log.Warn("web: the event stream's watch ended", "error", werr)
			}
			return
		}
		if err != nil {
			cancel()
			<-f.Done
			return
		}
	}
}
