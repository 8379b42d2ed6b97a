package registryfile

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestPackDir(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("b.txt", "b", 0o600)
	write("a/run.sh", "#!/bin/sh\n", 0o700)
	one, files, err := PackDir(dir, 1<<20)
	if err != nil || files != 2 {
		t.Fatalf("PackDir = %d files, %v", files, err)
	}
	// Touching times and permissions beyond the executable bit changes nothing.
	if err := os.Chmod(filepath.Join(dir, "b.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	two, _, _ := PackDir(dir, 1<<20)
	if !bytes.Equal(one, two) {
		t.Error("the same tree packed twice gave different bytes")
	}
	tr := tar.NewReader(bytes.NewReader(one))
	var got []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprintf("%s %o %d", h.Name, h.Mode, h.Uid))
	}
	if want := "[a/ 755 0 a/run.sh 755 0 b.txt 644 0]"; fmt.Sprint(got) != want {
		t.Errorf("entries = %v, want %s", got, want)
	}
	if _, _, err := PackDir(dir, 3); err == nil {
		t.Error("PackDir over the cap succeeded")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := PackDir(dir, 1<<20); err == nil || !bytes.Contains([]byte(err.Error()), []byte("link is a symlink")) {
		t.Errorf("PackDir with a symlink = %v; want it named", err)
	}
	if _, _, err := PackDir(filepath.Join(dir, "b.txt"), 1<<20); err == nil {
		t.Error("PackDir of a file succeeded")
	}
}
