package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateHelp = flag.Bool("update-help", false, "rewrite testdata/help from the CLI's output")

// helpCases are the command lines whose output users read as help: the
// overview, every verb's and subcommand's -h, agora help VERB, and the
// shell completion of each verb's flags. Their output is pinned in
// testdata/help so a change to how flags are declared or parsed cannot
// change what users see without the golden files changing with it.
func helpCases() [][]string {
	cases := [][]string{
		{"--help"}, {"-h"}, {"help"}, {}, {"completion", "-h"}, {"help", "completion"},
	}
	for _, v := range verbs(nil) {
		cases = append(cases, []string{v.name, "-h"}, []string{"help", v.name}, []string{"__complete", v.name, "--"})
		for _, sub := range v.subs {
			cases = append(cases, []string{v.name, sub.name, "-h"}, []string{"help", v.name, sub.name}, []string{"__complete", v.name, sub.name, "--"})
		}
	}
	return cases
}

// hostCores is --max-cpus's default where a runner runs here: this host's
// core count, compared as CORES so the golden files hold on any machine.
var hostCores = regexp.MustCompile(`(?m)(--max-cpus .*else 16 \(default )[0-9.]+\)`)

func TestHelpGolden(t *testing.T) {
	t.Parallel()
	// A fixed environment: defaults that come from it (HOME) print the same
	// on every machine.
	environ := []string{"HOME=/home/user"}
	seen := map[string]bool{}
	for _, args := range helpCases() {
		name := strings.Join(append([]string{"agora"}, args...), "_")
		if seen[name] {
			t.Fatalf("two help cases named %s", name)
		}
		seen[name] = true
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, environ, &stdout, &stderr)
		got := []byte("$ agora " + strings.Join(args, " ") + "\n" +
			"exit " + string(rune('0'+code)) + "\n--- stdout\n" + hostCores.ReplaceAllString(stdout.String(), "${1}CORES)") +
			"--- stderr\n" + stderr.String())
		path := filepath.Join("testdata", "help", name+".golden")
		if *updateHelp {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("agora %s: %v (run go test -run TestHelpGolden -update-help)", strings.Join(args, " "), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("agora %s: the help changed:\n--- got\n%s\n--- want\n%s", strings.Join(args, " "), got, want)
		}
	}
}
