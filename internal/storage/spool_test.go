package storage_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agoradev/agora/internal/storage"
)

// peeking reads from r and, on every Read, notes how many files dir holds:
// what PutBlob has spooled so far.
type peeking struct {
	r    io.Reader
	dir  string
	seen int
}

func (p *peeking) Read(b []byte) (int, error) {
	if entries, err := os.ReadDir(p.dir); err == nil {
		p.seen = max(p.seen, len(entries))
	}
	return p.r.Read(b)
}

// TestSpoolDir: with Options.SpoolDir, PutBlob spools there (creating it,
// private) and nowhere else — a process whose $TMPDIR is not writable, as
// in a scratch image with no /tmp, still stores — and leaves nothing
// behind.
func TestSpoolDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "no-such-dir"))
	spool := filepath.Join(t.TempDir(), "data", "tmp")
	store, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	r := &peeking{r: bytes.NewReader(bytes.Repeat([]byte("x"), 1<<20)), dir: spool}
	key, ref, err := storage.PutBlob(context.Background(), store, r)
	if err != nil {
		t.Fatalf("PutBlob with TMPDIR unwritable and a spool dir = %v, want it stored", err)
	}
	if ref.Size != 1<<20 || key != storage.BlobKey(ref.SHA256) {
		t.Errorf("PutBlob = %q, %+v", key, ref)
	}
	if r.seen != 1 {
		t.Errorf("files in the spool dir while PutBlob read = %d, want its one spool file", r.seen)
	}
	info, err := os.Stat(spool)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("spool dir = %v, %v; want it made 0700", info, err)
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 0 {
		t.Errorf("spool dir after PutBlob holds %d files, want none", len(entries))
	}

	// Without one, the spool is os.TempDir(): unwritable here, so PutBlob
	// says so.
	plain, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := storage.PutBlob(context.Background(), plain, bytes.NewReader([]byte("x"))); err == nil {
		t.Error("PutBlob with TMPDIR unwritable and no spool dir succeeded; want the spool error")
	}
}
