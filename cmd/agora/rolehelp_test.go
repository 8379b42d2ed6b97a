package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateRoleHelp = flag.Bool("update-role-help", false, "rewrite testdata/rolehelp from the current help output")

// TestRoleVerbsHelpUnchanged: the role verbs' help and completion, as users
// see them, match testdata/rolehelp (captured before their flags moved into
// cmd/agora/internal/roleflags). The default of --max-cpus where a runner
// runs is this host's core count, so it is compared as CORES.
func TestRoleVerbsHelpUnchanged(t *testing.T) {
	t.Parallel()
	cores := regexp.MustCompile(`(?m)(--max-cpus .*else 16 \(default )[0-9.]+\)`)
	for _, args := range [][]string{
		{"serve", "-h"}, {"runner", "-h"}, {"orchestrator", "-h"}, {"demo", "-h"},
		{"health", "-h"}, {"image", "build", "-h"}, {"image", "-h"}, {"nats-auth", "init", "-h"}, {"nats-auth", "-h"},
		{"help", "serve"}, {"help", "runner"},
		{"__complete", "serve", "--"}, {"__complete", "runner", "--"}, {"__complete", "orchestrator", "--"},
		{"__complete", "demo", "--"}, {"__complete", "runner", "--ecs-"},
	} {
		name := strings.ReplaceAll(strings.Join(args, "_"), "-", "")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, []string{"HOME=" + t.TempDir()}, &stdout, &stderr)
			got := stdout.String()
			if slices.Contains(args, "serve") || slices.Contains(args, "runner") { // a runner here: the host's cores
				got = cores.ReplaceAllString(got, "${1}CORES)")
			}
			got += "\nexit " + string(rune('0'+code)) + "\n"
			path := filepath.Join("testdata", "rolehelp", name+".txt")
			if *updateRoleHelp {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read the golden help: %v (go test -run TestRoleVerbsHelpUnchanged -update-role-help writes it)", err)
			}
			if got != string(want) {
				t.Errorf("agora %s printed, against %s:\n%s\nwant:\n%s", strings.Join(args, " "), path, got, want)
			}
		})
	}
}
