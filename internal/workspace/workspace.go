// Package workspace archives a dispatch's workspace into object storage and
// unpacks it again: the snapshot a round that asked a question leaves for
// the next round. The runner uses it on its host (Docker); the worker uses
// it inside the container where the runner can mount nothing (ECS Fargate).
// It imports no server package, so the worker binary stays small
// (docs/architecture.md).
package workspace

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/units"
	"github.com/agoradev/agora/schemas"
)

// Snapshot limits: a workspace is code and notes, not a data set. Its
// bytes are bounded by the caller's maximum (the runner's
// --max-workspace-mb, which it also hands a worker that snapshots itself).
const (
	maxSnapshotFiles = 200_000
	// containerUID is the worker image's user: restored entries are given
	// to it when the restorer may chown (the runner as root), and already
	// belong to it when the worker restores.
	containerUID = 65532
	// maxRecordBytes caps a record's decode: it is a few hundred bytes.
	maxRecordBytes = 1 << 20
)

// Record points at a content-addressed workspace archive, or says why there
// is none. It is stored as JSON next to the dispatch it belongs to.
type Record struct {
	Archive *schemas.ObjectRef `json:"archive,omitempty"`
	Error   string             `json:"error,omitempty"`
}

// ErrNoRecord means no record was (yet) written under the key.
var ErrNoRecord = errors.New("no workspace snapshot")

// Snapshot archives dir (tar.gz: files, directories and symlinks as they
// are, nothing else) into store, content-addressed, and returns where it
// went. A workspace whose files add up to more than maxBytes is refused.
func Snapshot(ctx context.Context, store storage.Store, dir string, maxBytes int64) (_ *schemas.ObjectRef, err error) {
	tmp := storage.NewSpool(store, "agora-snapshot-*.tar.gz")
	defer func() {
		if cerr := tmp.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("snapshot workspace: %w", cerr)
		}
	}()
	gz := gzip.NewWriter(tmp)
	tw := tar.NewWriter(gz)
	var total int64
	var files int
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if files++; files > maxSnapshotFiles {
			return fmt.Errorf("more than %d entries", maxSnapshotFiles)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular(), info.IsDir():
		default:
			return nil // fifos, sockets and devices do not survive a pause
		}
		hdr, err := tar.FileInfoHeader(unnamed{info}, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			if total += info.Size(); total > maxBytes || total < 0 {
				return fmt.Errorf("the workspace is larger than this runner's maximum of %s (agora runner --max-workspace-mb %d)", units.Bytes(maxBytes), maxBytes>>20)
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.CopyN(tw, f, info.Size())
			f.Close()
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	var archive io.Reader
	if err == nil {
		archive, err = tmp.Reader()
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot workspace: %w", err)
	}
	_, ref, err := storage.PutBlob(ctx, store, archive)
	if err != nil {
		return nil, fmt.Errorf("store workspace snapshot: %w", err)
	}
	return &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}, nil
}

// unnamed is a file's info with no owner names: the archive leaves them out,
// and FileInfoHeader would otherwise look each entry's uid and gid up in
// the host's user database — through cgo, reading /etc/passwd and
// /etc/group for every file, since the container's user is not there and a
// failed lookup is not cached. A CPU profile of BenchmarkThroughput put
// that at a tenth of the runner's CPU (docs/benchmarks.md).
type unnamed struct{ fs.FileInfo }

var _ tar.FileInfoNames = unnamed{}

func (unnamed) Uname() (string, error) { return "", nil }
func (unnamed) Gname() (string, error) { return "", nil }

// WriteRecord stores rec as JSON under key.
func WriteRecord(ctx context.Context, store storage.Store, key string, rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode workspace record: %w", err)
	}
	if err := store.Put(ctx, key, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("record workspace snapshot %s: %w", key, err)
	}
	return nil
}

// ReadRecord returns the record under key, ErrNoRecord when there is none.
func ReadRecord(ctx context.Context, store storage.Store, key string) (*Record, error) {
	rc, err := store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNoRecord
	}
	if err != nil {
		return nil, fmt.Errorf("read workspace record %s: %w", key, err)
	}
	defer rc.Close()
	var rec Record
	if err := json.NewDecoder(io.LimitReader(rc, maxRecordBytes)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	return &rec, nil
}

// Restore unpacks a verified snapshot into dir. Every write goes through an
// os.Root, so no entry (nor a symlink it creates) can reach outside dir.
// Its files may add up to maxBytes (a snapshot made under a larger maximum,
// or a gzip bomb, is refused), and the archive itself a little more
// (headers). Entries are given to the container's user where the caller may
// chown; elsewhere (the worker, already that user) the attempt is harmless.
func Restore(ctx context.Context, store storage.Store, ref *schemas.ObjectRef, dir string, maxBytes int64) error {
	key, err := storage.ResolveURI(store, ref.URI)
	if err != nil {
		return err
	}
	data, err := storage.GetVerified(ctx, store, key, ref.SHA256, maxBytes+maxBytes/8+1<<20)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", ref.URI, err)
	}
	tr := tar.NewReader(gz)
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", ref.URI, err)
		}
		name := path.Clean(hdr.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("snapshot %s: unsafe entry %q", ref.URI, hdr.Name)
		}
		mode := fs.FileMode(hdr.Mode) & 0o777
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
			_ = root.Chmod(name, mode|0o700)
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode|0o600)
			if err != nil {
				return fmt.Errorf("restore %s: %w", hdr.Name, err)
			}
			var n int64
			n, err = io.Copy(f, io.LimitReader(tr, maxBytes-total+1))
			if total += n; err == nil && total > maxBytes {
				err = fmt.Errorf("the snapshot holds more than this runner's maximum of %s (agora runner --max-workspace-mb %d)", units.Bytes(maxBytes), maxBytes>>20)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("restore %s: %w", hdr.Name, err)
			}
		case tar.TypeSymlink:
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return fmt.Errorf("restore %s: %w", hdr.Name, err)
			}
		default:
			continue
		}
		_ = root.Lchown(name, containerUID, containerUID)
	}
}
