package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
)

// BenchmarkUnauthenticatedPosts measures agora serve's peak memory while
// 32 clients at once post 50 MB each to the sign-in page without a token
// (issue 20, finding 2: the form parser used to read 10 MB of each before
// anything was checked, 350–466 MiB in all). It reports serve's peak RSS
// before and after, from /proc/PID/status (VmHWM), as MiB:
//
//	go test -run '^$' -bench UnauthenticatedPosts -benchtime 1x ./cmd/agora
func BenchmarkUnauthenticatedPosts(b *testing.B) {
	agora := testenv.Binary(b, "github.com/agoradev/agora/cmd/agora", true)
	addr := testutil.FreeAddr(b)
	cmd := exec.Command(agora, "serve", "--no-runner", "--data-dir", b.TempDir(), "--listen", addr, "--token", "alice:wonderland")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	testutil.Eventually(b, time.Minute, "serve ready", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	before := peakRSS(b, cmd.Process.Pid)
	const clients, size = 32, 50 << 20
	for b.Loop() {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, base+"/ui/login", &zeroes{n: size})
				req.ContentLength = size
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Sec-Fetch-Site", "same-origin")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}
	after := peakRSS(b, cmd.Process.Pid)
	b.ReportMetric(float64(before)/(1<<20), "peak-MiB-idle")
	b.ReportMetric(float64(after)/(1<<20), "peak-MiB-after")
	b.ReportMetric(float64(after-before)/(1<<20), "MiB-added")
}

// zeroes is a body of n bytes that is never held in memory.
type zeroes struct{ n int64 }

func (z *zeroes) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(b *testing.B, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}
