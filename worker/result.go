package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/agoradev/agora/internal/fsutil"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
)

// ArtifactLimits cap the artifacts of one round. The runner passes its
// own (AGORA_MAX_ARTIFACTS, AGORA_MAX_ARTIFACTS_BYTES); zero means the
// contract's default.
type ArtifactLimits struct {
	// Files is the most files a round may hand back.
	Files int
	// Bytes is the most bytes they may hold together.
	Bytes int64
}

func (l ArtifactLimits) withDefaults() ArtifactLimits {
	if l.Files <= 0 {
		l.Files = schemas.DefaultMaxArtifacts
	}
	if l.Bytes <= 0 {
		l.Bytes = schemas.DefaultMaxArtifactBytes
	}
	return l
}

// maxArtifactWalk bounds the directory entries looked at while matching
// outputs globs, so a workspace of millions of files cannot keep a
// finished dispatch from ending.
const maxArtifactWalk = 200_000

// resultError is a result or an artifact the worker cannot hand back: the
// dispatch fails with worker-failed and this detail.
type resultError struct {
	Path   string
	Reason string
}

func (e *resultError) Error() string { return e.Path + ": " + e.Reason }

// collectResult fills a finished round's event with its result (the
// result file, else the runtime's final text) and artifacts, storing what
// does not travel inline. An error fails the dispatch.
func (w *run) collectResult(ctx context.Context, ev *schemas.Event, runtimeText *string) error {
	result, err := readResult(w.cfg.Workspace)
	if err != nil {
		return workerFailed("%w", err)
	}
	if result == nil && runtimeText != nil {
		data, err := json.Marshal(*runtimeText)
		switch {
		case err != nil:
			w.log.Warn("encode the runtime's final text as the result", "error", err)
		case len(data) > schemas.ResultMaxBytes:
			w.log.Warn("the runtime's final text is larger than the result cap; the round hands back no result (the text is in its output)",
				"bytes", len(data), "max_bytes", schemas.ResultMaxBytes)
		default:
			result = data
		}
	}
	if result != nil {
		result = w.redact.JSON(result)
		if err := w.placeResult(ctx, ev, result); err != nil {
			return err
		}
	}
	if w.store == nil {
		if _, err := os.Lstat(filepath.Join(w.cfg.Workspace, filepath.FromSlash(schemas.ArtifactsDir))); err == nil || len(w.spec.Subagent.Outputs) > 0 {
			w.log.Warn("no storage (" + schemas.EnvStorageURI + ") to copy artifacts to; none are handed back")
		}
		return nil
	}
	files, err := findArtifacts(w.cfg.Workspace, w.spec.Subagent.Outputs, w.cfg.Artifacts.withDefaults(), w.cfg.Stderr)
	if err != nil {
		return workerFailed("%w", err)
	}
	for _, f := range files {
		a, err := storeArtifact(ctx, w.store, w.cfg.Workspace, f)
		if err != nil {
			return err
		}
		ev.Artifacts = append(ev.Artifacts, a)
	}
	// The event must still fit one NATS message (with headroom for
	// headers): a thousand long names may not.
	if data, err := json.Marshal(ev); err == nil && int64(len(data)) > w.emit.maxPayload()-8<<10 {
		return workerFailed("%w", &resultError{Path: "artifacts", Reason: fmt.Sprintf("the list of %d artifacts makes the event %d bytes, more than one NATS message holds (%d); hand back fewer files or use shorter names",
			len(ev.Artifacts), len(data), w.emit.maxPayload())})
	}
	return nil
}

// placeResult puts result inline in ev, or in storage by its sha256 with
// ev.ResultRef pointing at it when it is larger than InlineResultMax.
func (w *run) placeResult(ctx context.Context, ev *schemas.Event, result []byte) error {
	if len(result) <= schemas.InlineResultMax {
		ev.Result = result
		return nil
	}
	if w.store == nil {
		w.log.Warn("result larger than what an event carries inline and no storage to store it in; it goes inline", "bytes", len(result))
		ev.Result = result
		return nil
	}
	_, ref, err := storage.PutBlob(ctx, w.store, bytes.NewReader(result))
	if err != nil {
		return workerFailed("store the result (%d bytes): %w", len(result), err)
	}
	ev.ResultRef = &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
	return nil
}

