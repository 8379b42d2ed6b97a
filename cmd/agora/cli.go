package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"

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
// a usage error, 1 for anything else (0 for nil or errHelp).
func exitCode(stderr io.Writer, cmd string, err error) int {
	if err == nil || errors.Is(err, errHelp) {
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

// parseFlags parses args into fs (named after the command) and allows no
// other argument. It returns errHelp after printing the usage to stdout for
// -h, a usageError for a bad flag or a leftover argument, and nil otherwise.
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
	err := fs.Parse(normalizeArgs(fs, args))
	switch {
	case err == nil && *help, errors.Is(err, flag.ErrHelp):
		printFlagsHelp(stdout, fs, synopsis)
		return nil, errHelp
	case err != nil:
		return nil, usagef("%s; run '%s -h' for the flags", flagError(err), fs.Name())
	}
	return fs.Args(), nil
}

// printFlagsHelp prints a verb's usage: its arguments and every flag with
// its description and default, from the definitions themselves.
func printFlagsHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	line := fs.Name()
	if args := argsOnly(synopsis); args != "" {
		line += " " + args
	}
	fmt.Fprintf(w, "usage: %s [flags]\n\nflags:\n%s", line, fs.FlagUsages())
	var global []string
	if fs.Lookup("server") != nil {
		global = append(global, "--context NAME and --config FILE pick the server and token from the config file ('agora config -h')")
	}
	if fs.Lookup("json") != nil {
		global = append(global, "-o json|name|table: --json, the ids one per line, or the table")
	}
	if len(global) > 0 {
		fmt.Fprintf(w, "\nalso, in any position:\n  %s\n", strings.Join(global, "\n  "))
	}
}

// argsOnly is a synopsis without its optional flags ("[--json]", "[--limit
// N | --all]"): those are listed from their definitions, so the usage line
// cannot drift from them. The arguments and the required flags stay.
func argsOnly(synopsis string) string {
	var b strings.Builder
	depth := 0 // inside an optional flag group
	for i := 0; i < len(synopsis); i++ {
		c := synopsis[i]
		switch {
		case depth == 0 && c == '[' && strings.HasPrefix(synopsis[i+1:], "-"):
			depth = 1
		case depth > 0 && c == '[':
			depth++
		case depth > 0 && c == ']':
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	// A "..." left alone repeated a flag group.
	fields := slices.DeleteFunc(strings.Fields(b.String()), func(f string) bool { return f == "..." })
	return strings.Join(fields, " ")
}

// flagError words pflag's errors as Go's flag package did, which scripts
// and tests grep for: "flag provided but not defined: -pull".
func flagError(err error) string {
	name := func(f *flag.Flag) string { return "-" + f.Name }
	if e, ok := errors.AsType[*flag.NotExistError](err); ok {
		n := e.GetSpecifiedName()
		if n == "" {
			n = e.GetSpecifiedShortnames()
		}
		return "flag provided but not defined: -" + n
	}
	if e, ok := errors.AsType[*flag.InvalidValueError](err); ok {
		why := "parse error"
		if errors.Is(e.Unwrap(), strconv.ErrRange) {
			why = "value out of range"
		}
		return fmt.Sprintf("invalid value %q for flag %s: %s", e.GetValue(), name(e.GetFlag()), why)
	}
	if e, ok := errors.AsType[*flag.ValueRequiredError](err); ok {
		return "flag needs an argument: " + name(e.GetFlag())
	}
	return err.Error()
}

// normalizeArgs rewrites -name and -name=value to --name… when name is a
// long flag of fs, so the single-dash spellings of Go's flag package keep
// working; values, arguments and what follows "--" stay as they are.
func normalizeArgs(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	takesValue := false // the previous argument was a flag whose value follows
	for i, a := range args {
		if takesValue {
			takesValue = false
			out = append(out, a)
			continue
		}
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-help" {
			a = "--help"
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1 {
			n, _, hasValue := strings.Cut(a[1:], "=")
			if f := fs.Lookup(n); f != nil && (len(n) > 1 || f.Shorthand != n) {
				a = "-" + a
				takesValue = !hasValue && f.NoOptDefVal == ""
			}
		} else if n, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(n, "=") {
			if f := fs.Lookup(n); f != nil {
				takesValue = f.NoOptDefVal == ""
			}
		}
		out = append(out, a)
	}
	return out
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
var errHelp = errors.New("help printed")

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
