package verbflags

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	flag "github.com/spf13/pflag"
)

func testSet() *flag.FlagSet {
	fs := flag.NewFlagSet("agora x", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	fs.Bool("json", false, "print JSON")
	fs.StringP("output", "o", "", "the `FORMAT`")
	fs.String("server", "", "the server `URL`")
	fs.Int("limit", 0, "at most `N`")
	return fs
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want []string }{
		{[]string{"-json", "t-1"}, []string{"--json", "t-1"}},
		{[]string{"-server", "-json"}, []string{"--server", "-json"}}, // -json is the server's value
		{[]string{"-server=u", "-json"}, []string{"--server=u", "--json"}},
		{[]string{"--server", "-limit"}, []string{"--server", "-limit"}},
		{[]string{"-o", "json"}, []string{"-o", "json"}}, // a shorthand stays
		{[]string{"-help"}, []string{"--help"}},
		{[]string{"-unknown", "x"}, []string{"-unknown", "x"}},
		{[]string{"--", "-json"}, []string{"--", "-json"}},
	} {
		if got := Normalize(testSet(), tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--pull"}, "flag provided but not defined: -pull"},
		{[]string{"-x"}, "flag provided but not defined: -x"},
		{[]string{"--limit", "many"}, `invalid value "many" for flag -limit: parse error`},
		{[]string{"--limit", "99999999999999999999"}, `invalid value "99999999999999999999" for flag -limit: value out of range`},
		{[]string{"--server"}, "flag needs an argument: -server"},
	} {
		err := testSet().Parse(tt.args)
		if err == nil {
			t.Fatalf("Parse(%q) succeeded", tt.args)
		}
		if got := ErrorText(err); got != tt.want {
			t.Errorf("ErrorText of Parse(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestArgsOnly(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"TASK [--json] [--server URL]", "TASK"},
		{"[TASK] [--limit N | --cursor CURSOR | --all] [--json]", "[TASK]"},
		{"NAME[@VERSION] [--versions [--limit N | --all]] [--json]", "NAME[@VERSION]"},
		{"TASK --round N --answer X [--by NAME]", "TASK --round N --answer X"},
		{"[--state STATE]... [--yes]", ""},
	} {
		if got := ArgsOnly(tt.in); got != tt.want {
			t.Errorf("ArgsOnly(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPrintHelp(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	PrintHelp(&out, testSet(), "TASK [--json] [--server URL]")
	got := out.String()
	for _, want := range []string{"usage: agora x TASK [flags]\n\nflags:\n", "--server URL", "--limit N",
		"also, in any position:\n  --context NAME and --config FILE", "\n  -o json|name|table"} {
		if !strings.Contains(got, want) {
			t.Errorf("PrintHelp lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	PrintHelp(&out, flag.NewFlagSet("agora y", flag.ContinueOnError), "")
	if got := out.String(); got != "usage: agora y [flags]\n\nflags:\n" {
		t.Errorf("PrintHelp of a set without flags = %q", got)
	}
}

// TestEnum: a word outside the set is refused as it is parsed, worded
// with the flag as it is documented; the set is what completion offers.
func TestEnum(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"-o", "name"}, "name", ""},
		{[]string{"--output=table"}, "table", ""},
		{nil, "", ""},
		{[]string{"-o", "yaml"}, "", `-o "yaml": want json, name or table`},
		{[]string{"--output", "JSON"}, "", `-o "JSON": want json, name or table`},
		{[]string{"--state", "bogus"}, "", `--state "bogus": want one of running, failed`},
		{[]string{"-o"}, "", "flag needs an argument: -o takes json, name or table"},
	} {
		fs := flag.NewFlagSet("agora x", flag.ContinueOnError)
		fs.SetOutput(&bytes.Buffer{})
		var out, state string
		enum := NewEnum(&out, "want json, name or table", "json", "name", "table")
		fs.VarP(enum, "output", "o", "the `FORMAT`")
		fs.Var(NewEnum(&state, "want one of running, failed", "running", "failed"), "state", "the `STATE`")
		err := fs.Parse(tt.args)
		switch {
		case tt.wantErr == "" && (err != nil || out != tt.want):
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.args, out, err, tt.want)
		case tt.wantErr != "" && (err == nil || ErrorText(err) != tt.wantErr):
			t.Errorf("Parse(%q) error %v; want %q", tt.args, err, tt.wantErr)
		}
		if got := enum.Values(); !slices.Equal(got, []string{"json", "name", "table"}) {
			t.Errorf("Values() = %q", got)
		}
	}
}
