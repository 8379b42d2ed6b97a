package web

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/wire"
)

// The task page links a large result and each artifact here, behind the
// session cookie: the API's own routes (GET /v1/tasks/{id}/result and
// /artifacts/{name...}) take a bearer token, which a browser does not
// have. Same service calls, same scope, same checks as the API.

// result serves GET /ui/tasks/{id}/result: the task's result as JSON.
func (h *handler) result(w http.ResponseWriter, r *http.Request, _ api.Session) {
	id := r.PathValue("id")
	if err := wire.CheckTaskID(id); err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Task id: "+err.Error())
		return
	}
	data, err := h.svc.Result(r.Context(), id)
	if err != nil {
		h.fail(w, r, "read the result of task "+id, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": id + "-result.json"}))
	hd.Set("Content-Length", strconv.Itoa(len(data)+1))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(data, '\n'))
}

// artifact serves GET /ui/tasks/{id}/artifacts/{name...}: one artifact,
// as a download, checked against its sha256 as it is sent.
func (h *handler) artifact(w http.ResponseWriter, r *http.Request, _ api.Session) {
	id, name := r.PathValue("id"), r.PathValue("name")
	if err := wire.CheckTaskID(id); err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Task id: "+err.Error())
		return
	}
	if err := wire.CheckArtifactName(name); err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Artifact name: "+err.Error())
		return
	}
	a, rc, err := h.svc.OpenArtifact(r.Context(), id, name)
	if err != nil {
		h.fail(w, r, "read artifact "+name+" of task "+id, err)
		return
	}
	defer rc.Close()
	if err := api.SendArtifact(w, r, h.log, id, a, rc); err != nil {
		h.fail(w, r, "send artifact "+name+" of task "+id, err)
	}
}

// artifactPath is name as a URL path: each segment escaped, the slashes
// kept.
func artifactPath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
