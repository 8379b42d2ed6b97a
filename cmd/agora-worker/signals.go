package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/worker"
)

// cancelMarker is where a runner marks the cancels it asks for: a file it
// mounts (AGORA_CANCEL_FILE) or, where it can mount nothing, an object in
// storage (AGORA_CANCEL_KEY). The zero value marks nothing: every signal is
// a cancel.
type cancelMarker struct {
	// where names the marker in the note on an ignored signal.
	where string
	// marked reports whether the marker exists now.
	marked func(context.Context) (bool, error)
}

// cancelMarkerFromEnv is the marker the runner named in environ.
func cancelMarkerFromEnv(environ []string) cancelMarker {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	switch {
	case env[schemas.EnvCancelFile] != "":
		path := env[schemas.EnvCancelFile]
		return cancelMarker{where: path, marked: func(context.Context) (bool, error) {
			_, err := os.Stat(path)
			return err == nil, nil
		}}
	case env[schemas.EnvCancelKey] != "":
		// The key's value stays out of stderr: it is under the exchange
		// prefix, which only the runner and this task know.
		return cancelMarker{where: "(" + schemas.EnvCancelKey + " in storage)",
			marked: worker.CancelCheck(env[schemas.EnvStorageURI], env[schemas.EnvCancelKey])}
	}
	return cancelMarker{}
}

// cancelOnSignal returns a context that ends when the dispatch is
// cancelled: on SIGTERM or SIGINT. With a marker (given by a runner) a
// signal counts only while the marker exists: the runner creates it, where
// the sub-agent cannot, before it stops the container for a cancel. Any
// other SIGTERM — a sub-agent's `kill -TERM 1`, or the runner's backstop
// stop of a worker past its timeout — is noted on stderr and ignored, as is
// one whose marker could not be looked up (the runner remembers its own
// cancels). Without a marker (the worker on its own, e.g. in a CI job)
// every signal is a cancel. Later signals after a cancel change nothing:
// the worker is already stopping the runtime's group within its grace.
// stop releases the signals.
func cancelOnSignal(parent context.Context, marker cancelMarker, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if marker.marked == nil {
					cancel()
					continue
				}
				ok, err := marker.marked(ctx)
				switch {
				case ok:
					cancel()
				case err != nil:
					fmt.Fprintf(stderr, "agora-worker: %s ignored: the runner's cancel marker could not be looked up: %v\n", signalName(sig), err)
				default:
					fmt.Fprintf(stderr, "agora-worker: %s ignored: it is not a cancel, the runner's marker %s does not exist (a signal from inside the container does not end the dispatch)\n", signalName(sig), marker.where)
				}
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

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
