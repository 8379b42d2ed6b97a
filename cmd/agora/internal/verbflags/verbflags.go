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

// Enum is the value of a flag that takes one of a closed set of words
// (-o json|name|table, status --state): a word outside the set is refused
// as it is parsed, and shell completion offers the set.
type Enum struct {
	p      *string
	values []string
	want   string
}

// NewEnum is an Enum that stores into p (its default stays what p holds),
// accepting values; want words the set for an error, e.g. "want json,
// name or table".
func NewEnum(p *string, want string, values ...string) *Enum {
	return &Enum{p: p, values: values, want: want}
}

// Values are the words the flag takes, in the declared order.
func (e *Enum) Values() []string { return slices.Clone(e.values) }

func (e *Enum) String() string { return *e.p }

// Set takes s if it is one of the values.
func (e *Enum) Set(s string) error {
	if !slices.Contains(e.values, s) {
		return &EnumError{Value: s, Want: e.want}
	}
	*e.p = s
	return nil
}

// Type is what pflag calls the value in a usage without a `NAME`.
func (e *Enum) Type() string { return "string" }

// EnumError is a word an Enum does not take.
type EnumError struct {
	Value string
	Want  string // "want json, name or table"
}

func (e *EnumError) Error() string { return fmt.Sprintf("%q: %s", e.Value, e.Want) }

// ErrorText words pflag's errors as Go's flag package did, which scripts
// and tests grep for: "flag provided but not defined: -pull". A word an
// Enum refuses is named with the flag as it is documented: -o "yaml": want
// json, name or table.
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
		if ee, ok := errors.AsType[*EnumError](e.Unwrap()); ok {
			spelled := "--" + e.GetFlag().Name
			if e.GetFlag().Shorthand != "" {
				spelled = "-" + e.GetFlag().Shorthand
			}
			return spelled + " " + ee.Error()
		}
		why := "parse error"
		if errors.Is(e.Unwrap(), strconv.ErrRange) {
			why = "value out of range"
		}
		return fmt.Sprintf("invalid value %q for flag %s: %s", e.GetValue(), name(e.GetFlag()), why)
	}
	if e, ok := errors.AsType[*flag.ValueRequiredError](err); ok {
		msg := "flag needs an argument: -" + e.GetSpecifiedName() // -o, or -server for --server
		if enum, ok := e.GetFlag().Value.(*Enum); ok {
			msg += " takes " + strings.TrimPrefix(enum.want, "want ")
		}
		return msg
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
