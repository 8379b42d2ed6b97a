package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/agoradev/agora/wire"
)

func (h *handler) parkedEvents(w http.ResponseWriter, r *http.Request) {
	if err := forbidden(r, "the parked events (every task's)"); err != nil {
		h.fail(w, r, err)
		return
	}
	parked, stats, err := h.svc.ParkedEvents(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if parked == nil {
		parked = []wire.ParkedEvent{}
	}
	h.write(w, r, http.StatusOK, wire.ParkedEventList{ParkedEvents: parked, Stats: stats})
}

func (h *handler) retryParked(w http.ResponseWriter, r *http.Request) {
	err := forbidden(r, "a parked event")
	var seq uint64
	if err == nil {
		seq, err = parkedSeq(r)
	}
	if err == nil {
		err = h.svc.RetryParked(r.Context(), seq)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) discardParked(w http.ResponseWriter, r *http.Request) {
	err := forbidden(r, "a parked event")
	var seq uint64
	if err == nil {
		seq, err = parkedSeq(r)
	}
	if err == nil {
		err = h.svc.DiscardParked(r.Context(), seq)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// parkedSeq reads the {seq} path value: a parked event's stream sequence.
func parkedSeq(r *http.Request) (uint64, error) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		return 0, invalid(fmt.Sprintf("parked event %q: want its stream sequence, a positive whole number (agora events parked lists them)", r.PathValue("seq")))
	}
	return seq, nil
}
