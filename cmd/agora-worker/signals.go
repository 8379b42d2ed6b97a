package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// cancelOnSignal returns a context that ends when the dispatch is
// cancelled: on SIGTERM or SIGINT. With cancelFile set (AGORA_CANCEL_FILE,
// given by a runner) a signal counts only while that file exists: the
// runner creates it, in a directory the sub-agent cannot write, before it
// stops the container for a cancel. Any other SIGTERM — a sub-agent's
// `kill -TERM 1`, or the runner's backstop stop of a worker past its
// timeout — is noted on stderr and ignored. Without cancelFile (the worker
// on its own, e.g. in a CI job) every signal is a cancel. Later signals
// after a cancel change nothing: the worker is already stopping the
// runtime's group within its grace. stop releases the signals.
func cancelOnSignal(parent context.Context, cancelFile string, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if cancelFile == "" || cancelMarked(cancelFile) {
					cancel()
					continue
				}
				fmt.Fprintf(stderr, "agora-worker: %s ignored: it is not a cancel, the runner's marker %s does not exist (a signal from inside the container does not end the dispatch)\n", signalName(sig), cancelFile)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// cancelMarked reports whether the runner's cancel marker exists.
func cancelMarked(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
