// Package testutil holds the small helpers every test may import: the one
// polling helper (Poll, and Eventually on top of it), free ports, a buffer
// safe for concurrent use. It imports only the standard library, so leaf
// packages (internal/proc, internal/compute) use it without cycles.
package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
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
	// Not t.Context(): that ends before t.Cleanup functions run, which may
	// wait too.
	if err := Poll(context.Background(), timeout, DefaultPollInterval, Cond(cond)); err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// DefaultPollInterval is how often Eventually asks.
const DefaultPollInterval = 20 * time.Millisecond

// errNotYet is what Cond's check returns while its condition is false.
var errNotYet = errors.New("condition not met")

// Cond turns a condition into a check for Poll.
func Cond(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}
}

// Permanent marks an error after which Poll stops asking at once (a
// process that exited will not start serving), as backoff.Permanent does.
func Permanent(err error) error { return &permanent{err} }

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Poll calls check every interval until it returns nil, and then returns
// nil. It returns check's last error, saying how long it waited, once
// timeout has passed or ctx is done, and at once an error wrapped in
// Permanent. It is the one polling loop of the tests: Eventually for a
// test that fails, Poll where the caller decides (a fault suite that
// reports, a helper that returns an error).
func Poll(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p, ok := err.(*permanent); ok {
			return p.err
		}
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return fmt.Errorf("timed out after %v: %w", timeout, err)
			}
			return fmt.Errorf("%w (last: %v)", context.Cause(ctx), err)
		case <-tick.C:
		}
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

// RunNumber names this test process in what it creates on a shared Docker
// engine (image tags, container and network names, runner ids, labels). A
// pid alone is not enough: suites running in other PID namespaces (other
// containers, CI runners) share the engine and can have the same pid, and
// one's clean-up would then remove the other's image. It is the pid with
// 20 random bits beside it, fixed for the life of the process.
func RunNumber() int { return runNumber() }

var runNumber = sync.OnceValue(func() int { return os.Getpid()<<20 | rand.IntN(1<<20) })