// readResult reads <ws>/.agora/result.json: nil when there is none, its
// compacted JSON when it is a regular file of at most ResultMaxBytes
// holding one JSON value, else a *resultError saying what is wrong. Links
// are not followed, neither at the file nor on the way to it.
func readResult(ws string) (json.RawMessage, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer root.Close()
	if fi, err := root.Lstat(schemas.AgoraDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", schemas.AgoraDir, err)
	} else if !fi.IsDir() {
		return nil, &resultError{Path: schemas.ResultPath, Reason: fmt.Sprintf("%s is a %s, not a directory", schemas.AgoraDir, fsutil.FileKind(fi.Mode()))}
	}
	fi, err := root.Lstat(schemas.ResultPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", schemas.ResultPath, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "not a regular file (" + fsutil.FileKind(fi.Mode()) + ")"}
	}
	if fi.Size() > schemas.ResultMaxBytes {
		return nil, resultTooLarge(fi.Size())
	}
	f, err := root.OpenFile(schemas.ResultPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "cannot open: " + err.Error()}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "not a regular file"}
	}
	data, err := io.ReadAll(io.LimitReader(f, schemas.ResultMaxBytes+1))
	if err != nil {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "cannot read: " + err.Error()}
	}
	if len(data) > schemas.ResultMaxBytes {
		return nil, resultTooLarge(-1)
	}
	if !utf8.Valid(data) {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "not valid UTF-8 (JSON text is UTF-8)"}
	}
	// Read as every outside document is (docs/contract.md, "Reading JSON"):
	// a duplicated key or nesting beyond schemas.MaxDepth is refused.
	var raw json.RawMessage
	if err := schemas.Decode("result", data, &raw); err != nil {
		reason := err.Error()
		if ve, ok := errors.AsType[*schemas.ValidationError](err); ok {
			reason = ve.Detail()
		}
		return nil, &resultError{Path: schemas.ResultPath, Reason: reason + " (write one JSON value: a string, a number, an object, …)"}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, &resultError{Path: schemas.ResultPath, Reason: "not valid JSON: " + err.Error()}
	}
	return buf.Bytes(), nil
}

func resultTooLarge(size int64) error {
	what := "more than"
	if size >= 0 {
		what = fmt.Sprintf("%d bytes,", size)
	}
	return &resultError{Path: schemas.ResultPath, Reason: fmt.Sprintf("%s larger than the 1 MiB (%d bytes) cap; store a large output as an artifact and put its name in the result", what, schemas.ResultMaxBytes)}
}

// artifactFile is one file to hand back: its name and its path relative
// to the workspace (slashes).
type artifactFile struct {
	name, rel string
	size      int64
}

