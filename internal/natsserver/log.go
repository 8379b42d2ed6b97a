package natsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// levelTrace is the slog level at which nats-server's protocol traces are
// enabled; they are still written at slog.LevelDebug.
const levelTrace = slog.LevelDebug - 4

// logAdapter routes nats-server's log calls to slog: Noticef → Info,
// Warnf → Warn, Errorf and Fatalf → Error, Debugf and Tracef → Debug. It
// remembers the first Fatalf so that Start can fail instead of the process
// exiting (nats-server's own logger would exit).
type logAdapter struct {
	log *slog.Logger

	mu    sync.Mutex
	fatal error
}

var _ server.Logger = (*logAdapter)(nil)

func newLogAdapter(log *slog.Logger) *logAdapter { return &logAdapter{log: log} }

func (a *logAdapter) debug() bool {
	return a.log.Enabled(context.Background(), slog.LevelDebug)
}

func (a *logAdapter) trace() bool { return a.log.Enabled(context.Background(), levelTrace) }

func (a *logAdapter) logf(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if a.log.Enabled(ctx, level) {
		a.log.Log(ctx, level, fmt.Sprintf(format, v...))
	}
}

func (a *logAdapter) Noticef(format string, v ...any) { a.logf(slog.LevelInfo, format, v) }
func (a *logAdapter) Warnf(format string, v ...any)   { a.logf(slog.LevelWarn, format, v) }
func (a *logAdapter) Errorf(format string, v ...any)  { a.logf(slog.LevelError, format, v) }
func (a *logAdapter) Debugf(format string, v ...any)  { a.logf(slog.LevelDebug, format, v) }
func (a *logAdapter) Tracef(format string, v ...any)  { a.logf(slog.LevelDebug, format, v) }

func (a *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	a.log.Error(msg, "fatal", true)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fatal == nil {
		a.fatal = errors.New(msg)
	}
}

func (a *logAdapter) fatalErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fatal
}
