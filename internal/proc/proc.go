package proc

import (
	"io"
	"log/slog"
	"time"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultGrace     = 10 * time.Second
	DefaultWaitDelay = 2 * time.Second
)

// Config describes the process Run starts.
type Config struct {
	// Path is the executable. A name without a slash is looked up in this
	// process's PATH (exec.Command semantics); callers that must honour
	// another environment's PATH resolve it first.
	Path string
	// Args are the arguments after argv[0].
	Args []string
	// Dir is the working directory; empty means this process's.
	Dir string
	// Env is the complete environment; nil means this process's (as in
	// exec.Cmd), so callers that must not leak it pass a non-nil slice.
	Env []string
	// Stdin, Stdout and Stderr are connected as in exec.Cmd; nil means the
	// null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Grace is how long the group has between SIGTERM and SIGKILL when the
	// context is done. Zero means DefaultGrace.
	Grace time.Duration
	// WaitDelay bounds how long Run waits for the output pipes to close once
	// the leader has exited (or has been killed), in case a process outside
	// the group still holds them. Zero means DefaultWaitDelay.
	WaitDelay time.Duration
	// Logger receives the supervision steps; nil discards them.
	Logger *slog.Logger
}

// WithDefaults returns c with the zero fields that have defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
