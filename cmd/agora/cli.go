package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

// The exit codes of every verb (exitcode has the table).
const (
	exitOK     = exitcode.OK
	exitFailed = exitcode.Failed
	exitUsage  = exitcode.Usage
	exitEnded  = exitcode.Ended
)

func usagef(format string, args ...any) error { return exitcode.Usagef(format, args...) }

// exitCode prints err in one line after cmd and returns its exit code.
func exitCode(stderr io.Writer, cmd string, err error) int { return exitcode.Print(stderr, cmd, err) }

// getenv looks key up in environ (os.Environ form); the last one wins.
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// defaultDataDir is every role's data directory (and agora secret's)
// when no --data-dir is given: roles.DefaultDataDir, $AGORA_DATA_DIR, else
// ~/.agora. Set AGORA_DATA_DIR once and every verb on this machine agrees
// where the state and the secrets are.
func defaultDataDir(environ []string) (string, error) {
	dir := roles.DefaultDataDir(func(k string) string { return getenv(environ, k) })
	if dir == "" {
		return "", usagef("HOME is not set, so there is no default --data-dir; pass --data-dir DIR or set AGORA_DATA_DIR")
	}
	return dir, nil
}

// newLogger is the text logger on stderr every long-running verb uses.
func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}
