// Package verbflags holds the conventions every verb's pflag set follows:
// Go flag package spellings still read (-json as --json), its error
// wording kept (scripts grep "flag provided but not defined"), and the
// usage printed from the flag definitions themselves, so help cannot drift
// from what is parsed.
package verbflags

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	flag "github.com/spf13/pflag"
)

// PrintHelp prints a verb's usage: its arguments and every flag with
// its description and default, from the definitions themselves.
func PrintHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	line := fs.Name()
	if args := ArgsOnly(synopsis); args != "" {
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

// ArgsOnly is a synopsis without its optional flags ("[--json]", "[--limit
// N | --all]"): those are listed from their definitions, so the usage line
// cannot drift from them. The arguments and the required flags stay.
func ArgsOnly(synopsis string) string {
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

// ErrorText words pflag's errors as Go's flag package did, which scripts
// and tests grep for: "flag provided but not defined: -pull".
func ErrorText(err error) string {
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

// Normalize rewrites -name and -name=value to --name… when name is a
// long flag of fs, so the single-dash spellings of Go's flag package keep
// working; values, arguments and what follows "--" stay as they are.
func Normalize(fs *flag.FlagSet, args []string) []string {
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
