package main

import (
	"errors"
	"io"
	"log/slog"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/cmd/agora/internal/verbflags"
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

// parseFlags parses args into fs (named after the command) and allows no
// other argument. It returns errHelp after printing the usage to stdout for
// -h, a usage error for a bad flag or a leftover argument, and nil otherwise.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, stdout io.Writer) error {
	pos, err := parseArgs(fs, synopsis, args, stdout)
	if err == nil && len(pos) > 0 {
		return usagef("unexpected argument %q; run '%s -h' for the flags", pos[0], fs.Name())
	}
	return err
}

// parseArgs parses flags anywhere among args (a "--" ends them) and
// returns the other arguments. -h prints the usage, made from the flag
// definitions, to stdout (errHelp). Long flags written with one dash
// (-json), as Go's flag package took them, are read as --json.
func parseArgs(fs *flag.FlagSet, synopsis string, args []string, stdout io.Writer) ([]string, error) {
	help := fs.BoolP("help", "h", false, "print this help")
	if c, ok := stdout.(*flagCollector); ok {
		c.fs, c.synopsis = fs, synopsis
		return nil, errHelp
	}
	fs.SetOutput(io.Discard) // errors are reported in one line by the caller
	fs.SetInterspersed(true)
	err := fs.Parse(verbflags.Normalize(fs, args))
	switch {
	case err == nil && *help, errors.Is(err, flag.ErrHelp):
		verbflags.PrintHelp(stdout, fs, synopsis)
		return nil, errHelp
	case err != nil:
		return nil, usagef("%s; run '%s -h' for the flags", verbflags.ErrorText(err), fs.Name())
	}
	return fs.Args(), nil
}

// flagCollector, passed as stdout, makes parseArgs hand over the verb's
// flag set instead of parsing: help and shell completion read the flags
// from the very definitions the verb parses with.
type flagCollector struct {
	io.Writer
	fs       *flag.FlagSet
	synopsis string
}

// errHelp: the usage was printed on request; exit 0.
var errHelp = exitcode.ErrHelp

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
