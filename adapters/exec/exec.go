// Package exec is the runtime adapter for runtime "exec": it runs the
// sub-agent's command (spec.subagent.command) in the workspace, with the
// runtime environment plus the AGORA_* dispatch variables, under
// internal/proc's process-group supervision. The command finds its input,
// the resume file and the sentinel path through those variables.
//
// What it may import: docs/architecture.md.
package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/internal/proc"
	"github.com/agoradev/agora/schemas"
)

// SkillPath is where the needs-input SKILL is overlaid for plain commands:
// there is no convention to follow, so it sits with agora's other files.
const SkillPath = ".agora/skills/agora-needs-input/SKILL.md"

// Adapter runs a dispatch's command. The zero value is ready to use.
type Adapter struct{}

var _ adapters.Adapter = (*Adapter)(nil)

// New returns an exec adapter.
func New() *Adapter { return &Adapter{} }

// Runtime returns schemas.RuntimeExec.
func (*Adapter) Runtime() schemas.Runtime { return schemas.RuntimeExec }

// SkillPath returns SkillPath.
func (*Adapter) SkillPath() string { return SkillPath }

// Run runs spec.subagent.command in inv.Workspace. argv[0] is looked up in
// the PATH of inv.Env — the runtime's environment, which may differ from the
// worker's — and a relative path with a slash is taken relative to the
// workspace. The error is non-nil only when the command could not be
// started.
func (*Adapter) Run(ctx context.Context, inv adapters.Invocation) (adapters.Result, error) {
	if inv.Spec == nil {
		return adapters.Result{}, errors.New("exec runtime: no dispatch spec")
	}
	argv := inv.Spec.Subagent.Command
	if len(argv) == 0 {
		return adapters.Result{}, errors.New("exec runtime: subagent.command is empty")
	}
	env := adapters.MergeEnv(inv.Env, adapters.DispatchEnv(inv.Spec, inv.Workspace)...)
	path, err := adapters.LookPath(argv[0], inv.Workspace, env)
	if err != nil {
		return adapters.Result{}, fmt.Errorf("exec runtime: command %q not found: %w", argv[0], err)
	}
	log := inv.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	exit, err := proc.Run(ctx, proc.Config{
		Path:   path,
		Args:   argv[1:],
		Dir:    inv.Workspace,
		Env:    env,
		Stdout: inv.Stdout,
		Stderr: inv.Stderr,
		Grace:  inv.Grace,
		Logger: log.With("runtime", string(schemas.RuntimeExec)),
	})
	if err != nil {
		return adapters.Result{Exit: exit}, fmt.Errorf("exec runtime: %w", err)
	}
	return adapters.Result{Exit: exit}, nil
}
