// Package testutil holds the test helpers every package may import: it
// imports only the standard library, so leaf packages (internal/proc,
// internal/compute) use it without the cycles internal/testenv would bring.
package testutil

import (
	"bytes"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Eventually calls cond every 20 ms until it returns true, failing the test
// with what once timeout has passed: tests wait on a condition, never on a
// fixed sleep.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// FreePort returns a loopback TCP port nothing listens on, for a process a
// test starts (and may kill and start again on the same port). It is drawn
// from below the kernel's ephemeral range (32768–60999 on Linux), where
// neither a listener on port 0 nor an outgoing connection of any process
// is ever given a port: a port handed out by the kernel is free only until
// the next connection anywhere on the host takes it, which made restarts
// on "the same free port" fail with "address already in use" under load.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 50 {
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken: another test's, or a service of the host
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return port
	}
	t.Fatal("no free loopback port in 10000–32767 after 50 tries")
	return 0
}

// FreeAddr is FreePort as 127.0.0.1:PORT.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// Buffer is a bytes.Buffer that a writer (a logger, a process's output)
// and the test reading it may use at once.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
