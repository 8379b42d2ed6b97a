package exitcode

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
)

// TestHandleSignals: the first signal cancels run's context with the
// signal as its cause; the same signal again within SameSignalWindow is that
// signal delivered twice (as timeout(1) does: to the command, then to its
// process group) and changes nothing; another signal, or the same one
// later, exits at once with 128 + its number.
func TestHandleSignals(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		sigs   []os.Signal
		after  []time.Duration // since the first signal, when each later one comes
		want   int             // the exit code; 0: no exit
		stderr string
	}{
		{name: "one TERM", sigs: []os.Signal{syscall.SIGTERM}},
		{name: "TERM twice at once, as timeout(1) sends it", sigs: []os.Signal{syscall.SIGTERM, syscall.SIGTERM}, after: []time.Duration{time.Millisecond}},
		{name: "TERM twice, then INT", sigs: []os.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGINT}, after: []time.Duration{time.Millisecond, 2 * time.Millisecond},
			want: 130, stderr: "agora: second signal (interrupt): exiting now without waiting\n"},
		{name: "INT, then TERM at once", sigs: []os.Signal{syscall.SIGINT, syscall.SIGTERM}, after: []time.Duration{time.Millisecond},
			want: 143, stderr: "second signal (terminated)"},
		{name: "INT twice, a second apart", sigs: []os.Signal{syscall.SIGINT, syscall.SIGINT}, after: []time.Duration{time.Second},
			want: 130, stderr: "second signal (interrupt)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sigs := make(chan os.Signal) // unbuffered: a send returns once the handler took it
			exited := make(chan int, 1)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var clock atomic.Int64
			clock.Store(t0.UnixNano())
			var stderr testutil.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				HandleSignals(sigs, cancel, &stderr, func(code int) { exited <- code }, func() time.Time { return time.Unix(0, clock.Load()) })
			}()
			sigs <- tt.sigs[0]
			<-ctx.Done()
			if sig, ok := SignalOf(ctx); !ok || sig != tt.sigs[0] {
				t.Errorf("SignalOf(run's context) = %v, %v; want %v", sig, ok, tt.sigs[0])
			}
			for i, sig := range tt.sigs[1:] {
				clock.Store(t0.Add(tt.after[i]).UnixNano())
				sigs <- sig
			}
			if tt.want == 0 {
				close(sigs)
				<-done
				if len(exited) > 0 || stderr.String() != "" {
					t.Errorf("exited with %d (%q); want no exit", <-exited, stderr.String())
				}
				return
			}
			<-done
			if code := <-exited; code != tt.want || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tt.want, tt.stderr)
			}
		})
	}
}
