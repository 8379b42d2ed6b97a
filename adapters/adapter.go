// Package adapters defines the runtime-adapter seam: how the worker hands one
// dispatch to a runtime (a plain command, Claude Code, …) and learns how it
// ended. Implementations live in sub-packages (exec, claudecode); this package
// holds the interface and the pieces they share. What it may import:
// docs/architecture.md.
package adapters

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/schemas"
)

// Adapter runs one dispatch's runtime to completion.
type Adapter interface {
	// Runtime is the spec's subagent.runtime value this adapter serves.
	Runtime() schemas.Runtime
	// SkillPath is where, relative to the workspace, the needs-input SKILL is
	// overlaid so this runtime finds it.
	SkillPath() string
	// Run starts the runtime in inv.Workspace and waits for it. Cancelling ctx
	// stops the runtime's whole process group (SIGTERM, then SIGKILL after
	// inv.Grace). The returned error is non-nil only when the runtime could
	// not be started at all (missing executable, bad command); how a started
	// runtime ended is in Result.Exit.
	Run(ctx context.Context, inv Invocation) (Result, error)
}

// Invocation is what the worker hands an adapter.
type Invocation struct {
	Spec *schemas.DispatchSpec
	// Workspace is the absolute workspace directory; the runtime's working dir.
	Workspace string
	// Env is the runtime's base environment, already allow-listed by the
	// worker and extended with env bundles. Adapters add the AGORA_* dispatch
	// variables (see DispatchEnv) and nothing from their own process.
	Env []string
	// Stdout and Stderr receive the runtime's output. They are never the
	// worker's stdout, which carries only lifecycle events.
	Stdout, Stderr io.Writer
	// Grace is how long the process group has between SIGTERM and SIGKILL.
	Grace  time.Duration
	Logger *slog.Logger
}

// Result is how a started runtime ended.
type Result struct {
	Exit exit.Result
	// Usage is what the runtime reported about its consumption, when it did.
	Usage *schemas.Usage
	// Text is the runtime's own final answer, when it gives one (Claude
	// Code's result message): the round's result when the sub-agent wrote
	// no .agora/result.json.
	Text *string
}
