package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/verbflags"
)

// probed is what cobra handed a probe verb's run.
type probed struct {
	args          []string
	server, token string
	json          bool
	state         string
	limit         int
	config        string // $AGORA_CONFIG as the run sees it
}

// probeVerbs are a tree with a verb that records its parsed command line
// (probe), one that prints no JSON (plain) and a group (grp).
func probeVerbs(got *probed) []verb {
	return []verb{
		{name: "probe", usage: "[ARG...] [--json]", flags: func(fs *flag.FlagSet) runFunc {
			a := newAPIFlags(fs)
			state := new(string)
			fs.Var(verbflags.NewEnum(state, "want one of queued, failed", "queued", "failed"), "state", "only tasks in `STATE`")
			limit := fs.Int("limit", 0, "at most `N`")
			return func(_ context.Context, args, environ []string, stdout, _ io.Writer) error {
				*got = probed{args: args, server: a.server, token: a.token, json: a.json, state: *state, limit: *limit, config: getenv(environ, "AGORA_CONFIG")}
				if a.json {
					fmt.Fprintln(stdout, `{"id": "t-1"}`)
				}
				return nil
			}
		}},
		{name: "plain", flags: func(*flag.FlagSet) runFunc {
			return func(context.Context, []string, []string, io.Writer, io.Writer) error { return nil }
		}},
		{name: "grp", help: "usage: agora grp sub\n", flags: group("usage: agora grp sub\n", "want a subcommand: sub", "unknown subcommand %q; the one there is: sub"),
			subs: []verb{{name: "sub", usage: "ID", label: "agora grp", flags: func(*flag.FlagSet) runFunc {
				return func(_ context.Context, args, _ []string, _, _ io.Writer) error {
					if len(args) != 1 {
						return usagef("want one ID")
					}
					return nil
				}
			}}}},
	}
}

// TestFlagsOwnedByCobra: a verb's flags, declared once on its command,
// parse before and after the verb and its arguments, in Go's spellings
// too; "--" ends them; an Enum refuses a word as it is parsed; the global
// flags reach the verb; mistakes are one line and exit 2.
func TestFlagsOwnedByCobra(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		want       probed
		wantStdout string
		wantStderr string
	}{
		{"flags after the verb", []string{"probe", "x", "--server", "http://s:1", "--limit", "3", "y"}, 0,
			probed{args: []string{"x", "y"}, server: "http://s:1", limit: 3}, "", ""},
		{"flags before the verb", []string{"--server", "http://s:1", "--token", "tok", "--json", "probe", "x"}, 0,
			probed{args: []string{"x"}, server: "http://s:1", token: "tok", json: true}, "{\"id\": \"t-1\"}\n", ""},
		{"Go's one-dash spellings", []string{"-server", "http://s:1", "probe", "-json", "-limit=2", "x"}, 0,
			probed{args: []string{"x"}, server: "http://s:1", json: true, limit: 2}, "{\"id\": \"t-1\"}\n", ""},
		{"-- ends the flags", []string{"probe", "--limit", "1", "--", "--json", "-x"}, 0,
			probed{args: []string{"--json", "-x"}, limit: 1}, "", ""},
		{"an enum's word", []string{"probe", "--state=failed"}, 0, probed{args: []string{}, state: "failed"}, "", ""},
		{"an enum refuses another", []string{"probe", "--state", "done"}, 2, probed{}, "",
			"agora probe: --state \"done\": want one of queued, failed\n"},
		{"-o json is --json", []string{"probe", "-o", "json"}, 0, probed{args: []string{}, json: true}, "{\"id\": \"t-1\"}\n", ""},
		{"-o name prints the ids", []string{"-o", "name", "probe"}, 0, probed{args: []string{}, json: true}, "t-1\n", ""},
		{"-o refuses another word", []string{"probe", "-o", "yaml"}, 2, probed{}, "", "agora: -o \"yaml\": want json, name or table\n"},
		{"-o without its word", []string{"probe", "-o"}, 2, probed{}, "", "agora: flag needs an argument: -o takes json, name or table\n"},
		{"-o json of a verb without JSON", []string{"plain", "-o", "json"}, 2, probed{}, "", "agora plain: -o json: agora plain prints no JSON; drop -o\n"},
		{"--config anywhere", []string{"probe", "--config", "/c.yaml"}, 0, probed{args: []string{}, config: "/c.yaml"}, "", ""},
		{"an unknown flag", []string{"probe", "--bogus"}, 2, probed{}, "",
			"agora probe: flag provided but not defined: -bogus; run 'agora probe -h' for the flags\n"},
		{"an unknown flag before the command", []string{"--bogus", "probe"}, 2, probed{}, "",
			"agora: unknown flag --bogus before the command; the flags before it are --server, --token, --context, --config, -o and --json\n"},
		{"a bad value", []string{"probe", "--limit", "many"}, 2, probed{}, "",
			"agora probe: invalid value \"many\" for flag -limit: parse error; run 'agora probe -h' for the flags\n"},
		{"an unknown command", []string{"--json", "nope"}, 2, probed{}, "", "agora: unknown command \"nope\"; run 'agora help' for the list\n"},
		{"a group without its subcommand", []string{"grp"}, 2, probed{}, "", "agora grp: want a subcommand: sub\n"},
		{"a group's unknown subcommand", []string{"grp", "zz"}, 2, probed{}, "", "agora grp: unknown subcommand \"zz\"; the one there is: sub\n"},
		{"a group's help", []string{"grp", "help"}, 0, probed{}, "usage: agora grp sub\n", ""},
		{"a group's -h", []string{"grp", "-h"}, 0, probed{}, "usage: agora grp sub\n", ""},
		{"a subcommand's label", []string{"grp", "sub"}, 2, probed{}, "", "agora grp: want one ID\n"},
	} {
		var got probed
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), probeVerbs(&got), tc.args, []string{"HOME=" + home}, &stdout, &stderr)
		if code != tc.code || stdout.String() != tc.wantStdout || stderr.String() != tc.wantStderr {
			t.Errorf("%s: agora %q = exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, tc.args, code, stdout.String(), stderr.String(), tc.code, tc.wantStdout, tc.wantStderr)
		}
		if got.args == nil && tc.want.args == nil {
			continue
		}
		if !slices.Equal(got.args, tc.want.args) || got.server != tc.want.server || got.token != tc.want.token || got.json != tc.want.json ||
			got.state != tc.want.state || got.limit != tc.want.limit || got.config != tc.want.config {
			t.Errorf("%s: agora %q ran with %+v; want %+v", tc.name, tc.args, got, tc.want)
		}
	}
}

// TestHelpOfAVerb: -h, --help, -help and help VERB print the usage from
// the verb's declared flags, with the global ones named once below.
func TestHelpOfAVerb(t *testing.T) {
	t.Parallel()
	want := "usage: agora probe [ARG...] [flags]\n\nflags:\n"
	for _, args := range [][]string{{"probe", "-h"}, {"probe", "--help"}, {"probe", "x", "-help"}, {"help", "probe"}} {
		var got probed
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), probeVerbs(&got), args, nil, &stdout, &stderr)
		out := stdout.String()
		if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "--state STATE") || !strings.Contains(out, "also, in any position:") ||
			strings.Contains(out, "--context string") || got.args != nil {
			t.Errorf("agora %q = exit %d, ran %v:\n%s%s", args, code, got.args != nil, out, stderr.String())
		}
	}
}
