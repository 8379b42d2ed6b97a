// Package fsutil holds the file-system words agora's error messages share.
package fsutil

import "io/fs"

// FileKind names what kind of file m describes, for error messages:
// "symlink", "directory", "fifo", "socket", "device", "regular file".
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsRegular():
		return "regular file"
	}
	return "irregular file"
}
