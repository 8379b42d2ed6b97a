package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agoradev/agora/wire"
)

// ErrIntegrity is a downloaded artifact whose bytes are not the ones its
// sha256 and size name.
var ErrIntegrity = errors.New("artifact failed its sha256 check")

// Result returns what task taskID hands back: its last round's result as
// JSON (a JSON string for Claude Code's final text), read from storage by
// the server when it is large; JSON null when the task ended without one.
// A task that has not ended is wire.ErrWrongState.
func (c *Client) Result(ctx context.Context, taskID string) (json.RawMessage, error) {
	path, err := taskPath(taskID, "/result")
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// TaskResult is what t hands back: its result inline, or read with Result
// when the server stored it by ref; nil when t has none (yet).
func (c *Client) TaskResult(ctx context.Context, t *wire.Task) (json.RawMessage, error) {
	if len(t.Result) > 0 {
		return t.Result, nil
	}
	if t.ResultRef == nil {
		return nil, nil
	}
	return c.Result(ctx, t.ID)
}

// SelectArtifacts is the artifacts of list named by names, in the order of
// names; all of list when names is empty. A name list lacks is an error
// that names what list has.
func SelectArtifacts(list []wire.Artifact, names []string) ([]wire.Artifact, error) {
	if len(names) == 0 {
		return list, nil
	}
	var out []wire.Artifact
	for _, n := range names {
		i := slices.IndexFunc(list, func(f wire.Artifact) bool { return f.Name == n })
		if i < 0 {
			have := make([]string, len(list))
			for j, f := range list {
				have[j] = f.Name
			}
			return nil, fmt.Errorf("no artifact %q (it has: %s)", n, cmp.Or(strings.Join(have, ", "), "none"))
		}
		out = append(out, list[i])
	}
	return out, nil
}

// Artifacts lists the files task taskID's last round left when it finished.
func (c *Client) Artifacts(ctx context.Context, taskID string) ([]wire.Artifact, error) {
	path, err := taskPath(taskID, "/artifacts")
	if err != nil {
		return nil, err
	}
	var list wire.ArtifactList
	if err := c.do(ctx, http.MethodGet, path, nil, &list); err != nil {
		return nil, err
	}
	return list.Artifacts, nil
}

// DownloadArtifact copies artifact name of task taskID to w and checks
// what it copied against the sha256 (the response's ETag) and the size
// (Content-Length) the server names: a mismatch is ErrIntegrity. w has the
// bytes by then, so write to a temporary file and keep it only when
// DownloadArtifact returns nil. It returns the artifact as served.
func (c *Client) DownloadArtifact(ctx context.Context, taskID, name string, w io.Writer) (wire.Artifact, error) {
	if err := wire.CheckArtifactName(name); err != nil {
		return wire.Artifact{}, fmt.Errorf("agora api: %w: %w", err, wire.ErrInvalidRequest)
	}
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	path, err := taskPath(taskID, "/artifacts/"+strings.Join(segs, "/"))
	if err != nil {
		return wire.Artifact{}, err
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return wire.Artifact{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return wire.Artifact{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return wire.Artifact{}, errorOf(resp)
	}
	a := wire.Artifact{Name: name, Size: resp.ContentLength, SHA256: strings.Trim(resp.Header.Get("ETag"), `"`)}
	if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != sha256.Size || a.Size < 0 {
		return a, fmt.Errorf("agora api: GET %s: ETag %q and Content-Length %d do not name a sha256 and a size to check against: %w", path, resp.Header.Get("ETag"), resp.ContentLength, ErrIntegrity)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return a, ctx.Err()
		}
		return a, fmt.Errorf("agora api: GET %s: %w (after %d of %d bytes; the server cuts an artifact whose stored bytes are not its own)", path, err, n, a.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != a.Size || got != a.SHA256 {
		return a, fmt.Errorf("agora api: artifact %s of task %s: got %d bytes of sha256 %s, want %d bytes of sha256 %s: %w", name, taskID, n, got, a.Size, a.SHA256, ErrIntegrity)
	}
	return a, nil
}

// SaveArtifact downloads artifact f of task taskID (as Artifacts lists it)
// into dir, under its name (sub-directories kept, never outside dir: the
// writes go through an os.Root), and returns the file's path. The bytes go
// to a temporary file beside the target, which takes the name only when
// they match both the sha256 and size the task lists and the ones the
// server names; otherwise nothing is written and the error is ErrIntegrity.
func (c *Client) SaveArtifact(ctx context.Context, taskID string, f wire.Artifact, dir string) (string, error) {
	if err := wire.CheckArtifactName(f.Name); err != nil {
		return "", fmt.Errorf("task %s: %w; not downloaded", taskID, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("download %s: %w", f.Name, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", f.Name, err)
	}
	defer root.Close()
	target := filepath.FromSlash(f.Name)
	if err := root.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", fmt.Errorf("download %s into %s: %w", f.Name, dir, err)
	}
	tmpName := filepath.Join(filepath.Dir(target), ".agora-download-"+rand.Text()[:12])
	tmp, err := root.OpenFile(tmpName, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("download %s into %s: %w", f.Name, dir, err)
	}
	defer root.Remove(tmpName) // fails harmlessly after the rename
	served, err := c.DownloadArtifact(ctx, taskID, f.Name, tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && (served.SHA256 != f.SHA256 || served.Size != f.Size) {
		err = fmt.Errorf("served %d bytes of sha256 %s, the task lists %d bytes of sha256 %s: %w", served.Size, served.SHA256, f.Size, f.SHA256, ErrIntegrity)
	}
	if err != nil {
		if errors.Is(err, ErrIntegrity) {
			return "", fmt.Errorf("artifact %s of task %s failed its sha256 check; nothing written: %w", f.Name, taskID, err)
		}
		return "", fmt.Errorf("download artifact %s of task %s: %w", f.Name, taskID, err)
	}
	if err := root.Rename(tmpName, target); err != nil {
		return "", fmt.Errorf("download %s into %s: %w", f.Name, dir, err)
	}
	return filepath.Join(dir, target), nil
}
