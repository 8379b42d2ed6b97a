//go:build !linux

package proc

import (
	"context"
	"errors"
	"runtime"

	"github.com/agoradev/agora/internal/exit"
)

// Run needs Linux (see the package comment); elsewhere it reports that it
// cannot start anything, so the rest of the module still builds.
func Run(ctx context.Context, cfg Config) (exit.Result, error) {
	err := errors.New("start process: process-group supervision is implemented only on linux, not " + runtime.GOOS)
	return exit.Result{Err: err}, err
}
