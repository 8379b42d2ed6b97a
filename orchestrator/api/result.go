package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/agoradev/agora/wire"
)

// result serves GET /v1/tasks/{id}/result: the task's result as JSON
// (null for a task that ended without one).
func (h *handler) result(w http.ResponseWriter, r *http.Request) {
	data, err := h.svc.Result(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(data, '\n'))
}

// artifacts serves GET /v1/tasks/{id}/artifacts: the task's artifacts.
func (h *handler) artifacts(w http.ResponseWriter, r *http.Request) {
	t, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list := wire.ArtifactList{TaskID: t.ID, Artifacts: t.Artifacts}
	if list.Artifacts == nil {
		list.Artifacts = []wire.Artifact{}
	}
	h.write(w, r, http.StatusOK, list)
}

// artifact streams GET /v1/tasks/{id}/artifacts/{name...}: one artifact's
// bytes with its Content-Length, its sha256 as ETag, Repr-Digest and
// Digest. What storage gives is checked as it is sent: content that is
// not the artifact's (a replaced blob) cuts the response short, so no
// client takes it whole.
func (h *handler) artifact(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := wire.CheckArtifactName(name); err != nil {
		h.fail(w, r, invalid(err.Error()))
		return
	}
	a, rc, err := h.svc.OpenArtifact(r.Context(), r.PathValue("id"), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer rc.Close()
	if err := SendArtifact(w, r, h.log, r.PathValue("id"), a, rc); err != nil {
		h.fail(w, r, err)
	}
}

// SendArtifact writes artifact a of task taskID, its content read from rc
// (Service.OpenArtifact), as GET /v1/tasks/{id}/artifacts/{name...} sends
// it — and the inbox's link to it, behind the session cookie: its
// Content-Length, its sha256 as ETag, Repr-Digest and Digest, and the
// bytes checked as they are sent, so content that is not the artifact's
// (a replaced blob) cuts the response short and no client takes it whole.
// The error is for a response not yet begun (a stored sha256 that is no
// sha256); a body cut short is logged to log and aborted.
func SendArtifact(w http.ResponseWriter, r *http.Request, log *slog.Logger, taskID string, a wire.Artifact, rc io.Reader) error {
	name := a.Name
	sum, err := hex.DecodeString(a.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return fmt.Errorf("artifact %s: stored sha256 %q is not 64 hex digits", name, a.SHA256)
	}
	b64 := base64.StdEncoding.EncodeToString(sum)
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	hd.Set("ETag", wire.ArtifactETag(a.SHA256))
	hd.Set("Repr-Digest", "sha-256=:"+b64+":")
	hd.Set("Digest", "sha-256="+b64)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "private, max-age=0")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// The headers go out first: a body cut short below then reads as a
	// truncated download, not as a server that never answered.
	_ = http.NewResponseController(w).Flush()
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, hash), io.LimitReader(rc, a.Size))
	if err == nil && n == a.Size {
		// One byte more than recorded is content that is not the artifact's.
		var extra [1]byte
		if m, _ := rc.Read(extra[:]); m > 0 {
			err = errors.New("storage holds more bytes than the artifact's size")
		}
	}
	if err == nil && n != a.Size {
		err = fmt.Errorf("storage holds %d bytes, want %d", n, a.Size)
	}
	if err == nil && hex.EncodeToString(hash.Sum(nil)) != a.SHA256 {
		err = errors.New("storage holds content of another sha256 (the blob was replaced)")
	}
	if err != nil {
		if r.Context().Err() == nil {
			log.Error("artifact not sent whole", "task_id", taskID, "artifact", name, "sha256", a.SHA256, "error", err)
		}
		// Headers are out: cutting the connection is the only way left to
		// say the body is not the artifact.
		panic(http.ErrAbortHandler)
	}
	return nil
}
