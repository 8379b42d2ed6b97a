// Package claudecode is the runtime adapter for runtime "claude-code": it runs
// Claude Code non-interactively,
//
//	claude --print --output-format stream-json --verbose [--model M] --permission-mode MODE [extra args]
//
// with the prompt rendered by RenderPrompt on stdin (so a large prompt never
// meets the argv size limit), in the workspace, under internal/proc's
// process-group supervision. Claude Code's stream-json stdout is passed
// through unchanged and read line by line as it arrives for the model
// (system/init message) and the turns, cost and tokens (result message),
// which become Result.Usage.
//
// The runtime environment (Invocation.Env) tunes it:
//
//   - AGORA_CLAUDE_PERMISSION_MODE: the --permission-mode value, default
//     "bypassPermissions": the container is the sandbox, and nobody is there
//     to approve a tool call.
//   - AGORA_CLAUDE_ARGS: extra arguments appended to the command line, split
//     on white space (no quoting), e.g. "--max-turns 40".
//
// The real Anthropic API cannot be reached from where agora's tests run, so
// the tests run against a stand-in `claude` (package fakeclaude) that checks
// its arguments and speaks the stream-json format as Claude Code documents
// it: one JSON object per line, a system/init message first and a result
// message with num_turns, total_cost_usd and usage last.
//
// What it may import: docs/architecture.md.
package claudecode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/internal/proc"
	"github.com/agoradev/agora/schemas"
)

const (
	// SkillPath is where Claude Code discovers project skills.
	SkillPath = ".claude/skills/agora-needs-input/SKILL.md"
	// Executable is the name looked up on the runtime's PATH.
	Executable = "claude"
	// EnvPermissionMode overrides DefaultPermissionMode.
	EnvPermissionMode = schemas.EnvClaudePermissionMode
	// EnvExtraArgs holds extra arguments, split on white space.
	EnvExtraArgs = "AGORA_CLAUDE_ARGS"
	// DefaultPermissionMode lets Claude Code use its tools without asking:
	// a dispatch has no one to ask, and the container is the sandbox.
	DefaultPermissionMode = "bypassPermissions"
)

// Adapter runs dispatches with Claude Code. The zero value is ready to use.
type Adapter struct{}

var _ adapters.Adapter = (*Adapter)(nil)

// New returns a claude-code adapter.
func New() *Adapter { return &Adapter{} }

// Runtime returns schemas.RuntimeClaudeCode.
func (*Adapter) Runtime() schemas.Runtime { return schemas.RuntimeClaudeCode }

// SkillPath returns SkillPath.
func (*Adapter) SkillPath() string { return SkillPath }

// Run runs claude, found on the PATH of inv.Env, for inv.Spec. The error is
// non-nil only when claude could not be started.
func (*Adapter) Run(ctx context.Context, inv adapters.Invocation) (adapters.Result, error) {
	if inv.Spec == nil {
		return adapters.Result{}, errors.New("claude-code runtime: no dispatch spec")
	}
	env := adapters.MergeEnv(inv.Env, adapters.DispatchEnv(inv.Spec, inv.Workspace)...)
	path, err := adapters.LookPath(Executable, inv.Workspace, env)
	if err != nil {
		return adapters.Result{}, fmt.Errorf("claude-code runtime: claude not found on PATH (is Claude Code installed in the image?): %w", err)
	}
	log := inv.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("runtime", string(schemas.RuntimeClaudeCode))

	stdout := newStreamWriter(inv.Stdout, log)
	exit, err := proc.Run(ctx, proc.Config{
		Path:   path,
		Args:   Args(inv.Spec, env),
		Dir:    inv.Workspace,
		Env:    env,
		Stdin:  strings.NewReader(RenderPrompt(inv.Spec)),
		Stdout: stdout,
		Stderr: inv.Stderr,
		Grace:  inv.Grace,
		Logger: log,
	})
	if err != nil {
		return adapters.Result{Exit: exit}, fmt.Errorf("claude-code runtime: %w", err)
	}
	stdout.flush()
	return adapters.Result{Exit: exit, Usage: stdout.Usage(), Text: stdout.Text()}, nil
}

// Args is claude's command line (after argv[0]) for spec, given the runtime
// environment env.
func Args(spec *schemas.DispatchSpec, env []string) []string {
	args := []string{"--print", "--output-format", "stream-json", "--verbose"}
	if spec.Subagent.Model != "" {
		args = append(args, "--model", spec.Subagent.Model)
	}
	mode := adapters.Getenv(env, EnvPermissionMode)
	if mode == "" {
		mode = DefaultPermissionMode
	}
	args = append(args, "--permission-mode", mode)
	return append(args, strings.Fields(adapters.Getenv(env, EnvExtraArgs))...)
}
