package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBusyboxScript runs .ci/busybox — what `make demo` and .ci/run run
// first — with stand-ins for id, ldd and apt-get on PATH (and nothing
// else), so it never installs anything here: as root with apt-get it
// installs busybox-static; otherwise it fails at once naming the command.
func TestBusyboxScript(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../../.ci/busybox")
	if err != nil {
		t.Fatal(err)
	}
	const (
		static  = "echo '\tnot a dynamic executable'; exit 1"
		dynamic = "echo '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6'"
	)
	for _, tt := range []struct {
		name    string
		present bool   // a file at the busybox path before the run
		uid     string // what id -u says
		ldd     string // the stand-in ldd's body
		apt     bool   // an apt-get on PATH (it "installs" the file)
		code    int
		want    string // in stderr
		calls   string // apt-get's arguments, one call per line
	}{
		{name: "present", present: true, uid: "1000", ldd: static, apt: true},
		{name: "installed as root", uid: "0", ldd: static, apt: true,
			want: "installing Debian's busybox-static", calls: "update -qq\ninstall -y -qq busybox-static\n"},
		{name: "dynamic as root", present: true, uid: "0", ldd: dynamic, apt: true, code: 1,
			want: "is not a static executable; installing", calls: "update -qq\ninstall -y -qq busybox-static\n"},
		{name: "not root", uid: "1000", ldd: static, apt: true, code: 1,
			want: "make demo: there is no BB, which the worker image needs as /bin/sh; run: sudo apt-get install busybox-static"},
		{name: "dynamic, not root", present: true, uid: "1000", ldd: dynamic, apt: true, code: 1,
			want: "BB is not a static executable, which the worker image needs as /bin/sh; run: sudo apt-get install busybox-static"},
		{name: "no apt-get", uid: "0", ldd: static, code: 1,
			want: "run: install a static busybox at BB (on Debian or Ubuntu: apt-get install busybox-static)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bb := filepath.Join(dir, "busybox")
			calls := filepath.Join(dir, "apt-calls")
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			tool := func(name, body string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tool("id", "echo "+tt.uid)
			tool("ldd", tt.ldd)
			if tt.apt {
				tool("apt-get", `echo "$*" >>`+calls+`; case "$*" in *install*) echo bb >`+bb+`;; esac`)
			}
			if tt.present {
				if err := os.WriteFile(bb, []byte("bb"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var stderr bytes.Buffer
			cmd := exec.Command("/bin/sh", script, "make demo")
			cmd.Env = []string{"PATH=" + bin, "AGORA_BUSYBOX=" + bb}
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(tt.want, "BB", bb)
			if code != tt.code || !strings.Contains(stderr.String(), want) {
				t.Errorf(".ci/busybox = %d, stderr %q; want %d, %q", code, stderr.String(), tt.code, want)
			}
			got, _ := os.ReadFile(calls)
			if string(got) != tt.calls {
				t.Errorf("apt-get was called with %q; want %q", got, tt.calls)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf(".ci/busybox took %s", d)
			}
		})
	}
}

// TestMakeDemoChecksBusyboxFirst: make demo runs .ci/busybox before it
// builds anything, so a missing busybox costs seconds, not a build.
func TestMakeDemoChecksBusyboxFirst(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var demo, busybox []string
	lines := strings.Split(string(mk), "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "demo:"); ok {
			demo = strings.Fields(strings.SplitN(rest, "##", 2)[0])
		}
		if strings.HasPrefix(l, "busybox:") && i+1 < len(lines) {
			busybox = strings.Fields(lines[i+1])
		}
	}
	if len(demo) < 2 || demo[0] != "busybox" || demo[1] != "build" {
		t.Errorf("Makefile: demo's prerequisites are %q; want busybox before build", demo)
	}
	if !strings.Contains(strings.Join(busybox, " "), "sh .ci/busybox") {
		t.Errorf("Makefile: the busybox target runs %q; want sh .ci/busybox", busybox)
	}
}
