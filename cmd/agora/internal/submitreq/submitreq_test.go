package submitreq

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	file := write("tidy.yaml", "name: tidy\nruntime: exec\ncommand: [\"true\"]\nroute: memory,human=1h\ntimeout_seconds: 60\n")
	withCaps := write("caps.yaml", "name: caps\nruntime: exec\ncommand: [\"true\"]\ncapabilities: [review]\n")
	input := write("input.json", `{"issue": 42}`)
	notObject := write("list.json", `[1]`)
	sh := func(cmd string) schemas.Subagent {
		return schemas.Subagent{Name: "command", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", cmd}}
	}
	for _, tt := range []struct {
		name    string
		f       Flags
		want    wire.SubmitRequest
		wantErr string
	}{
		{name: "nothing", wantErr: "want --subagent NAME, --subagent-file FILE or --command"},
		{name: "several", f: Flags{Subagent: "a", Command: "true"}, wantErr: "want one of --subagent, --subagent-file or --command"},
		{name: "a registered one", f: Flags{Subagent: "reviewer", AllowMemory: true, TaskID: "t-1"},
			want: wire.SubmitRequest{SubagentRef: "reviewer", AllowMemory: true, TaskID: "t-1"}},
		{name: "a bad ref", f: Flags{Subagent: "a@b@c"}, wantErr: `--subagent "a@b@c"`},
		{name: "a registered one renamed", f: Flags{Subagent: "reviewer", Name: "x"}, wantErr: "--name renames an inline sub-agent"},
		{name: "a command, renamed, with labels", f: Flags{Command: "echo hi", Name: "hi", Labels: []string{"team=ops", "k="}},
			want: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "hi", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", "echo hi"}},
				Labels: map[string]string{"team": "ops", "k": ""}}},
		{name: "a bad label", f: Flags{Command: "true", Labels: []string{"=x"}}, wantErr: `--label "=x": want KEY=VALUE`},
		{name: "inline input, compacted", f: Flags{Command: "true", Input: `{ "a" : 1 }`},
			want: wire.SubmitRequest{Subagent: sh("true"), Input: []byte(`{"a":1}`)}},
		{name: "input from a file", f: Flags{Command: "true", Input: "@" + input}, want: wire.SubmitRequest{Subagent: sh("true"), Input: []byte(`{"issue":42}`)}},
		{name: "input not an object", f: Flags{Command: "true", Input: "@" + notObject}, wantErr: "is not a JSON object (an array)"},
		{name: "input file missing", f: Flags{Command: "true", Input: "@" + dir + "/none.json"}, wantErr: "give the path of a JSON file after @"},
		{name: "timeout in seconds", f: Flags{Command: "true", Timeout: "600"}, want: wire.SubmitRequest{Subagent: sh("true"), TimeoutSeconds: 600}},
		{name: "timeout as a duration", f: Flags{Command: "true", Timeout: "1m30.5s"}, want: wire.SubmitRequest{Subagent: sh("true"), TimeoutSeconds: 91}},
		{name: "timeout too long", f: Flags{Command: "true", Timeout: "99999999"}, wantErr: "at most 604800 seconds"},
		{name: "timeout not a time", f: Flags{Command: "true", Timeout: "soon"}, wantErr: `--timeout "soon"`},
		{name: "a bad route", f: Flags{Command: "true", Route: "human=abc"}, wantErr: `--route "human=abc"`},
		{name: "a bad task id", f: Flags{Command: "true", TaskID: "a b"}, wantErr: `--task-id "a b"`},
		{name: "a file's defaults", f: Flags{SubagentFile: file},
			want: wire.SubmitRequest{Subagent: schemas.Subagent{Name: "tidy", Runtime: schemas.RuntimeExec, Command: []string{"true"}},
				Route: "memory,human=1h", TimeoutSeconds: 60}},
		{name: "a file with capabilities", f: Flags{SubagentFile: withCaps}, wantErr: "only a registered sub-agent resolves"},
	} {
		got, err := Build(tt.f)
		if tt.wantErr != "" {
			if !errors.As(err, new(exitcode.UsageError)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Build = %v; want a usage error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Build = %+v, %v\nwant %+v", tt.name, got, err, tt.want)
		}
	}
}

func TestSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"7d", now.Add(-7 * 24 * time.Hour)}, {"36h", now.Add(-36 * time.Hour)}, {"90m", now.Add(-90 * time.Minute)},
		{"2026-11-19T00:00:00Z", time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)},
	} {
		if got, err := Since(tt.in, now); err != nil || !got.Equal(tt.want) {
			t.Errorf("Since(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"0d", "-1h", "d", "last week"} {
		if _, err := Since(bad, now); err == nil {
			t.Errorf("Since(%q) took it", bad)
		}
	}
}

func TestRemember(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		on             bool
		scope, forTime string
		want           *wire.Remember
		wantErr        string
	}{
		{name: "off"},
		{name: "off with a scope", scope: "owner", wantErr: "--remember-scope and --remember-for go with --remember"},
		{name: "on", on: true, want: &wire.Remember{}},
		{name: "a scope for 7 days", on: true, scope: "owner", forTime: "7d", want: &wire.Remember{Scope: "owner", ExpiresInSeconds: 7 * 24 * 3600}},
		{name: "12 hours", on: true, forTime: "12h", want: &wire.Remember{ExpiresInSeconds: 12 * 3600}},
		{name: "too long", on: true, forTime: "999d", wantErr: `--remember-for "999d"`},
		{name: "not a time", on: true, forTime: "soon", wantErr: `--remember-for "soon"`},
	} {
		got, err := Remember(tt.on, tt.scope, tt.forTime)
		if tt.wantErr != "" {
			if !errors.As(err, new(exitcode.UsageError)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Remember = %v; want a usage error with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Remember = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}
