package answer_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/orchestrator/answer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testLogger routes logs to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// outcome names what Ask returned, for table tests.
func outcome(err error) string {
	switch {
	case err == nil:
		return "answered"
	case errors.Is(err, answer.ErrDecline):
		return "declined"
	case errors.Is(err, answer.ErrPending):
		return "pending"
	}
	return "error"
}