// findArtifacts lists the files a finished round hands back: every
// regular file under .agora/artifacts/ (named relative to it) and every
// regular file matching one of outputs (named relative to the workspace;
// nothing under .agora/ matches a glob). Links and other non-regular files
// are skipped with a line on warn; nothing is followed out of the
// workspace. Over the limits, or two files of one name, is an error.
func findArtifacts(ws string, outputs []string, lim ArtifactLimits, warn io.Writer) ([]artifactFile, error) {
	if err := schemas.CheckOutputs(outputs); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer root.Close()
	var (
		out    []artifactFile
		seen   = map[string]string{}
		total  int64
		walked int
	)
	add := func(name, rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			fmt.Fprintf(warn, "agora-worker: artifact %s is not a regular file (%s); skipped\n", rel, fsutil.FileKind(d.Type()))
			return nil
		}
		if !schemas.ValidArtifactName(name) {
			fmt.Fprintf(warn, "agora-worker: artifact %q has a name agora cannot hand back (control characters or a backslash); skipped\n", rel)
			return nil
		}
		if other, dup := seen[name]; dup {
			return &resultError{Path: rel, Reason: fmt.Sprintf("artifact name %q is also %s; rename one", name, other)}
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("inspect artifact %s: %w", rel, err)
		}
		seen[name] = rel
		total += fi.Size()
		out = append(out, artifactFile{name: name, rel: rel, size: fi.Size()})
		if len(out) > lim.Files {
			return &resultError{Path: rel, Reason: fmt.Sprintf("more than %d artifacts, this runner's maximum (agora runner --max-artifacts); name fewer files in outputs or %s", lim.Files, schemas.ArtifactsDir+"/")}
		}
		if total > lim.Bytes {
			return &resultError{Path: rel, Reason: fmt.Sprintf("the artifacts hold more than %d bytes, this runner's maximum (agora runner --max-artifacts-mb %d); hand back less", lim.Bytes, lim.Bytes>>20)}
		}
		return nil
	}
	walk := func(start string, fn func(rel string, d fs.DirEntry) error) error {
		err := fs.WalkDir(root.FS(), start, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				if rel == start && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipAll
				}
				return fmt.Errorf("look for artifacts: %w", err)
			}
			if walked++; walked > maxArtifactWalk {
				return &resultError{Path: start, Reason: fmt.Sprintf("more than %d files and directories to look through for outputs; name narrower globs", maxArtifactWalk)}
			}
			return fn(rel, d)
		})
		return err
	}

	// The documented directory first: a real directory, not a link.
	if fi, err := root.Lstat(schemas.ArtifactsDir); err == nil && !fi.IsDir() {
		fmt.Fprintf(warn, "agora-worker: %s is a %s, not a directory; skipped\n", schemas.ArtifactsDir, fsutil.FileKind(fi.Mode()))
	} else if err == nil {
		if agora, err := root.Lstat(schemas.AgoraDir); err == nil && agora.IsDir() {
			err := walk(schemas.ArtifactsDir, func(rel string, d fs.DirEntry) error {
				if d.IsDir() {
					return nil
				}
				return add(strings.TrimPrefix(rel, schemas.ArtifactsDir+"/"), rel, d)
			})
			if err != nil {
				return nil, err
			}
		}
	}
	if len(outputs) == 0 {
		return out, nil
	}
	globs := make([][]string, len(outputs))
	for i, g := range outputs {
		globs[i] = strings.Split(g, "/")
	}
	err = walk(".", func(rel string, d fs.DirEntry) error {
		if rel == "." {
			return nil
		}
		segs := strings.Split(rel, "/")
		if d.IsDir() {
			if rel == schemas.AgoraDir || !slices.ContainsFunc(globs, func(g []string) bool { return matchSegments(g, segs, true) }) {
				return fs.SkipDir
			}
			return nil
		}
		if !slices.ContainsFunc(globs, func(g []string) bool { return matchSegments(g, segs, false) }) {
			return nil
		}
		return add(rel, rel, d)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// matchSegments matches a path's segments against a glob's: path.Match
// within a segment, "**" for any number of segments. With prefix, it
// reports whether a path under the one given could still match (a
// directory worth descending into).
func matchSegments(glob, segs []string, prefix bool) bool {
	if len(glob) == 0 {
		return len(segs) == 0
	}
	if glob[0] == "**" {
		if matchSegments(glob[1:], segs, prefix) {
			return true
		}
		if len(segs) == 0 {
			return prefix
		}
		return matchSegments(glob, segs[1:], prefix)
	}
	if len(segs) == 0 {
		return prefix
	}
	if ok, _ := path.Match(glob[0], segs[0]); !ok {
		return false
	}
	return matchSegments(glob[1:], segs[1:], prefix)
}

// storeArtifact copies one file into storage by its sha256. The file is
// opened without following a link and must still be the regular file that
// was found.
func storeArtifact(ctx context.Context, store storage.Store, ws string, f artifactFile) (schemas.Artifact, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return schemas.Artifact{}, workerFailed("open workspace %s: %w", ws, err)
	}
	defer root.Close()
	file, err := root.OpenFile(filepath.FromSlash(f.rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return schemas.Artifact{}, workerFailed("%w", &resultError{Path: f.rel, Reason: "cannot open artifact: " + err.Error()})
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return schemas.Artifact{}, workerFailed("%w", &resultError{Path: f.rel, Reason: "artifact is no longer a regular file"})
	}
	// Read no more than was counted against the limits.
	_, ref, err := storage.PutBlob(ctx, store, io.LimitReader(file, f.size))
	if err != nil {
		return schemas.Artifact{}, workerFailed("store artifact %s: %w", f.rel, err)
	}
	return schemas.Artifact{Name: f.name, Size: ref.Size, SHA256: ref.SHA256, URI: ref.URI}, nil
}
