// Package testlog routes slog records to t.Log, for tests: one record, one
// t.Log line, without times (t.Log output is ordered already), and nothing
// after the test's cleanup, so a goroutine that outlives the test cannot
// make it panic. Imported only by tests and test helpers.
package testlog

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logger logs at Info and above to t.Log.
func Logger(t testing.TB) *slog.Logger { return LoggerLevel(t, slog.LevelInfo) }

// LoggerLevel logs at level and above to t.Log.
func LoggerLevel(t testing.TB, level slog.Leveler) *slog.Logger {
	t.Helper()
	w := &writer{t: t}
	t.Cleanup(w.stop) // registered first, so it runs after every later cleanup
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// writer turns each slog record (one Write call) into one t.Log line.
type writer struct {
	t       testing.TB
	mu      sync.Mutex
	stopped bool
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *writer) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}
