// Package sentinel reads, removes and writes the needs_input sentinel: the
// file a sub-agent leaves at <workspace>/.agora/needs_input.json to pause and
// ask a question. Every rule of the contract lives here: the 1 MiB cap on
// the whole file (read with a limit, never the whole of a huge file), regular
// files only, and the schema (schemas.ParseNeedsInput).
package sentinel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agoradev/agora/internal/fsutil"
	"github.com/agoradev/agora/schemas"
)

// MalformedError says why a sentinel that is present cannot be used. The
// worker turns it into dispatch.failed, reason worker-failed.
type MalformedError struct {
	Path   string
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed sentinel %s: %s", e.Path, e.Reason)
}

// Path is the sentinel's path in workspace.
func Path(workspace string) string {
	return filepath.Join(workspace, filepath.FromSlash(schemas.SentinelPath))
}

// Read returns the sentinel in workspace: (nil, nil) when there is none, a
// *MalformedError when one is present but breaks the contract, or another
// error when it could not be examined at all.
func Read(workspace string) (*schemas.NeedsInput, error) {
	path := Path(workspace)
	dir := filepath.Dir(path)
	// The .agora directory itself must be a real directory: a symlink there
	// would let the sentinel be read from anywhere.
	if fi, err := os.Lstat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, &MalformedError{Path: path, Reason: fmt.Sprintf("%s is a %s, not a directory", dir, fsutil.FileKind(fi.Mode()))}
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect sentinel %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &MalformedError{Path: path, Reason: "not a regular file (" + fsutil.FileKind(fi.Mode()) + ")"}
	}
	if fi.Size() > schemas.SentinelMaxBytes {
		return nil, tooLarge(path, fi.Size())
	}
	// O_NOFOLLOW and O_NONBLOCK: the file may be swapped for a symlink or a
	// fifo between Lstat and Open; neither must be followed or block us.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &MalformedError{Path: path, Reason: "not a regular file (symlink)"}
		}
		return nil, &MalformedError{Path: path, Reason: "cannot open: " + err.Error()}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("stat sentinel %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, &MalformedError{Path: path, Reason: "not a regular file (" + fsutil.FileKind(fi.Mode()) + ")"}
	}
	data, err := io.ReadAll(io.LimitReader(f, schemas.SentinelMaxBytes+1))
	if err != nil {
		return nil, &MalformedError{Path: path, Reason: "cannot read: " + err.Error()}
	}
	if len(data) > schemas.SentinelMaxBytes {
		return nil, tooLarge(path, -1)
	}
	n, err := Parse(data)
	if err != nil {
		return nil, &MalformedError{Path: path, Reason: err.Error()}
	}
	return n, nil
}

// Parse validates the bytes of a sentinel file.
func Parse(data []byte) (*schemas.NeedsInput, error) {
	if len(data) > schemas.SentinelMaxBytes {
		return nil, fmt.Errorf("%d bytes, larger than the 1 MiB (%d bytes) cap", len(data), schemas.SentinelMaxBytes)
	}
	return schemas.ParseNeedsInput(data)
}

func tooLarge(path string, size int64) error {
	what := "more than"
	if size >= 0 {
		what = fmt.Sprintf("%d bytes,", size)
	}
	return &MalformedError{Path: path, Reason: fmt.Sprintf("%s larger than the 1 MiB (%d bytes) cap", what, schemas.SentinelMaxBytes)}
}

// RemoveStale deletes any sentinel present before the runtime starts, whatever
// it is (file, symlink, directory): only one written during this dispatch
// counts.
func RemoveStale(workspace string) error {
	path := Path(workspace)
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove stale sentinel %s: %w", path, err)
	}
	return nil
}

// Write stores n as the sentinel at path atomically (temp file in the same
// directory, then rename), so a reader never sees half a sentinel. It
// validates first: a helper must not write what the worker would reject.
func Write(path string, n *schemas.NeedsInput) error {
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode sentinel: %w", err)
	}
	if _, err := Parse(data); err != nil {
		return fmt.Errorf("sentinel for %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		return fmt.Errorf("encode sentinel: %w", err)
	}
	buf.WriteByte('\n')
	if buf.Len() > schemas.SentinelMaxBytes {
		buf.Reset()
		buf.Write(data)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".needs_input-*.tmp")
	if err != nil {
		return fmt.Errorf("write sentinel: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("write sentinel %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write sentinel %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write sentinel %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write sentinel %s: %w", path, err)
	}
	return nil
}
