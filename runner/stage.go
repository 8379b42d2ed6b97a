package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// A dispatch's staged store.
//
// No container mounts the storage itself. With S3 the worker would need the
// network and S3 credentials — and a sub-agent, which shares the worker's
// user, could read those credentials from the worker's environment. With
// file:// storage a mounted blobs directory would be shared by every
// dispatch: a sub-agent could read another task's workspace snapshots,
// replace its blobs, or fill the disk past the workspace maximum. So the
// runner stages for every storage: it copies the blobs the worker
// reads (capability and env bundles, a resumed round's large partial_state)
// from storage into a per-dispatch directory, verified by sha256, and gives
// the worker that directory as a file:// store. Whatever the worker writes
// there (a large partial_state) the runner uploads, content-addressed, when
// the dispatch settles, and points the event's ref at the uploaded copy. The
// container needs neither network nor credentials for storage.

// maxStagedBlob bounds one staged blob (the worker's own caps are lower).
const maxStagedBlob = 256 << 20

// stageDir is the staged store of a dispatch on this host.
func (r *Runner) stageDir(id string) string {
	return filepath.Join(r.cfg.DataDir, "stores", id)
}

// stagedBlobs lists the blobs a spec makes the worker read, by sha256.
func stagedBlobs(spec *schemas.DispatchSpec) map[string]string {
	out := map[string]string{} // sha256 → the URI the spec gave, if any
	for _, b := range append(append([]schemas.BundleRef(nil), spec.Capabilities...), spec.Env...) {
		out[b.SHA256] = b.URI
	}
	if spec.Resume != nil && spec.Resume.PartialStateRef != nil {
		out[spec.Resume.PartialStateRef.SHA256] = spec.Resume.PartialStateRef.URI
	}
	return out
}

// stage copies the blobs spec names into dir and returns the spec the worker
// gets: the same, with every ref pointing into the staged store.
//
// The store's directory is made for every dispatch, its blobs directories
// only when there is a blob to stage: most dispatches read none, and the
// worker's own store makes them when it writes one (as the container's
// user, inside the directory that user owns). Making them every time cost
// six file-system calls a dispatch for nothing (docs/capacity.md).
func (r *Runner) stage(ctx context.Context, dir string, spec schemas.DispatchSpec) (schemas.DispatchSpec, error) {
	if err := prepareDir(dir); err != nil {
		return spec, fmt.Errorf("stage blobs: %w", err)
	}
	want := stagedBlobs(&spec)
	if len(want) == 0 {
		return spec, nil
	}
	blobs := filepath.Join(dir, filepath.FromSlash(storage.BlobKey("")))
	for _, p := range []string{filepath.Dir(blobs), blobs} {
		if err := prepareDir(p); err != nil {
			return spec, fmt.Errorf("stage blobs: %w", err)
		}
	}
	// Scratch: the staged copy is made again if the host goes down.
	local, err := storage.Open(ctx, "file://"+dir, storage.Options{Scratch: true, Shared: true, SpoolDir: r.spoolDir()})
	if err != nil {
		return spec, fmt.Errorf("stage blobs: %w", err)
	}
	for sha, uri := range want {
		key := storage.BlobKey(sha)
		if uri != "" {
			if k, err := storage.ResolveURI(r.cfg.Store, uri); err == nil {
				key = k
			}
		}
		data, err := storage.GetVerified(ctx, r.cfg.Store, key, sha, maxStagedBlob)
		if err != nil {
			return spec, fmt.Errorf("stage blob %s: %w", sha, err)
		}
		if err := local.Put(ctx, storage.BlobKey(sha), bytes.NewReader(data)); err != nil {
			return spec, fmt.Errorf("stage blob %s: %w", sha, err)
		}
	}
	out := spec
	out.Capabilities = unURI(spec.Capabilities)
	out.Env = unURI(spec.Env)
	if spec.Resume != nil && spec.Resume.PartialStateRef != nil {
		resume := *spec.Resume
		ref := *resume.PartialStateRef
		ref.URI = local.URI(storage.BlobKey(ref.SHA256))
		resume.PartialStateRef = &ref
		out.Resume = &resume
	}
	return out, nil
}

// unURI drops the URIs: the worker finds a bundle by its sha256.
func unURI(refs []schemas.BundleRef) []schemas.BundleRef {
	if refs == nil {
		return nil
	}
	out := make([]schemas.BundleRef, len(refs))
	for i, b := range refs {
		b.URI = ""
		out[i] = b
	}
	return out
}

