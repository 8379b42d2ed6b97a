package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/wire"
)

// Registry is what the registry endpoints serve; *registry.Registry
// implements it.
type Registry interface {
	RegisterSubagent(ctx context.Context, s wire.Subagent) (wire.Registered, error)
	RegisterCapability(ctx context.Context, name, description string, archive []byte) (wire.Registered, error)
	RegisterEnv(ctx context.Context, env wire.Env) (wire.Registered, error)
	Get(ctx context.Context, kind wire.Kind, ref string) (*wire.Entry, error)
	Versions(ctx context.Context, kind wire.Kind, name string) ([]*wire.Entry, error)
	List(ctx context.Context, kind wire.Kind) ([]*wire.Entry, error)
}

var _ Registry = (*registry.Registry)(nil)

// registryPaths maps the URL segment to the kind.
var registryPaths = map[string]wire.Kind{
	"subagents":    wire.KindSubagent,
	"capabilities": wire.KindCapability,
	"envs":         wire.KindEnv,
}

func (h *handler) registryRoutes() []endpoint {
	var out []endpoint
	out = append(out,
		endpoint{http.MethodPost, "/v1/subagents", h.registerSubagent},
		endpoint{http.MethodPost, "/v1/capabilities", h.registerCapability},
		endpoint{http.MethodPost, "/v1/envs", h.registerEnv},
	)
	for seg, kind := range registryPaths {
		out = append(out,
			endpoint{http.MethodGet, "/v1/" + seg, h.listEntries(kind)},
			endpoint{http.MethodGet, "/v1/" + seg + "/{ref}", h.getEntry(kind)},
			endpoint{http.MethodGet, "/v1/" + seg + "/{ref}/versions", h.entryVersions(kind)},
		)
	}
	return out
}

func (h *handler) registryOr(w http.ResponseWriter, r *http.Request) (Registry, bool) {
	if h.reg == nil {
		h.fail(w, r, &requestError{http.StatusNotFound, wire.CodeNoRoute, "this server has no registry"})
		return nil, false
	}
	return h.reg, true
}

// registered answers 201 for a new version, 200 for content that was there.
func (h *handler) registered(w http.ResponseWriter, r *http.Request, reg wire.Registered, err error) {
	if err != nil {
		h.fail(w, r, registryError(err))
		return
	}
	status := http.StatusOK
	if reg.Created {
		status = http.StatusCreated
	}
	h.write(w, r, status, reg)
}

func (h *handler) registerSubagent(w http.ResponseWriter, r *http.Request) {
	reg, ok := h.registryOr(w, r)
	if !ok {
		return
	}
	var s wire.Subagent
	if err := decode(w, r, &s); err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := reg.RegisterSubagent(r.Context(), s)
	h.registered(w, r, out, err)
}

func (h *handler) registerEnv(w http.ResponseWriter, r *http.Request) {
	reg, ok := h.registryOr(w, r)
	if !ok {
		return
	}
	var e wire.Env
	if err := decode(w, r, &e); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := orchestrator.CheckLocalSecrets(r.Context(), e.Secrets); err != nil {
		h.fail(w, r, err)
		return
	}
	out, err := reg.RegisterEnv(r.Context(), e)
	h.registered(w, r, out, err)
}

// registerCapability takes the tar as the body and the name and
// description in the query.
func (h *handler) registerCapability(w http.ResponseWriter, r *http.Request) {
	reg, ok := h.registryOr(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if q.Get("name") == "" {
		h.fail(w, r, invalid("query: name is required (POST /v1/capabilities?name=NAME with the tar as the body)"))
		return
	}
	body := http.MaxBytesReader(w, r.Body, wire.MaxCapabilityBytes+1<<20)
	archive, err := io.ReadAll(body)
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		h.fail(w, r, &requestError{http.StatusRequestEntityTooLarge, wire.CodeInvalid,
			fmt.Sprintf("capability archive is larger than %d bytes", wire.MaxCapabilityBytes)})
		return
	} else if err != nil {
		h.fail(w, r, invalid("read capability archive: "+err.Error()))
		return
	}
	out, err := reg.RegisterCapability(r.Context(), q.Get("name"), q.Get("description"), archive)
	h.registered(w, r, out, err)
}

func (h *handler) listEntries(kind wire.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reg, ok := h.registryOr(w, r)
		if !ok {
			return
		}
		opts, err := pageOptions(r.URL.Query())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		list, err := reg.List(r.Context(), kind)
		if err != nil {
			h.fail(w, r, registryError(err))
			return
		}
		page, err := pageEntries(list, opts, cursorNames, func(e *wire.Entry) string { return e.Name })
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.write(w, r, http.StatusOK, page)
	}
}

func (h *handler) getEntry(kind wire.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reg, ok := h.registryOr(w, r)
		if !ok {
			return
		}
		e, err := reg.Get(r.Context(), kind, r.PathValue("ref"))
		if err != nil {
			h.fail(w, r, registryError(err))
			return
		}
		h.write(w, r, http.StatusOK, e)
	}
}

func (h *handler) entryVersions(kind wire.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reg, ok := h.registryOr(w, r)
		if !ok {
			return
		}
		opts, err := pageOptions(r.URL.Query())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		list, err := reg.Versions(r.Context(), kind, r.PathValue("ref"))
		if err != nil {
			h.fail(w, r, registryError(err))
			return
		}
		page, err := pageEntries(list, opts, cursorSeqs, func(e *wire.Entry) string { return fmt.Sprintf("%020d", e.Seq) })
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.write(w, r, http.StatusOK, page)
	}
}

// Registry list cursors: the key of the last entry of a page, in the order
// the list is sorted by (a name, or a zero-padded version number), so a
// registration between two pages neither repeats nor skips an entry.
const (
	cursorNames = 'n'
	cursorSeqs  = 's'
)

// pageEntries is the page of list (sorted by key) that opts asks for. The
// registry reads a kind whole (names, not tasks: few), so only the
// response is paged.
func pageEntries(list []*wire.Entry, opts wire.PageOptions, kind byte, key func(*wire.Entry) string) (wire.EntryList, error) {
	limit, err := wire.PageLimit(opts.Limit)
	if err != nil {
		return wire.EntryList{}, pageError(err)
	}
	start := 0
	if opts.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
		if err != nil || len(b) < 2 || b[0] != kind {
			return wire.EntryList{}, invalid(fmt.Sprintf("query: cursor %q is not a cursor of this list; pass the next_cursor of its previous page", opts.Cursor))
		}
		after := string(b[1:])
		start = sort.Search(len(list), func(i int) bool { return key(list[i]) > after })
	}
	out := wire.EntryList{Entries: list[start:]}
	if len(out.Entries) > limit {
		out.Entries = out.Entries[:limit:limit]
		out.NextCursor = base64.RawURLEncoding.EncodeToString(append([]byte{kind}, key(out.Entries[limit-1])...))
	}
	if out.Entries == nil {
		out.Entries = []*wire.Entry{}
	}
	return out, nil
}

// registryError gives the registry's errors their status and code.
func registryError(err error) error {
	switch {
	case errors.Is(err, registry.ErrInvalid): // first: a registration naming a missing entry is invalid
		return &requestError{http.StatusUnprocessableEntity, wire.CodeInvalid, err.Error()}
	case errors.Is(err, registry.ErrNotFound):
		return &requestError{http.StatusNotFound, wire.CodeNotFound, err.Error()}
	}
	return err
}
