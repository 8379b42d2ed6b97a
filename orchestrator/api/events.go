package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agoradev/agora/internal/sse"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// streamWriteTimeout bounds each write to an event stream: a client that
// stops reading is disconnected instead of holding the service's watcher.
const streamWriteTimeout = 30 * time.Second

// changeBatch is how many waiting changes a stream writes before it
// flushes: what a paced stream gathers at many hundred changes a second.
const changeBatch = 1024

// events streams task changes as server-sent events until the client goes
// away or the service's watch ends:
//
//	event: task
//	data: {"task_id":"t-42","task":{…}}
//
// with a ": heartbeat" comment after every Heartbeat without a change.
// ?task=ID keeps the changes of one task. Changes made while no stream is
// open are not replayed: a client that reconnects gets the task again. A
// client that falls orchestrator.DefaultWatchLag changes behind gets one
// error event and the stream ends: it reconnects.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	taskID := r.URL.Query().Get("task")
	if taskID != "" {
		if err := wire.CheckTaskID(taskID); err != nil {
			h.fail(w, r, invalid("query: task: "+err.Error()))
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	// Blocking on a full channel holds the watcher back while this client
	// reads; the write deadline bounds how long.
	f := orchestrator.Follow(ctx, h.svc, func(c wire.Change) bool { return taskID == "" || c.TaskID == taskID }, 64)
	watchEnded := false
	defer func() {
		cancel()
		if !watchEnded {
			<-f.Done
		}
	}()

	// The stream opens (its headers, ": stream open") once the watch is in
	// place: a client that reads the state after the headers misses no
	// change. A watch that cannot start is an error response.
	select {
	case <-f.Ready:
	case werr := <-f.Done:
		watchEnded = true
		if werr == nil {
			werr = errors.New("the watch of task changes ended before it started")
		}
		h.fail(w, r, fmt.Errorf("watch task changes: %w", werr))
		return
	case <-ctx.Done():
		return
	}
	stream := sse.Open(w, r, streamWriteTimeout)
	writeChange := func(c *orchestrator.Followed) error {
		data := c.JSON
		if data == nil {
			var err error
			if data, err = json.Marshal(c.Change); err != nil {
				return fmt.Errorf("encode change of task %s: %w", c.TaskID, err)
			}
		}
		return stream.Event(wire.EventTask, data)
	}
	// sendChanges writes c and the changes already waiting behind it (up
	// to a batch), then flushes once: with many streams open, a flush per
	// change was half of serve's CPU under load.
	sendChanges := func(c *orchestrator.Followed) error {
		if err := writeChange(c); err != nil {
			return err
		}
		for range changeBatch - 1 {
			select {
			case c := <-f.Changes:
				if err := writeChange(c); err != nil {
					return err
				}
			default:
				return stream.Flush()
			}
		}
		return stream.Flush()
	}
	sendError := func(werr error) {
		if werr != nil && ctx.Err() == nil {
			if errors.Is(werr, orchestrator.ErrWatchLagged) {
				h.log.Info("event stream ended: its client fell behind", "remote_addr", r.RemoteAddr, "error", werr)
			} else {
				h.log.Error("watch task changes", "error", werr)
			}
			data, _ := json.Marshal(wire.ErrorBody{Error: werr.Error(), Code: wire.CodeInternal})
			_ = stream.Send("event: %s\ndata: %s\n\n", wire.EventError, data)
		}
	}
	// end writes what the ended watch left — c, then the changes queued
	// — and its error event. A stream dropped for falling behind is told
	// so at once, not sent the changes it was behind on first.
	end := func(c *orchestrator.Followed, werr error) {
		if !errors.Is(werr, orchestrator.ErrWatchLagged) {
			if c != nil {
				if err := writeChange(c); err != nil {
					return
				}
			}
			for len(f.Changes) > 0 {
				if err := writeChange(<-f.Changes); err != nil {
					return
				}
			}
		}
		if err := stream.Flush(); err != nil {
			return
		}
		sendError(werr)
	}
	if err := stream.Send(": stream open\n\n"); err != nil {
		return
	}
	heartbeat := time.NewTicker(h.heartbeat)
	defer heartbeat.Stop()
	// A stream writes changes at most once per h.pace: the ones that come
	// meanwhile wait and go out together. With 200 streams open and a
	// change every few milliseconds, a write (and a wake-up of this
	// goroutine) per change was most of serve's CPU.
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	var wrote time.Time
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case c := <-f.Changes:
			if wait := h.pace - time.Since(wrote); h.pace > 0 && wait > 0 {
				pace.Reset(wait)
				select {
				case <-ctx.Done():
					return
				case werr := <-f.Done:
					watchEnded = true
					end(c, werr)
					return
				case <-pace.C:
				}
			}
			err = sendChanges(c)
			wrote = time.Now()
		case <-heartbeat.C:
			err = stream.Send(": heartbeat\n\n")
		case werr := <-f.Done:
			watchEnded = true
			end(nil, werr)
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
