package storage_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	big := storage.MemSpoolBytes + 1 // past what is kept in memory
	r := &peeking{r: bytes.NewReader(bytes.Repeat([]byte("x"), big)), dir: spool}
	key, ref, err := storage.PutBlob(context.Background(), store, r)
	if err != nil {
		t.Fatalf("PutBlob with TMPDIR unwritable and a spool dir = %v, want it stored", err)
	}
	if ref.Size != int64(big) || key != storage.BlobKey(ref.SHA256) {
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
	if _, _, err := storage.PutBlob(context.Background(), plain, bytes.NewReader(make([]byte, big))); err == nil {
		t.Error("PutBlob with TMPDIR unwritable and no spool dir succeeded; want the spool error")
	}
}

// TestSpoolSmallInMemory: a blob up to MemSpoolBytes — most are a few
// kilobytes: a round's workspace archive, a staged file — is spooled in
// memory: no temp file is made and freed for it (on ext4 without a journal
// every inode freed in the last minutes made each new one dearer,
// docs/capacity.md). Its spool dir is never even made.
func TestSpoolSmallInMemory(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "data", "tmp")
	store, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 1, 4 << 10, storage.MemSpoolBytes} {
		data := bytes.Repeat([]byte("y"), size)
		key, ref, err := storage.PutBlob(context.Background(), store, bytes.NewReader(data))
		if err != nil {
			t.Fatalf("PutBlob(%d bytes): %v", size, err)
		}
		if ref.Size != int64(size) || key != storage.BlobKey(ref.SHA256) {
			t.Errorf("PutBlob(%d bytes) = %q, %+v", size, key, ref)
		}
		got, err := storage.GetVerified(context.Background(), store, key, ref.SHA256, int64(size))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("GetVerified(%d bytes) = %d bytes, %v; want what was put", size, len(got), err)
		}
	}
	if _, err := os.Stat(spool); !os.IsNotExist(err) {
		t.Errorf("spool dir after small PutBlobs: %v; want it never made", err)
	}

	// A Spool past the limit moves to a file, reads back whole, and Close
	// removes the file.
	sp := storage.NewSpool(store, "spool-test-*")
	want := bytes.Repeat([]byte("0123456789"), storage.MemSpoolBytes/10+1)
	for chunk := range slices.Chunk(want, 64<<10) {
		if _, err := sp.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 1 {
		t.Errorf("spool dir past the limit holds %d files, want 1", len(entries))
	}
	rd, err := sp.Reader()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rd); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read back %d bytes, %v; want the %d written", len(got), err, len(want))
	}
	if err := sp.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 0 {
		t.Errorf("spool dir after Close holds %d files, want none", len(entries))
	}
}
