package worker

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agoradev/agora/internal/fsutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/worker/sentinel"
)

// Caps on one capability archive once unpacked (a compressed archive can
// claim far more than it weighs).
const (
	maxOverlayBytes = 1 << 30
	maxOverlayFiles = 100_000
)

// overlayCapability unpacks a tar (optionally gzip) archive onto the
// workspace. Only regular files and directories with safe relative paths are
// accepted: no "..", no absolute path, no links or devices, and nothing is
// written through a symlink already in the workspace. Any violation is an
// integrity failure and names the entry.
func overlayCapability(ws string, c capability) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer root.Close()

	var r io.Reader = bytes.NewReader(c.data)
	if len(c.data) >= 2 && c.data[0] == 0x1f && c.data[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return bundleError(c, "", fmt.Errorf("not a gzip archive: %w", err))
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	var total int64
	for files := 0; ; files++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return bundleError(c, "", fmt.Errorf("not a tar archive: %w", err))
		}
		if files >= maxOverlayFiles {
			return bundleError(c, hdr.Name, fmt.Errorf("more than %d entries", maxOverlayFiles))
		}
		name, err := safeRelPath(hdr.Name)
		if err != nil {
			return bundleError(c, hdr.Name, err)
		}
		if name == "." {
			continue
		}
		if err := noSymlinkOnPath(root, name); err != nil {
			return bundleError(c, hdr.Name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return bundleError(c, hdr.Name, err)
			}
		case tar.TypeReg:
			total += hdr.Size
			if total > maxOverlayBytes {
				return bundleError(c, hdr.Name, fmt.Errorf("unpacks to more than %d bytes", maxOverlayBytes))
			}
			if dir := path.Dir(name); dir != "." {
				if err := root.MkdirAll(dir, 0o755); err != nil {
					return bundleError(c, hdr.Name, err)
				}
			}
			mode := fs.FileMode(0o644)
			if hdr.Mode&0o111 != 0 {
				mode = 0o755
			}
			if err := writeFileInRoot(root, name, tr, mode); err != nil {
				return bundleError(c, hdr.Name, err)
			}
		default:
			return bundleError(c, hdr.Name, fmt.Errorf("unsupported entry type %q (only files and directories)", string(hdr.Typeflag)))
		}
	}
}

func bundleError(c capability, entry string, err error) error {
	where := "capability " + c.ref.Name
	if entry != "" {
		where += fmt.Sprintf(" entry %q", entry)
	}
	return &outcomeError{reason: schemas.ReasonIntegrityFailed, err: fmt.Errorf("bad bundle path: %s: %w", where, err)}
}

