package main

import (
	"os"

	"golang.org/x/term"
)

// isTTY reports whether w is a terminal (not merely a character device
// such as /dev/null).
func isTTY(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
