package testutil_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
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

func TestPoll(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		check     func(calls int) error
		wantErr   error  // errors.Is the result; nil: success
		wantText  string // in the result's text
		wantCalls int    // exactly; 0: at least 2
	}{
		{name: "third call succeeds", ctx: context.Background(), check: func(n int) error {
			if n < 3 {
				return boom
			}
			return nil
		}, wantCalls: 3},
		{name: "times out with the last error", ctx: context.Background(), check: func(int) error { return boom },
			wantErr: boom, wantText: "timed out after 100ms: boom"},
		{name: "permanent stops at once", ctx: context.Background(), check: func(int) error { return testutil.Permanent(boom) },
			wantErr: boom, wantText: "boom", wantCalls: 1},
		{name: "ctx ends", ctx: cancelled, check: func(int) error { return boom },
			wantErr: context.Canceled, wantText: "last: boom", wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := testutil.Poll(tt.ctx, 100*time.Millisecond, time.Millisecond, func() error { calls++; return tt.check(calls) })
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Poll = %v, want nil", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("Poll = %v, want an error that is %v", err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), tt.wantText):
				t.Errorf("Poll = %q, want it to contain %q", err, tt.wantText)
			}
			if tt.wantCalls > 0 && calls != tt.wantCalls || tt.wantCalls == 0 && calls < 2 {
				t.Errorf("check called %d times, want %d (0: at least 2)", calls, tt.wantCalls)
			}
		})
	}
}

func TestRunNumber(t *testing.T) {
	n := testutil.RunNumber()
	if n != testutil.RunNumber() {
		t.Fatal("RunNumber changed within one process")
	}
	if n>>20 != os.Getpid() {
		t.Fatalf("RunNumber %d does not carry the pid %d", n, os.Getpid())
	}
}
