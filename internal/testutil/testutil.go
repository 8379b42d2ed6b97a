// Package testutil holds the test helpers every package may import: it
// imports only the standard library, so leaf packages (internal/proc,
// internal/compute) use it without the cycles internal/testenv would bring.
package testutil

import (
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