// unstage uploads the blobs the worker wrote into the staged store (those
// spec did not name) and returns their storage URIs by sha256. A file whose
// content does not match its name is not content-addressed and is skipped.
//
// The staged store was the container's to change: a sub-agent may have
// replaced a directory or a blob with a symbolic link to a host file the
// runner can read and it cannot. So everything is read through an os.Root
// opened on dir, which refuses a path that leaves it, and only regular
// files, not links, of at most maxStagedBlob bytes are uploaded.
func (r *Runner) unstage(ctx context.Context, dir string, spec *schemas.DispatchSpec) (map[string]string, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read staged blobs: %w", err)
	}
	defer root.Close()
	rel := storage.BlobKey("")
	if info, err := root.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read staged blobs: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("staged blobs %s is not a directory (%s); nothing passed on", rel, info.Mode().Type())
	}
	// A link among the directories above the blobs leaves dir or is
	// refused below: every name is checked with Lstat, relative to root.
	for p := filepath.Dir(rel); p != "."; p = filepath.Dir(p) {
		if info, err := root.Lstat(p); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("staged blobs: %s is not a directory; nothing passed on", p)
		}
	}
	blobs, err := root.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("read staged blobs: %w", err)
	}
	defer blobs.Close()
	d, err := blobs.Open(".")
	if err != nil {
		return nil, fmt.Errorf("read staged blobs: %w", err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("read staged blobs: %w", err)
	}
	skip := map[string]string{}
	if spec != nil {
		skip = stagedBlobs(spec)
	}
	uris := map[string]string{}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if _, ok := skip[name]; ok || !isSHA256(name) {
			continue
		}
		uri, err := r.unstageBlob(ctx, blobs, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uris[name] = uri
	}
	return uris, errors.Join(errs...)
}

// unstageBlob uploads one staged blob: a regular file, never a link, of at
// most maxStagedBlob bytes, whose content has the sha256 it is named by.
func (r *Runner) unstageBlob(ctx context.Context, blobs *os.Root, name string) (string, error) {
	info, err := blobs.Lstat(name)
	if err != nil {
		return "", fmt.Errorf("staged blob %s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("staged blob %s is not a regular file (%s); not passed on", name, info.Mode().Type())
	}
	if info.Size() > maxStagedBlob {
		return "", fmt.Errorf("staged blob %s is %d bytes, over %d; not passed on", name, info.Size(), maxStagedBlob)
	}
	f, err := blobs.Open(name)
	if err != nil {
		return "", fmt.Errorf("staged blob %s: %w", name, err)
	}
	defer f.Close()
	// The name may have changed between Lstat and Open: take only the file
	// that was looked at.
	if opened, err := f.Stat(); err != nil || !os.SameFile(info, opened) {
		return "", fmt.Errorf("staged blob %s changed while read; not passed on", name)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(f, maxStagedBlob+1)); err != nil {
		return "", fmt.Errorf("staged blob %s: %w", name, err)
	}
	if buf.Len() > maxStagedBlob {
		return "", fmt.Errorf("staged blob %s grew over %d bytes; not passed on", name, maxStagedBlob)
	}
	sum := sha256.Sum256(buf.Bytes())
	if got := hex.EncodeToString(sum[:]); got != name {
		return "", fmt.Errorf("staged blob %s holds content of sha256 %s; not passed on", name, got)
	}
	_, ref, err := storage.PutBlob(ctx, r.cfg.Store, &buf)
	if err != nil {
		return "", fmt.Errorf("upload staged blob %s: %w", name, err)
	}
	return ref.URI, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// pointAtStorage rewrites an event's refs (partial_state_ref, result_ref,
// the artifacts') from the staged store to the uploaded copies. (Readers
// find a blob by its sha256 in their own storage; the URI is for people.)
func pointAtStorage(ev *schemas.Event, uris map[string]string) {
	if ev.NeedsInput != nil && ev.NeedsInput.PartialStateRef != nil {
		if u, ok := uris[ev.NeedsInput.PartialStateRef.SHA256]; ok {
			ev.NeedsInput.PartialStateRef.URI = u
		}
	}
	if ev.ResultRef != nil {
		if u, ok := uris[ev.ResultRef.SHA256]; ok {
			ev.ResultRef.URI = u
		}
	}
	for i := range ev.Artifacts {
		if u, ok := uris[ev.Artifacts[i].SHA256]; ok {
			ev.Artifacts[i].URI = u
		}
	}
}
