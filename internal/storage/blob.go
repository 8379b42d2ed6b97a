package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
)

// BlobRef points at a content-addressed blob: where it is, its sha256 (lower-case
// hex) and its size in bytes. Events and specs carry it as JSON.
type BlobRef struct {
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// spooler is a store that names where its users spool (Options.SpoolDir).
type spooler interface{ spoolDir() string }

// CreateTemp creates a temp file (os.CreateTemp's pattern) for bytes on
// their way into s: in s's Options.SpoolDir, created 0700 when missing,
// else in os.TempDir(). The caller removes it.
func CreateTemp(s Store, pattern string) (*os.File, error) {
	dir := ""
	if sp, ok := s.(spooler); ok && sp.spoolDir() != "" {
		dir = sp.spoolDir()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("spool dir: %w", err)
		}
	}
	return os.CreateTemp(dir, pattern)
}

// BlobKey is the key of the blob whose sha256 is sha256hex: "blobs/sha256/<hex>".
func BlobKey(sha256hex string) string {
	return "blobs/sha256/" + sha256hex
}

// PutBlob stores r under BlobKey of its sha256 and returns the key and a ref.
// It hashes while spooling r (in memory up to MemSpoolBytes, then to a temp
// file: memory stays bounded), and skips the upload when the blob is already
// there: same content, same key.
func PutBlob(ctx context.Context, s Store, r io.Reader) (key string, ref BlobRef, err error) {
	sp := NewSpool(s, "agora-blob-*")
	defer func() {
		if cerr := sp.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("put blob: %w", cerr))
		}
	}()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(sp, h), ctxReader{ctx, r})
	if err != nil {
		return "", BlobRef{}, fmt.Errorf("put blob: read: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	key = BlobKey(sum)
	ref = BlobRef{URI: s.URI(key), SHA256: sum, Size: size}

	// Put is atomic, so an object at this key is a whole earlier PutBlob; the
	// size check only guards against something else having written there.
	info, err := s.Stat(ctx, key)
	switch {
	case err == nil && info.Size == size:
		return key, ref, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return "", BlobRef{}, fmt.Errorf("put blob: %w", err)
	}
	rd, err := sp.Reader()
	if err != nil {
		return "", BlobRef{}, fmt.Errorf("put blob %s: %w", ref.URI, err)
	}
	if err := s.Put(ctx, key, rd); err != nil {
		return "", BlobRef{}, fmt.Errorf("put blob: %w", err)
	}
	return key, ref, nil
}

// MemSpoolBytes is how much a Spool keeps in memory before it moves to a
// temp file. Most of what is spooled (a round's workspace archive, a staged
// blob) is a few kilobytes, and a temp file costs an inode made and freed:
// on ext4 without a journal every inode freed in the last minutes makes
// each new one dearer (docs/capacity.md, "Fixed: the runner's cost grew
// with the run").
const MemSpoolBytes = 1 << 20

// Spool holds bytes on their way into a store: in memory up to
// MemSpoolBytes, then in a temp file made by CreateTemp. Write it, read it
// back once with Reader, Close it (which removes the temp file).
type Spool struct {
	s       Store
	pattern string
	mem     bytes.Buffer
	f       *os.File
}

// NewSpool returns an empty spool for bytes on their way into s; pattern
// names its temp file, if it needs one (os.CreateTemp's).
func NewSpool(s Store, pattern string) *Spool { return &Spool{s: s, pattern: pattern} }

// Write implements io.Writer.
func (sp *Spool) Write(p []byte) (int, error) {
	if sp.f == nil && sp.mem.Len()+len(p) <= MemSpoolBytes {
		return sp.mem.Write(p)
	}
	if sp.f == nil {
		f, err := CreateTemp(sp.s, sp.pattern)
		if err != nil {
			return 0, fmt.Errorf("spool: %w", err)
		}
		sp.f = f
		if _, err := f.Write(sp.mem.Bytes()); err != nil {
			return 0, fmt.Errorf("spool: %w", err)
		}
		sp.mem = bytes.Buffer{}
	}
	return sp.f.Write(p)
}

// Reader reads what was written, from the start.
func (sp *Spool) Reader() (io.Reader, error) {
	if sp.f == nil {
		return bytes.NewReader(sp.mem.Bytes()), nil
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind spool file: %w", err)
	}
	return sp.f, nil
}

// Close removes the temp file, if there is one. Idempotent.
func (sp *Spool) Close() error {
	sp.mem = bytes.Buffer{}
	if sp.f == nil {
		return nil
	}
	f := sp.f
	sp.f = nil
	cerr := f.Close()
	if rerr := os.Remove(f.Name()); rerr != nil {
		return fmt.Errorf("remove spool file: %w", rerr)
	}
	if cerr != nil {
		return fmt.Errorf("close spool file: %w", cerr)
	}
	return nil
}

// GetVerified reads the object at key and checks it against wantSHA256 (hex)
// and maxSize. It reads at most maxSize+1 bytes, so a huge or hostile object
// costs no more than the limit. Too big or a hash mismatch give ErrIntegrity
// with a message naming the object, what was wanted and what was found.
func GetVerified(ctx context.Context, s Store, key, wantSHA256 string, maxSize int64) ([]byte, error) {
	want := strings.ToLower(wantSHA256)
	if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("verify %s: %w: want sha256 %q is not 64 hex characters", s.URI(key), ErrIntegrity, wantSHA256)
	}
	if maxSize < 0 {
		return nil, fmt.Errorf("verify %s: negative max size %d", s.URI(key), maxSize)
	}
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	// A read-only stream: closing it early (on oversize) is the point, and a
	// close error cannot change what was read.
	defer rc.Close()

	limit := maxSize
	if limit < math.MaxInt64 {
		limit++ // one byte more than allowed tells "too big" from "exactly max"
	}
	// Read into a buffer of the object's size when the backend knows it (a
	// file does): io.ReadAll grows its buffer step by step, copying a 1 MB
	// object about a dozen times.
	buf := bytes.NewBuffer(nil)
	if st, ok := rc.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Size() >= 0 && fi.Size() < limit {
			buf.Grow(int(fi.Size()) + bytes.MinRead)
		}
	}
	_, err = buf.ReadFrom(io.LimitReader(ctxReader{ctx, rc}, limit))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("verify %s: read: %w", s.URI(key), err)
	}
	if int64(len(data)) > maxSize {
		return nil, fmt.Errorf("verify %s: %w: size: want at most %d bytes, got more", s.URI(key), ErrIntegrity, maxSize)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("verify %s: %w: sha256: want %s, got %s (%d bytes)", s.URI(key), ErrIntegrity, want, got, len(data))
	}
	return data, nil
}

