package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agoradev/agora/internal/proc"
	"github.com/agoradev/agora/schemas"
)

var errSetupTimeout = errors.New("setup timeout")

// runSetup runs <ws>/agora-setup.sh with /bin/sh when the workspace has one,
// bounded by timeout. A failure or a timeout is worker-failed; a cancel
// (ctx done) is reported as such by the caller.
func runSetup(ctx context.Context, ws string, env []string, timeout, grace time.Duration, out io.Writer) error {
	script := filepath.Join(ws, schemas.SetupScript)
	fi, err := os.Lstat(script)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("inspect %s: %w", schemas.SetupScript, err)}
	}
	if !fi.Mode().IsRegular() {
		return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%s is not a regular file", schemas.SetupScript)}
	}
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, errSetupTimeout)
	defer cancel()
	res, err := proc.Run(sctx, proc.Config{
		Path: "/bin/sh", Args: []string{schemas.SetupScript}, Dir: ws, Env: env,
		Stdout: out, Stderr: out, Grace: grace,
	})
	if err != nil {
		return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("start %s: %w", schemas.SetupScript, err)}
	}
	if ctx.Err() != nil {
		return nil // cancelled: the caller reports dispatch.cancelled
	}
	if errors.Is(context.Cause(sctx), errSetupTimeout) {
		return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%s did not finish within %s ("+schemas.EnvSetupTimeoutSeconds+")", schemas.SetupScript, timeout)}
	}
	if !res.Successful() {
		return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("%s exited with code %d", schemas.SetupScript, res.ExitCode)}
	}
	return nil
}
