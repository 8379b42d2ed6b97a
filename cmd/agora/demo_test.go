package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testenv"
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

// TestDemoAnsweredOnTheWeb: `agora demo --web` prints the task's page on
// the inbox and waits; the answer given on that page (a plain form post,
// as without JavaScript; the embedded stack has no tokens and serves
// loopback, so no sign-in) resumes the sub-agent, which finishes.
func TestDemoAnsweredOnTheWeb(t *testing.T) {
	t.Parallel()
	computetest.Docker(t)
	computetest.Busybox(t)
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)

	pr, pw := io.Pipe()
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"demo", "--web", "--worker", worker}, os.Environ(), pw, logs)
		pw.Close()
		done <- code
	}()
	var page string
	lines := bufio.NewScanner(pr)
	for page == "" && lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if _, u, ok := strings.Cut(lines.Text(), "or answer on the web inbox: "); ok {
			page = u
		}
	}
	if page == "" {
		t.Fatalf("the demo printed no inbox address:\n%s", out.String())
	}
	var rest bytes.Buffer
	readAll := make(chan struct{})
	go func() { // the rest of the output, until the demo ends
		defer close(readAll)
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
	}()
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Two config files") {
		t.Fatalf("GET %s: %d\n%s", page, resp.StatusCode, body)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	task := page[strings.LastIndex(page, "/")+1:]
	base := strings.TrimSuffix(page, "/tasks/"+task)
	form := url.Values{"csrf": {csrf[1]}, "task": {task}, "round": {"1"}, "option": {"config.json"}, "back": {"/tasks/" + task}}
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/answer", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer on the page: %d", resp.StatusCode)
	}
	code := <-done
	<-readAll
	out.Write(rest.Bytes())
	if code != 0 {
		t.Fatalf("agora demo --web = %d\n%s", code, out.String())
	}
	for _, want := range []string{`answered "config.json" by operator from the web`, `answer  "config.json" by operator via web`, "finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
