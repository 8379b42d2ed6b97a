package storage

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// tmpPrefix marks in-flight Put files. Keys with a segment starting with it are
// rejected by the fs backend, so a temp file can never be mistaken for an object.
const tmpPrefix = ".agora-tmp-"

// fsStore keeps each object as a file under dir, at the path its key names.
// Every access goes through os.Root, so a symlink planted in the directory
// (it may be mounted into containers) cannot redirect a read or write outside it.
type fsStore struct {
	dir    string
	log    *slog.Logger
	noSync bool // Options.Scratch
	shared bool // Options.Shared
	spool  string
}

// dirMode and fileMode are what the store creates: private unless shared.
func (s *fsStore) dirMode() os.FileMode {
	if s.shared {
		return 0o755
	}
	return 0o700
}

func (s *fsStore) fileMode() os.FileMode {
	if s.shared {
		return 0o644
	}
	return 0o600
}

var _ Store = (*fsStore)(nil)

func (s *fsStore) spoolDir() string { return s.spool }

func openFS(dir string, log *slog.Logger, opts Options) (*fsStore, error) {
	s := &fsStore{dir: dir, log: log, noSync: opts.Scratch, shared: opts.Shared, spool: opts.SpoolDir}
	if err := os.MkdirAll(dir, s.dirMode()); err != nil {
		return nil, fmt.Errorf("open storage %s: %w", fileURI(dir), err)
	}
	// Fail now, not on first use, if dir is not a usable directory.
	root, err := s.root()
	if err != nil {
		return nil, err
	}
	if err := root.Close(); err != nil {
		return nil, fmt.Errorf("open storage %s: %w", s.URI(""), err)
	}
	log.Debug("storage opened", "backend", "fs", "uri", s.URI(""))
	return s, nil
}

// root opens the directory per operation: the Store interface has no Close,
// so holding a descriptor for the Store's lifetime would leak it.
func (s *fsStore) root() (*os.Root, error) {
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("open storage %s: %w", s.URI(""), err)
	}
	return r, nil
}

func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: p}).String()
}

func (s *fsStore) URI(key string) string {
	return fileURI(path.Join(s.dir, key))
}

// checkKey adds the fs backend's one reservation to ValidateKey.
func checkKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, tmpPrefix) {
			return fmt.Errorf("%w %q: segment prefix %q is reserved for temporary files", ErrInvalidKey, key, tmpPrefix)
		}
	}
	return nil
}

// notFound reports errors that mean "no object at this key": a missing file, a
// file where a directory was expected ("a/b" when "a" is an object).
func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// keyShapeHint explains the errors a filesystem gives when one key is the
// directory of another.
func keyShapeHint(err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTEMPTY) {
		return fmt.Errorf("%w (on a filesystem a key cannot also be the directory of other keys)", err)
	}
	return err
}

func (s *fsStore) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("put %s: %w", s.URI(key), err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	root, err := s.root()
	if err != nil {
		return err
	}
	defer root.Close()

	dir := path.Dir(key)
	if dir != "." {
		if err := root.MkdirAll(dir, s.dirMode()); err != nil {
			return keyShapeHint(err)
		}
	}
	// The temp file sits in the key's directory so that the rename is atomic.
	tmp := path.Join(dir, tmpPrefix+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, s.fileMode())
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		if rmErr := root.Remove(tmp); rmErr != nil && !notFound(rmErr) {
			s.log.Warn("storage: remove temp file", "uri", s.URI(tmp), "error", rmErr)
			err = errors.Join(err, fmt.Errorf("remove temp file: %w", rmErr))
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		f.Close()
		return err
	}
	// Sync before rename so that a crash cannot leave a renamed but empty
	// file. A scratch store's content need not outlive the host.
	if !s.noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := root.Rename(tmp, key); err != nil {
		return keyShapeHint(err)
	}
	committed = true
	return nil
}

func (s *fsStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), err)
	}
	root, err := s.root()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), err)
	}
	defer root.Close() // files opened through a Root outlive it
	f, err := root.Open(key)
	if notFound(err) {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		// A directory is a prefix of other keys, not an object.
		err = ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", s.URI(key), err)
	}
	return f, nil
}

func (s *fsStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("stat: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), err)
	}
	root, err := s.root()
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), err)
	}
	defer root.Close()
	fi, err := root.Stat(key)
	if notFound(err) || (err == nil && !fi.Mode().IsRegular()) {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), ErrNotFound)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), err)
	}
	return ObjectInfo{Key: key, Size: fi.Size()}, nil
}

// Delete removes the file. Empty parent directories stay: pruning them would
// race with a concurrent Put into the same directory.
func (s *fsStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	root, err := s.root()
	if err != nil {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	defer root.Close()
	fi, err := root.Lstat(key)
	if notFound(err) || (err == nil && fi.IsDir()) {
		return nil // a directory is not an object, so there is nothing to delete
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	if err := root.Remove(key); err != nil && !notFound(err) {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	return nil
}

func (s *fsStore) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", s.URI(prefix), err)
	}
	root, err := s.root()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.URI(prefix), err)
	}
	defer root.Close()

	// Walk only the deepest directory the prefix names in full.
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
	}
	keys := []string{}
	err = fs.WalkDir(root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && notFound(err) {
				return fs.SkipAll // nothing stored under this prefix yet
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && !strings.HasPrefix(p+"/", prefix) && !strings.HasPrefix(prefix, p+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(p, prefix) {
			return nil
		}
		// Temp files of in-flight Puts and names no key can have are not objects.
		if checkKey(p) != nil {
			return nil
		}
		keys = append(keys, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.URI(prefix), err)
	}
	// WalkDir visits in lexical order per directory, which is not byte order of
	// whole keys ("a/b" < "a-b" while "a" < "a-b"): sort.
	slices.Sort(keys)
	return keys, nil
}
