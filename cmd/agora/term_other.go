//go:build !linux

package main

import (
	"io"
	"os"
)

// isTTY reports whether w is a character device, which on a desktop
// is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