// ResolveURI returns the key whose s.URI is uri. Workers receive refs as URIs;
// this both recovers the key and refuses a URI that points outside s (another
// bucket, directory or prefix), so a ref cannot make a worker read elsewhere.
// It works for any Store whose URI is a fixed base followed by the key.
func ResolveURI(s Store, uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("resolve uri %q: %w", uri, err)
	}
	if u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("resolve uri %q: not an object uri of the form scheme://host/path", uri)
	}
	// The key is a suffix of the path made of whole segments; only one suffix can
	// map back to the same URI, since the store's base is fixed.
	p := strings.TrimPrefix(u.Path, "/")
	for i := 0; i <= len(p); i++ {
		if i > 0 && p[i-1] != '/' {
			continue
		}
		key := p[i:]
		if ValidateKey(key) != nil {
			continue
		}
		if sameURI(s.URI(key), u) {
			return key, nil
		}
	}
	return "", fmt.Errorf("resolve uri %q: not an object in %s", uri, s.URI(""))
}

// sameURI compares decoded parts, so "%7E" and "~" spell the same key.
func sameURI(a string, b *url.URL) bool {
	u, err := url.Parse(a)
	return err == nil && strings.EqualFold(u.Scheme, b.Scheme) && u.Host == b.Host && u.Path == b.Path
}
