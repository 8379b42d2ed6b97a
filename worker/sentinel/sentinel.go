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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// error when it could not be examined at all. Unknown fields are allowed
// and ignored (forward compatibility), but one that looks like a misspelt
// known field gets a warning line on stderr (see ReadTo).
func Read(workspace string) (*schemas.NeedsInput, error) {
	return ReadTo(workspace, os.Stderr)
}

// ReadTo is Read writing its warnings to warn: one line for each unknown
// field close to a known one, e.g.
//
//	agora-worker: sentinel field "opts" is not known (did you mean "options"?); it is ignored
func ReadTo(workspace string, warn io.Writer) (*schemas.NeedsInput, error) {
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
	for _, w := range Warnings(data) {
		fmt.Fprintf(warn, "agora-worker: %s\n", w)
	}
	return n, nil
}

// knownFields are the sentinel's fields (schemas.NeedsInput).
var knownFields = []string{"question", "options", "context", "default", "partial_state", "partial_state_ref"}

// Warnings names the unknown top-level fields of a valid sentinel that are
// close to a known one — "opts" for "options", "Question", "partialState" —
// each as "sentinel field "opts" is not known (did you mean "options"?); it
// is ignored". Other unknown fields are silently ignored, as the contract
// says.
func Warnings(data []byte) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	var out []string
	for _, f := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(knownFields, f) {
			continue
		}
		if near := closestField(f); near != "" {
			out = append(out, fmt.Sprintf("sentinel field %q is not known (did you mean %q?); it is ignored", f, near))
		}
	}
	return out
}

// closestField is the known field f is probably a misspelling of, or "".
// Close means: the same once case, '-' and '_' are ignored
// ("partialState"); at most two edits apart ("optoins", "contxt"); or an
// abbreviation of at least three letters with the same first letter
// ("opts", "ctx").
func closestField(f string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	nf := norm(f)
	for _, k := range knownFields {
		nk := norm(k)
		if nf == nk || editDistance(nf, nk) <= min(2, len(nk)/3) ||
			(len(nf) >= 3 && len(nf) < len(nk) && nf[0] == nk[0] && isSubsequence(nf, nk)) {
			return k
		}
	}
	return ""
}

// isSubsequence tells whether the letters of a appear in b in order.
func isSubsequence(a, b string) bool {
	i := 0
	for j := 0; i < len(a) && j < len(b); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
