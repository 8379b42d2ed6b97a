//go:build !linux

package proc

import (
	"context"
	"errors"
	"runtime"
)

// Run needs Linux (see the package comment); elsewhere it reports that it
// cannot start anything, so the rest of the module still builds.
func Run(ctx context.Context, cfg Config) (ExitResult, error) {
	err := errors.New("start process: process-group supervision is implemented only on linux, not " + runtime.GOOS)
	return ExitResult{Err: err}, err
}
