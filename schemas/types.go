package schemas

import (
	"encoding/json"
	"time"
)

// Runtime names a runtime adapter.
type Runtime string

const (
	// RuntimeExec runs the sub-agent's command.
	RuntimeExec Runtime = "exec"
	// RuntimeClaudeCode runs `claude --print` with the rendered prompt.
	RuntimeClaudeCode Runtime = "claude-code"
)

// DispatchSpec is everything the worker needs to run one dispatch
// (dispatch-spec.schema.json).
type DispatchSpec struct {
	DispatchID     string          `json:"dispatch_id"`
	TaskID         string          `json:"task_id,omitempty"`
	Round          int             `json:"round,omitempty"`
	Subagent       Subagent        `json:"subagent"`
	Input          json.RawMessage `json:"input,omitempty"`
	Resume         *Resume         `json:"resume,omitempty"`
	Capabilities   []BundleRef     `json:"capabilities,omitempty"`
	Env            []BundleRef     `json:"env,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
}

// EffectiveRound is the spec's round, 1 when it gave none.
func (s *DispatchSpec) EffectiveRound() int {
	if s.Round < 1 {
		return 1
	}
	return s.Round
}

// Timeout is the dispatch timeout; zero means the default. A spec that
// skipped validation never gets more than the contract's MaxTimeoutSeconds
// (and never a duration that wrapped around).
func (s *DispatchSpec) Timeout(def time.Duration) time.Duration {
	if s.TimeoutSeconds > 0 {
		return time.Duration(min(s.TimeoutSeconds, MaxTimeoutSeconds)) * time.Second
	}
	return def
}

// Subagent is the agent (or command) a dispatch runs.
type Subagent struct {
	Name    string   `json:"name"`
	Runtime Runtime  `json:"runtime"`
	Version string   `json:"version,omitempty"`
	Command []string `json:"command,omitempty"`
	Prompt  string   `json:"prompt,omitempty"`
	Model   string   `json:"model,omitempty"`
	// Outputs are globs of the workspace files a finished round hands back
	// as artifacts (docs/contract.md, "The result").
	Outputs []string `json:"outputs,omitempty"`
}

// Resume is what a resumed round (2 and later) carries from the rounds before.
type Resume struct {
	Question        string          `json:"question"`
	Answer          string          `json:"answer"`
	Options         []string        `json:"options,omitempty"`
	Context         string          `json:"context,omitempty"`
	PartialState    json.RawMessage `json:"partial_state,omitempty"`
	PartialStateRef *ObjectRef      `json:"partial_state_ref,omitempty"`
	History         []HistoryEntry  `json:"history,omitempty"`
}

// HistoryEntry is one earlier question and its answer.
type HistoryEntry struct {
	Round    int    `json:"round"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// BundleRef names a capability or env bundle by content hash.
type BundleRef struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	URI     string `json:"uri,omitempty"`
	SHA256  string `json:"sha256"`
}

// ObjectRef points at an object in storage and pins its content.
type ObjectRef struct {
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// NeedsInput is the sentinel a sub-agent writes to ask a question
// (needs-input.schema.json), and the payload of dispatch.needs_input.
type NeedsInput struct {
	Question        string          `json:"question"`
	Options         []string        `json:"options,omitempty"`
	Context         string          `json:"context,omitempty"`
	Default         *string         `json:"default,omitempty"`
	PartialState    json.RawMessage `json:"partial_state,omitempty"`
	PartialStateRef *ObjectRef      `json:"partial_state_ref,omitempty"`
}

// Event is one lifecycle event (event.schema.json).
type Event struct {
	Kind       EventKind   `json:"kind"`
	DispatchID string      `json:"dispatch_id"`
	TaskID     string      `json:"task_id,omitempty"`
	Round      int         `json:"round,omitempty"`
	Time       time.Time   `json:"time"`
	Subagent   string      `json:"subagent,omitempty"`
	Runtime    Runtime     `json:"runtime,omitempty"`
	ExitCode   *int        `json:"exit_code,omitempty"`
	DurationMS *int64      `json:"duration_ms,omitempty"`
	Failure    *Failure    `json:"failure,omitempty"`
	NeedsInput *NeedsInput `json:"needs_input,omitempty"`
	// Result is what a finished round hands back, inline when small;
	// ResultRef points at a larger one in storage instead.
	Result    json.RawMessage `json:"result,omitempty"`
	ResultRef *ObjectRef      `json:"result_ref,omitempty"`
	// Artifacts are the files a finished round left, stored by sha256.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
}

// Artifact is one file a finished round left, copied to storage
// content-addressed (storage key blobs/sha256/<sha256>). A reader finds it
// by its sha256 and verifies it; URI is where the worker or the runner
// stored it, for people, never followed by the orchestrator.
type Artifact struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URI    string `json:"uri,omitempty"`
}

// MsgID is the JetStream de-duplication id: one stored event per dispatch and kind.
func (e *Event) MsgID() string { return e.DispatchID + "." + string(e.Kind) }

// Failure says why a dispatch failed.
type Failure struct {
	Reason FailureReason `json:"reason"`
	Detail string        `json:"detail"`
}

// Usage is what a runtime reported about its own consumption.
type Usage struct {
	Model        string  `json:"model,omitempty"`
	Turns        int     `json:"turns,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	// CacheCreationInputTokens are input tokens written to the model's
	// prompt cache (Claude Code's result usage), besides InputTokens.
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	// CacheReadInputTokens are input tokens read from the model's prompt
	// cache, besides InputTokens: a round that resumed its conversation
	// reads most of its input from there.
	CacheReadInputTokens int64 `json:"cache_read_input_tokens,omitempty"`
	// SessionID is the runtime's own conversation id (Claude Code's
	// session_id), which a later round may resume.
	SessionID string `json:"session_id,omitempty"`
	// Resumed reports that this round continued the previous round's
	// conversation (claude --resume) instead of starting afresh.
	Resumed bool `json:"resumed,omitempty"`
}
