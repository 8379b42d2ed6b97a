// Package claudecode is the runtime adapter for runtime "claude-code": it runs
// Claude Code non-interactively,
//
//	claude --print --output-format stream-json --verbose [--model M] --permission-mode MODE [--resume SESSION] [extra args]
//
// with the prompt rendered by RenderPrompt on stdin (so a large prompt never
// meets the argv size limit), in the workspace, under internal/proc's
// process-group supervision. Claude Code's stream-json stdout is passed
// through unchanged and read line by line as it arrives for the model and
// session (system/init message) and the turns, cost and tokens (result
// message), which become Result.Usage.
//
// A round resumes the previous round's conversation when the workspace
// holds its session (session.go): --resume with the answer alone
// (RenderResumeMessage) as the next message. docs/runtimes.md has the
// whole behaviour and where Claude Code documents each piece.
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
	"path/filepath"
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

// Run runs claude, found on the PATH of inv.Env, for inv.Spec. On a resumed
// round whose workspace holds the previous round's session (SessionDir), it
// continues that conversation — claude --resume <session id>, with
// RenderResumeMessage as the next message — and otherwise starts afresh
// with RenderPrompt (the question, answer and partial state included). A
// resume that claude refuses because it finds no such conversation is run
// again afresh, once. Whatever the outcome, the round's own session is then
// kept in SessionDir for the next round. The error is non-nil only when
// claude could not be started.
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
	cfgDir := configDir(env)
	if rel, err := filepath.Rel(inv.Workspace, cfgDir); cfgDir != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		log.Warn("Claude Code's config dir is inside the workspace: whatever it holds, credentials included, is in the workspace snapshot", "config_dir", cfgDir)
	}

	var resume string
	if inv.Spec.Resume != nil {
		id, err := restoreSession(inv.Workspace, cfgDir)
		if err != nil {
			log.Info("starting afresh with the prompt and resume.json: the previous round's Claude Code session cannot be resumed", "reason", err.Error())
		} else {
			resume = id
			log.Info("resuming the previous round's Claude Code session", "session_id", id)
		}
	}
	res, err := runClaude(ctx, path, inv, env, log, resume)
	if err == nil && res.noConversation && ctx.Err() == nil {
		log.Warn("claude found no conversation to resume; starting afresh with the prompt and resume.json", "session_id", resume)
		resume = ""
		res, err = runClaude(ctx, path, inv, env, log, "")
	}
	if err != nil {
		return res.Result, err
	}
	// The session to keep is the one the stream names: the resumed one, or
	// a new one should a Claude Code version give a resumed session a new
	// id.
	var id string
	if res.Usage != nil {
		res.Usage.Resumed = resume != ""
		id = res.Usage.SessionID
	}
	if err := saveSession(inv.Workspace, cfgDir, id, inv.Spec.EffectiveRound()); err != nil {
		log.Info("the next round cannot resume this conversation; it would start afresh", "reason", err.Error())
	}
	return res.Result, nil
}

// attempt is one run of claude.
type attempt struct {
	adapters.Result
	// noConversation reports that claude refused --resume: it found no
	// conversation with that session id.
	noConversation bool
}

// noConversationError is what Claude Code says when --resume names a
// session it cannot find (in the result message's errors, or on stderr).
const noConversationError = "No conversation found with session ID"

// runClaude runs claude once: resuming session resume, or afresh when it
// is "".
func runClaude(ctx context.Context, path string, inv adapters.Invocation, env []string, log *slog.Logger, resume string) (attempt, error) {
	stdout := newStreamWriter(inv.Stdout, log)
	stderr := newPhraseWatcher(inv.Stderr, noConversationError)
	stdin := RenderPrompt(inv.Spec)
	if resume != "" {
		stdin = RenderResumeMessage(inv.Spec)
	}
	exit, err := proc.Run(ctx, proc.Config{
		Path:   path,
		Args:   ResumeArgs(inv.Spec, env, resume),
		Dir:    inv.Workspace,
		Env:    env,
		Stdin:  strings.NewReader(stdin),
		Stdout: stdout,
		Stderr: stderr,
		Grace:  inv.Grace,
		Logger: log,
	})
	if err != nil {
		return attempt{Result: adapters.Result{Exit: exit}}, fmt.Errorf("claude-code runtime: %w", err)
	}
	stdout.flush()
	a := attempt{Result: adapters.Result{Exit: exit, Usage: stdout.Usage(), Text: stdout.Text()}}
	if resume != "" && !exit.Successful() {
		a.noConversation = stderr.Seen()
		for _, e := range stdout.Errors() {
			a.noConversation = a.noConversation || strings.Contains(e, noConversationError)
		}
	}
	return a, nil
}

// Args is claude's command line (after argv[0]) for spec, given the runtime
// environment env.
func Args(spec *schemas.DispatchSpec, env []string) []string {
	return ResumeArgs(spec, env, "")
}

// ResumeArgs is Args resuming session id (--resume id), or Args when id is
// "". The operator's extra arguments come last.
func ResumeArgs(spec *schemas.DispatchSpec, env []string, id string) []string {
	args := []string{"--print", "--output-format", "stream-json", "--verbose"}
	if spec.Subagent.Model != "" {
		args = append(args, "--model", spec.Subagent.Model)
	}
	mode := adapters.Getenv(env, EnvPermissionMode)
	if mode == "" {
		mode = DefaultPermissionMode
	}
	args = append(args, "--permission-mode", mode)
	if id != "" {
		args = append(args, "--resume", id)
	}
	return append(args, strings.Fields(adapters.Getenv(env, EnvExtraArgs))...)
}
