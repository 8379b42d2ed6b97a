package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.RemovingBinaries(m))
}

// TestFlagErrors: every mistake on the command line is one line on stderr
// and exit code 2, reported before anything is contacted (none of these
// needs Docker or NATS); a missing worker binary is a failure (1) that says
// to run make build.
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	home := []string{"HOME=" + t.TempDir()}
	nats := []string{"runner", "--nats", "nats://127.0.0.1:4222", "--data-dir", dataDir}
	tests := []struct {
		name        string
		args        []string
		env         []string // default: home
		code        int
		out, errOut string
	}{
		{name: "nats-auth without subcommand", args: []string{"nats-auth"}, code: 2, errOut: "agora nats-auth: want a subcommand: init DIR"},
		{name: "nats-auth init without DIR", args: []string{"nats-auth", "init"}, code: 2, errOut: "want one DIR"},
		{name: "nats-auth init bad runner", args: []string{"nats-auth", "init", dataDir, "--runner", "a b"}, code: 2,
			errOut: `agora nats-auth init: --runner: runner id "a b" must not contain '*', '>' or white space`},
		{name: "nats-auth init bad size", args: []string{"nats-auth", "init", dataDir, "--max-disk", "lots"}, code: 2,
			errOut: `--max-disk "lots": want a positive size`},
		{name: "image without subcommand", args: []string{"image"}, code: 2, errOut: "agora image: want a subcommand: build"},
		{name: "image unknown subcommand", args: []string{"image", "push"}, code: 2, errOut: `unknown subcommand "push"`},
		{name: "image build unknown flag", args: []string{"image", "build", "--pull"}, code: 2,
			errOut: "agora image build: flag provided but not defined: -pull; run 'agora image build -h' for the flags"},
		{name: "image build argument", args: []string{"image", "build", "extra"}, code: 2, errOut: `unexpected argument "extra"`},
		{name: "image build help", args: []string{"image", "build", "-h"}, out: "-no-busybox"},
		{name: "image build missing --worker", args: []string{"image", "build", "--worker", "/nonexistent/agora-worker"}, code: 1,
			errOut: "agora image build: no worker binary at /nonexistent/agora-worker (--worker PATH)"},
		{name: "image build worker is a directory", args: []string{"image", "build", "--worker", dataDir}, code: 1, errOut: "is a directory"},
		// The test binary has no agora-worker next to it, as an agora built alone would not.
		{name: "image build default worker missing", args: []string{"image", "build"}, code: 1, errOut: "run 'make build'"},
		{name: "runner without --nats", args: []string{"runner"}, code: 2, errOut: "agora runner: --nats is required"},
		{name: "runner help", args: []string{"runner", "--help"}, out: "-worker-nats URL"},
		{name: "runner zero slots", args: append(nats, "--slots", "0"), code: 2, errOut: "agora runner: --slots must be at least 1\n"},
		{name: "runner negative slots", args: append(nats, "--slots=-3"), code: 2, errOut: "--slots must be at least 1"},
		{name: "runner slots not a number", args: append(nats, "--slots", "many"), code: 2, errOut: `invalid value "many" for flag -slots`},
		{name: "runner short grace", args: append(nats, "--grace", "500ms"), code: 2, errOut: "--grace must be at least 1s"},
		{name: "runner grace without unit", args: append(nats, "--grace", "10"), code: 2, errOut: `invalid value "10" for flag -grace`},
		{name: "runner zero log cap", args: append(nats, "--log-cap", "0"), code: 2, errOut: "--log-cap must be at least 1"},
		{name: "runner storage scheme", args: append(nats, "--storage", "ftp://host/dir"), code: 2, errOut: `--storage "ftp://host/dir": want file:///abs/dir or s3://bucket/prefix`},
		{name: "runner storage without scheme", args: append(nats, "--storage", "some/dir"), code: 2, errOut: "want file:///abs/dir"},
		{name: "runner argument", args: append(nats, "now"), code: 2, errOut: `agora runner: unexpected argument "now"`},
		{name: "runner without HOME or --data-dir", args: []string{"runner", "--nats", "nats://127.0.0.1:4222"}, env: []string{},
			code: 2, errOut: "HOME is not set, so there is no default --data-dir; pass --data-dir DIR"},
		{name: "runner default worker missing", args: nats, code: 1, errOut: "run 'make build'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := home
			if tt.env != nil {
				env = tt.env
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, env, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.errOut) {
				t.Errorf("agora %q = %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.out, tt.errOut)
			}
			if tt.code != 0 && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("agora %q wrote %q to stderr; want one line", tt.args, stderr.String())
			}
		})
	}
}

// TestRunnerFlagDefaults: --data-dir defaults under HOME and is made
// absolute, and --storage defaults to file storage inside it.
func TestRunnerFlagDefaults(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	f, err := parseRunnerFlags([]string{"--nats", "nats://127.0.0.1:4222"}, []string{"HOME=" + home}, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("parseRunnerFlags: %v", err)
	}
	wantDir := filepath.Join(home, ".agora", "runner")
	if f.DataDir != wantDir || f.StorageURI != "file://"+wantDir+"/storage" || f.Slots != 4 || f.Image != "" {
		t.Errorf("parseRunnerFlags defaults = %+v; want data dir %s, storage file://%s/storage, 4 slots, no image", f, wantDir, wantDir)
	}
	f, err = parseRunnerFlags([]string{"--nats", "x", "--data-dir", "rel"}, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("parseRunnerFlags(--data-dir rel): %v", err)
	}
	if !filepath.IsAbs(f.DataDir) || filepath.Base(f.DataDir) != "rel" {
		t.Errorf("parseRunnerFlags(--data-dir rel).dataDir = %q; want it absolute", f.DataDir)
	}
}
