package fsutil

import (
	"io/fs"
	"testing"
)

func TestFileKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0o644:                             "regular file",
		fs.ModeDir | 0o755:                "directory",
		fs.ModeSymlink:                    "symlink",
		fs.ModeNamedPipe:                  "fifo",
		fs.ModeSocket:                     "socket",
		fs.ModeDevice:                     "device",
		fs.ModeDevice | fs.ModeCharDevice: "device",
		fs.ModeIrregular:                  "irregular file",
	} {
		if got := FileKind(m); got != want {
			t.Errorf("FileKind(%v) = %q, want %q", m, got, want)
		}
	}
}
