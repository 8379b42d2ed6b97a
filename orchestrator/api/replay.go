package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/agoradev/agora/wire"
)

// replay starts a replay of a finished task: 201 with the new task.
func (h *handler) replay(w http.ResponseWriter, r *http.Request) {
	var body wire.ReplayRequest
	if err := decodeOptional(w, r, &body); err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := h.svc.Replay(r.Context(), r.PathValue("id"), body)
	h.created(w, r, t, err)
}

// fork starts a task from one round of another with another answer: 201
// with the new task.
func (h *handler) fork(w http.ResponseWriter, r *http.Request) {
	var body wire.ForkRequest
	if err := decode(w, r, &body); err != nil {
		h.fail(w, r, err)
		return
	}
	who, _, err := by(r, body.By)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	body.By = who
	t, err := h.svc.Fork(r.Context(), r.PathValue("id"), body)
	h.created(w, r, t, err)
}

// replayBatch replays every finished task of a batch into a new batch.
func (h *handler) replayBatch(w http.ResponseWriter, r *http.Request) {
	var body wire.ReplayRequest
	if err := decodeOptional(w, r, &body); err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := h.svc.ReplayBatch(r.Context(), r.PathValue("batch"), body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusCreated, out)
}

// created writes a new task, or err.
func (h *handler) created(w http.ResponseWriter, r *http.Request, t *wire.Task, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/tasks/"+url.PathEscape(t.ID))
	h.write(w, r, http.StatusCreated, t)
}

// decodeOptional is decode for a body whose every field is optional: an
// empty body is the zero value.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	data, err := io.ReadAll(r.Body)
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig || err != nil || len(bytes.TrimSpace(data)) > 0 {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), errReader{err}))
		return decode(w, r, v)
	}
	return nil
}

// errReader gives err after what came before it was read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}
