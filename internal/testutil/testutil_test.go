package testutil_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
)

func TestEventuallyHolds(t *testing.T) {
	t.Parallel()
	n := 0
	testutil.Eventually(t, time.Second, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

func TestEventuallyTimesOut(t *testing.T) {
	t.Parallel()
	ft := &fatalT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testutil.Eventually(ft, 50*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if ft.msg != "timed out after 50ms waiting for never" {
		t.Errorf("Eventually failed with %q, want the timeout message", ft.msg)
	}
}

// fatalT records Fatalf and ends the goroutine as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
