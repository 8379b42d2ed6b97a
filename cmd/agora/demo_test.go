package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/schemas"
)

// TestDemoChecksBusyboxFirst: without a static busybox the demo fails at
// once, before any build or container, and names the command to run.
func TestDemoChecksBusyboxFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notELF := filepath.Join(dir, "busybox")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bb := range []string{filepath.Join(dir, "missing"), notELF} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run(context.Background(), []string{"demo", "--busybox", bb, "--data-dir", t.TempDir()}, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "apt-get install busybox-static") ||
			!strings.Contains(stderr.String(), bb) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("agora demo --busybox %s = %d, stderr %q; want 2 and one line naming it and apt-get install busybox-static", bb, code, stderr.String())
		}
		if strings.Contains(stdout.String(), "starting the embedded stack") {
			t.Errorf("agora demo --busybox %s started the stack before checking: %q", bb, stdout.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("agora demo --busybox %s took %s to fail", bb, d)
		}
	}
}

// TestDemoAnswerWithoutTerminal: `agora demo </dev/null` — stdin a
// character device that is no terminal — takes the question's default, as
// CI=true does; an empty pipe does too.
func TestDemoAnswerWithoutTerminal(t *testing.T) {
	t.Parallel()
	def := "config.yaml"
	q := &schemas.NeedsInput{Question: "Which one should stay?", Options: []string{"config.yaml", "config.json"}, Default: &def}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for name, stdin := range map[string]io.Reader{"/dev/null": devNull, "an empty reader": strings.NewReader("")} {
		var out bytes.Buffer
		answer, by, err := demoAnswer(q, "", nil, stdin, &out)
		if err != nil || answer != def || !strings.Contains(by, "default") {
			t.Errorf("demoAnswer with stdin %s = %q, %q, %v; want the default %q", name, answer, by, err, def)
		}
	}
	noDefault := &schemas.NeedsInput{Question: "A or B?", Options: []string{"A", "B"}}
	if _, _, err := demoAnswer(noDefault, "", nil, devNull, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--answer") {
		t.Errorf("demoAnswer without a terminal or a default = %v; want an error naming --answer", err)
	}
}