// safeRelPath accepts slash-separated relative paths that stay inside the
// workspace, and returns them cleaned.
func safeRelPath(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(name, 0) || strings.Contains(name, `\`) {
		return "", errors.New("path holds a NUL byte or a backslash")
	}
	if path.IsAbs(name) {
		return "", errors.New("absolute path")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", errors.New(`path climbs out with ".."`)
		}
	}
	return path.Clean(name), nil
}

// noSymlinkOnPath refuses to write through any symlink on the way to name.
func noSymlinkOnPath(root *os.Root, name string) error {
	parts := strings.Split(name, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink in the workspace; refusing to write through it", p)
		}
	}
	return nil
}

func writeFileInRoot(root *os.Root, name string, r io.Reader, mode fs.FileMode) error {
	// Only ever write into a regular file: opening a fifo for writing (one
	// left in the workspace by an earlier round, say) would block the worker
	// forever, before any timeout applies.
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s in the workspace, not a regular file; refusing to write to it", name, fsutil.FileKind(fi.Mode()))
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ensureAgoraDir makes <ws>/.agora a real directory, replacing anything else
// that stands there (a symlink left by an earlier round, say).
func ensureAgoraDir(ws string) error {
	dir := filepath.Join(ws, schemas.AgoraDir)
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("replace %s: %w", dir, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// writeWorkspaceFile writes data at rel inside ws, refusing symlinks on the way.
func writeWorkspaceFile(ws, rel string, data []byte, mode fs.FileMode) error {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", ws, err)
	}
	defer root.Close()
	if err := noSymlinkOnPath(root, rel); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if err := writeFileInRoot(root, rel, bytes.NewReader(data), mode); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// resumeFile is the content of .agora/resume.json.
type resumeFile struct {
	Round        int                    `json:"round"`
	Question     string                 `json:"question"`
	Answer       string                 `json:"answer"`
	Options      []string               `json:"options,omitempty"`
	Context      string                 `json:"context,omitempty"`
	PartialState json.RawMessage        `json:"partial_state,omitempty"`
	History      []schemas.HistoryEntry `json:"history"`
}

// indentedState is a partial_state checked and indented as it appears in
// .agora/resume.json, one level deep (indentState).
type indentedState []byte

// indentState checks that state is one JSON value and indents it as
// json.MarshalIndent(v, "", "  ") indents a json.RawMessage one level deep
// in v: insignificant white space dropped, <, >, &, U+2028 and U+2029
// escaped, two spaces a level (indentJSON): two passes of encoding/json
// where a 1 MB state used to get three (json.Valid, then MarshalIndent's
// compact and indent) and then a copy into the encoder's output.
func indentState(state []byte) (indentedState, error) {
	return indentJSON(make([]byte, 0, len(state)+len(state)/2), state, "  ", "  ")
}

// resumeJSON is json.MarshalIndent(f, "", "  ") with f.PartialState set to
// state, byte for byte, and a newline: the rest of the file is encoded
// around a placeholder that state replaces, so the state is copied once and
// never passes through the encoder.
func resumeJSON(f resumeFile, state indentedState) ([]byte, error) {
	if len(state) == 0 {
		data, err := json.MarshalIndent(f, "", "  ")
		return append(data, '\n'), err
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	placeholder := `"agora-partial-state-` + hex.EncodeToString(nonce[:]) + `"`
	f.PartialState = json.RawMessage(placeholder)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	i := bytes.Index(data, []byte(placeholder))
	if i < 0 || bytes.Count(data, []byte(placeholder)) != 1 {
		return nil, fmt.Errorf("resume file: the partial_state placeholder appears %d times", bytes.Count(data, []byte(placeholder)))
	}
	out := make([]byte, 0, len(data)-len(placeholder)+len(state)+1)
	out = append(append(append(out, data[:i]...), state...), data[i+len(placeholder):]...)
	return append(out, '\n'), nil
}

// prepareWorkspace lays out everything the runtime will find, in order:
// capabilities, the SKILL, .agora/input.json, .agora/resume.json, and no
// stale sentinel.
func prepareWorkspace(ws string, spec *schemas.DispatchSpec, caps []capability, skillPath string, skill []byte, partialState indentedState) error {
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("create workspace %s: %w", ws, err)
	}
	for _, c := range caps {
		if err := overlayCapability(ws, c); err != nil {
			return err
		}
	}
	if err := ensureAgoraDir(ws); err != nil {
		return err
	}
	if skill != nil {
		if err := writeWorkspaceFile(ws, skillPath, skill, 0o644); err != nil {
			return fmt.Errorf("overlay needs-input skill: %w", err)
		}
	}
	input := spec.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if err := writeWorkspaceFile(ws, schemas.InputPath, append(append([]byte(nil), input...), '\n'), 0o644); err != nil {
		return err
	}
	resumePath := filepath.Join(ws, filepath.FromSlash(schemas.ResumePath))
	if r := spec.Resume; r != nil {
		history := r.History
		if history == nil {
			history = []schemas.HistoryEntry{}
		}
		data, err := resumeJSON(resumeFile{
			Round: spec.EffectiveRound(), Question: r.Question, Answer: r.Answer, Options: r.Options,
			Context: r.Context, History: history,
		}, partialState)
		if err != nil {
			return fmt.Errorf("encode resume file: %w", err)
		}
		if err := writeWorkspaceFile(ws, schemas.ResumePath, data, 0o644); err != nil {
			return err
		}
	} else if err := os.RemoveAll(resumePath); err != nil {
		// A resume file restored from an earlier round would mislead a first round.
		return fmt.Errorf("remove stale %s: %w", resumePath, err)
	}
	// Only a result written during this dispatch counts.
	if err := os.RemoveAll(filepath.Join(ws, filepath.FromSlash(schemas.ResultPath))); err != nil {
		return fmt.Errorf("remove stale %s: %w", schemas.ResultPath, err)
	}
	return sentinel.RemoveStale(ws)
}
