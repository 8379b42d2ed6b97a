package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/agoradev/agora/cmd/agora/internal/cliconfig"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

// The exit codes of every verb (the table is in the README and agora help).
const (
	exitOK     = 0 // done
	exitFailed = 1 // the work failed, or the server refused or could not be reached
	exitUsage  = 2 // a usage error or bad input: nothing was changed
	exitEnded  = 3 // the task expired or was cancelled
)

// usageError is a mistake in the command line or bad input: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode prints err as one line prefixed with the command and returns 2 for
// a usage error, 1 for anything else (0 for nil).
func exitCode(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return exitOK
	}
	// errors.Join and friends use newlines; one line is easier to grep.
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	fmt.Fprintf(stderr, "%s: %s\n", cmd, msg)
	if errors.As(err, new(usageError)) || errors.Is(err, cliconfig.ErrUsage) {
		return exitUsage
	}
	return exitFailed
}

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
