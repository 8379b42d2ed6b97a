package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/schemas"
)

// emitter prints every event as one JSON line on stdout and, when NATS is
// configured, publishes it with JetStream. The stdout line comes first: if
// NATS never acknowledges, the runner recovers the event from it.
type emitter struct {
	stdoutMu sync.Mutex
	stdout   io.Writer
	// key signs every stdout line when the runner gave one.
	key    []byte
	log    *slog.Logger
	window time.Duration

	// connect is started at once so dialling NATS overlaps the spec fetch.
	connected chan struct{}
	bus       *bus.Bus
	connErr   error

	// started is the in-flight publish of dispatch.started; the terminal
	// event waits for it so the two are stored in order.
	started chan struct{}
}

func newEmitter(ctx context.Context, cfg Config, creds []byte) *emitter {
	e := &emitter{stdout: cfg.Stdout, log: cfg.Logger, window: cfg.PublishWindow, connected: make(chan struct{})}
	if cfg.NATSURL == "" {
		close(e.connected)
		return e
	}
	go func() {
		defer close(e.connected)
		opts := bus.Options{
			Name:           "agora-worker " + cfg.DispatchID,
			Logger:         cfg.Logger,
			ConnectTimeout: cfg.ConnectTimeout,
		}
		if creds != nil {
			// A per-dispatch user: its acknowledgements arrive only on
			// its own inbox.
			opts.Auth.Creds = creds
			opts.InboxPrefix = bus.WorkerInboxPrefix(cfg.DispatchID)
		}
		e.bus, e.connErr = bus.Connect(ctx, cfg.NATSURL, opts)
		if e.connErr != nil {
			e.log.Warn("connect to NATS; events go to stdout only", "url", cfg.NATSURL, "error", e.connErr)
		}
	}()
	return e
}

// print writes ev as one line on stdout.
func (e *emitter) print(ev *schemas.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	if e.key != nil {
		line = schemas.SignEventLine(e.key, line)
	}
	line = append(line, '\n')
	e.stdoutMu.Lock()
	defer e.stdoutMu.Unlock()
	if _, err := e.stdout.Write(line); err != nil {
		return fmt.Errorf("print %s event: %w", ev.Kind, err)
	}
	return nil
}

// publish sends ev to NATS within the retry window. It returns nil when NATS
// is not configured.
func (e *emitter) publish(ctx context.Context, ev *schemas.Event) error {
	<-e.connected
	if e.bus == nil {
		return e.connErr
	}
	ack, err := e.bus.PublishEventRetry(ctx, *ev, e.window)
	if err != nil {
		return err
	}
	e.log.Debug("event acknowledged", "kind", ev.Kind, "stream", ack.Stream, "seq", ack.Sequence, "duplicate", ack.Duplicate)
	return nil
}

// emitStarted prints dispatch.started and publishes it in the background,
// so the runtime does not wait for the acknowledgement.
func (e *emitter) emitStarted(ctx context.Context, ev *schemas.Event) {
	if err := e.print(ev); err != nil {
		e.log.Error("print event", "error", err)
	}
	e.started = make(chan struct{})
	go func() {
		defer close(e.started)
		if err := e.publish(ctx, ev); err != nil {
			e.log.Error("publish event; the runner recovers terminal events from stdout", "kind", ev.Kind, "error", err)
		}
	}()
}

// emitTerminal prints the terminal event, then publishes it after
// dispatch.started has been dealt with. It returns the publish error.
func (e *emitter) emitTerminal(ctx context.Context, ev *schemas.Event) error {
	if err := e.print(ev); err != nil {
		e.log.Error("print event", "error", err)
	}
	if e.started != nil {
		<-e.started
	}
	if err := e.publish(ctx, ev); err != nil {
		e.log.Error("publish terminal event; the runner recovers it from stdout", "kind", ev.Kind, "error", err)
		return err
	}
	return nil
}

// maxPayload is the largest message NATS accepts on this connection.
func (e *emitter) maxPayload() int64 {
	<-e.connected
	if e.bus != nil {
		if n := e.bus.MaxPayload(); n > 0 {
			return n
		}
	}
	return 1 << 20 // NATS's default
}

func (e *emitter) close() {
	<-e.connected
	if e.bus != nil {
		e.bus.Close()
	}
}
