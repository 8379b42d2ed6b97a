package workspace_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

func newStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := storage.Open(t.Context(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestSnapshotRestore: what a round leaves — files with their modes, empty
// directories, symlinks (even dangling ones) — is what the next round finds.
func TestSnapshotRestore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := newStore(t)
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "notes.md"), "hello", 0o644)
	mustWrite(t, filepath.Join(src, ".agora/state/run.sh"), "#!/bin/sh\n", 0o755)
	if err := os.MkdirAll(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("notes.md", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nowhere", filepath.Join(src, "dangling")); err != nil {
		t.Fatal(err)
	}
	ref, err := workspace.Snapshot(ctx, store, src, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	again, err := workspace.Snapshot(ctx, store, src, 1<<20)
	if err != nil || *again != *ref {
		t.Errorf("second snapshot = %+v, %v; want the same content-addressed %+v", again, err, ref)
	}
	dst := t.TempDir()
	if err := workspace.Restore(ctx, store, ref, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, content, link string
		mode                os.FileMode
	}{
		{path: "notes.md", content: "hello", mode: 0o644},
		{path: ".agora/state/run.sh", content: "#!/bin/sh\n", mode: 0o755},
		{path: "empty", mode: os.ModeDir | 0o755},
		{path: "link", link: "notes.md", mode: os.ModeSymlink},
		{path: "dangling", link: "/nowhere", mode: os.ModeSymlink},
	}
	for _, tt := range tests {
		p := filepath.Join(dst, tt.path)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		switch {
		case tt.link != "":
			if got, _ := os.Readlink(p); fi.Mode()&os.ModeSymlink == 0 || got != tt.link {
				t.Errorf("%s: mode %v link %q; want a symlink to %q", tt.path, fi.Mode(), got, tt.link)
			}
		case fi.Mode() != tt.mode:
			t.Errorf("%s: mode %v, want %v", tt.path, fi.Mode(), tt.mode)
		case tt.content != "":
			if got, _ := os.ReadFile(p); string(got) != tt.content {
				t.Errorf("%s = %q, want %q", tt.path, got, tt.content)
			}
		}
	}
}

// TestRestoreRefuses: an archive that does not match its ref, or names a
// path outside the workspace, or holds more than the maximum, is refused.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := newStore(t)
	put := func(entries ...tar.Header) *schemas.ObjectRef {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, h := range entries {
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			if h.Size > 0 {
				_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			}
		}
		_ = tw.Close()
		_ = gz.Close()
		_, ref, err := storage.PutBlob(ctx, store, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
	}
	good := put(tar.Header{Name: "a", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3})
	wrongHash := *good
	wrongHash.SHA256 = strings.Repeat("0", 64)
	tests := []struct {
		name string
		ref  *schemas.ObjectRef
		max  int64
		want string
	}{
		{"hash mismatch", &wrongHash, 1 << 20, "sha256"},
		{"escaping entry", put(tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), 1 << 20, "unsafe entry"},
		{"absolute entry", put(tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), 1 << 20, "unsafe entry"},
		{"write through a symlink", put(
			tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "/tmp"},
			tar.Header{Name: "out/evil", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}), 1 << 20, "restore out/evil"},
		{"over the maximum", put(tar.Header{Name: "big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3 << 10}), 2 << 10, "maximum of 2.0 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := workspace.Restore(ctx, store, tt.ref, t.TempDir(), tt.max)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Restore = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSnapshotOverMaximum(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "big"), strings.Repeat("x", 3<<20), 0o644)
	_, err := workspace.Snapshot(t.Context(), newStore(t), dir, 2<<20)
	if err == nil || !strings.Contains(err.Error(), "(agora runner --max-workspace-mb 2)") {
		t.Errorf("Snapshot(3 MiB, max 2 MiB) = %v; want an error naming --max-workspace-mb 2", err)
	}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := newStore(t)
	if _, err := workspace.ReadRecord(ctx, store, "x/workspace.json"); !errors.Is(err, workspace.ErrNoRecord) {
		t.Errorf("ReadRecord(absent) = %v, want ErrNoRecord", err)
	}
	tests := []workspace.Record{
		{Archive: &schemas.ObjectRef{URI: "file:///s/blobs/sha256/ab", SHA256: strings.Repeat("a", 64), Size: 7}},
		{Error: "snapshot workspace: too big"},
	}
	for i, rec := range tests {
		key := "r" + string(rune('0'+i)) + "/workspace.json"
		if err := workspace.WriteRecord(ctx, store, key, rec); err != nil {
			t.Fatal(err)
		}
		got, err := workspace.ReadRecord(ctx, store, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Error != rec.Error || (rec.Archive != nil) != (got.Archive != nil) || (rec.Archive != nil && *got.Archive != *rec.Archive) {
			t.Errorf("ReadRecord = %+v, want %+v", got, rec)
		}
	}
	if err := store.Put(ctx, "bad/workspace.json", strings.NewReader("{")); err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.ReadRecord(ctx, store, "bad/workspace.json"); err == nil || errors.Is(err, workspace.ErrNoRecord) {
		t.Errorf("ReadRecord(malformed) = %v, want a decode error", err)
	}
}

func mustWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotSpoolsInStoreSpoolDir: the archive is packed in the store's
// spool dir (the data dir's tmp/ for agora serve), not in $TMPDIR — which
// the serve image once lacked, failing every snapshot with "open
// /tmp/agora-snapshot-….tar.gz: no such file or directory" — and then
// restored whole.
func TestSnapshotSpoolsInStoreSpoolDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "no-such-dir"))
	spool := filepath.Join(t.TempDir(), "tmp")
	store, err := storage.Open(t.Context(), "file://"+t.TempDir(), storage.Options{SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "notes.txt"), []byte("round 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := workspace.Snapshot(t.Context(), store, src, 1<<20)
	if err != nil {
		t.Fatalf("Snapshot with TMPDIR unwritable = %v, want it to spool in %s", err, spool)
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 0 {
		t.Errorf("spool dir after Snapshot holds %d files, want none", len(entries))
	}
	dst := t.TempDir()
	if err := workspace.Restore(t.Context(), store, ref, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "notes.txt")); err != nil || string(b) != "round 1" {
		t.Errorf("restored notes.txt = %q, %v; want %q", b, err, "round 1")
	}
}
