package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agoradev/agora/schemas"
)

// State is where a task is in its life (docs/orchestrator.md has the machine).
type State string

const (
	// StateQueued: a round waits for a runner slot; no action needed.
	StateQueued State = "queued"
	// StateRunning: a round's container runs.
	StateRunning State = "running"
	// StateNeedsInput: a question waits for an answer; no container, no slot.
	StateNeedsInput State = "needs_input"
	// StateFinished, StateFailed, StateCancelled, StateExpired are terminal.
	StateFinished  State = "finished"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
	// StateExpired: a question was never answered and had no default.
	StateExpired State = "expired"
)

// States in display order.
var States = []State{StateRunning, StateQueued, StateNeedsInput, StateFinished, StateFailed, StateCancelled, StateExpired}

// Terminal reports whether no more rounds follow (until respawn or continue).
func (s State) Terminal() bool {
	switch s {
	case StateFinished, StateFailed, StateCancelled, StateExpired:
		return true
	}
	return false
}

// Errors callers branch on (errors.Is).
var (
	ErrNotFound        = errors.New("task not found")
	ErrConflict        = errors.New("task id already used for a different request")
	ErrAlreadyAnswered = errors.New("question already answered")
	ErrNoQuestion      = errors.New("no open question")
	ErrInvalidAnswer   = errors.New("invalid answer")
	ErrInvalidRequest  = errors.New("invalid request")
	ErrWrongState      = errors.New("not possible in the task's state")
)

// SubmitRequest is a new task.
type SubmitRequest struct {
	// TaskID makes submission idempotent: the same id and request return the
	// same task; the same id with another request is ErrConflict. Empty: one
	// is generated.
	TaskID string `json:"task_id,omitempty"`
	// SubagentRef names a registered sub-agent, NAME or NAME@VERSION, instead
	// of giving Subagent inline. Submit pins the version it resolves and the
	// capabilities and env bundles the sub-agent names (Task.Pins); the
	// definition's route, timeout, limits, image, network, resources and
	// workspace fill in what the request leaves empty.
	SubagentRef  string              `json:"subagent_ref,omitempty"`
	Subagent     schemas.Subagent    `json:"subagent"`
	Input        json.RawMessage     `json:"input,omitempty"`
	Capabilities []schemas.BundleRef `json:"capabilities,omitempty"`
	Env          []schemas.BundleRef `json:"env,omitempty"`
	// TimeoutSeconds bounds each round's dispatch.
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
	Image          string `json:"image,omitempty"`
	Network        string `json:"network,omitempty"`
	// Egress is the only hosts the sub-agent may reach, through the
	// runner's HTTP(S) proxy: entries [*.]NAME[:PORT], e.g.
	// "api.anthropic.com", "*.githubusercontent.com". It implies network
	// "egress" (docs/runner.md, "Egress allow-list"). A registered
	// sub-agent's network and egress fill in together, only when the
	// request gives neither.
	Egress    []string           `json:"egress,omitempty"`
	Resources *schemas.Resources `json:"resources,omitempty"`
	// Workspace is "persist" (default) or "fresh".
	Workspace string `json:"workspace,omitempty"`
	// Route is the ordered answerers, e.g. "memory,lookup,human=24h";
	// empty means DefaultRoute.
	Route string `json:"route,omitempty"`
	// AllowMemory lets the memory answerer reuse earlier answers.
	AllowMemory bool   `json:"allow_memory,omitempty"`
	Limits      Limits `json:"limits,omitempty"`
	// Labels are free-form, e.g. a batch id.
	Labels map[string]string `json:"labels,omitempty"`
	// Retry dispatches a round that failed for a transient reason again,
	// after a backoff; nil (the default, unless the registered sub-agent
	// gives one) never retries.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// FromCI says the submitter is a CI job, where nobody watches a
	// terminal: the CLI sets it under CI=true when it gives no route. A
	// request that ends up without a route (none given, none from its
	// registered sub-agent) then gets the server's CI route
	// (wire.DefaultCIRoute, "human=10m", unless the operator set
	// `--ci-route`) instead of DefaultRoute, so no pipeline step waits a
	// day for a person. The task's Request.Route shows the route it got.
	FromCI bool `json:"from_ci,omitempty"`
}

// Limits bound a task; each ends in an explained outcome.
type Limits struct {
	// MaxRounds caps the rounds (default 10).
	MaxRounds int `json:"max_rounds,omitempty"`
	// MaxWaitSeconds caps the total time spent waiting for answers (default 7 days).
	MaxWaitSeconds int `json:"max_wait_seconds,omitempty"`
}

// Task is one logical piece of work: a chain of rounds.
type Task struct {
	ID      string        `json:"id"`
	Request SubmitRequest `json:"request"`
	// SubagentHash pins the sub-agent definition every round runs.
	SubagentHash string `json:"subagent_hash"`
	// Pins are the registry versions a SubagentRef resolved to.
	Pins *Pins `json:"pins,omitempty"`
	// SubmitHash is the hash of the request as submitted (before the
	// registry filled it in), for idempotent resubmission.
	SubmitHash string `json:"submit_hash,omitempty"`
	// Generation counts the tasks that had this id: 2 and up when an
	// earlier task of the same id was removed. Its dispatch ids carry it,
	// so they never collide with the removed task's (queue, claims and
	// events are keyed by dispatch id).
	Generation int `json:"generation,omitempty"`
	// Owner is the name of the token that submitted the task, set by the
	// API from the authenticated identity (never from the request body);
	// empty for the operator (no token, or an unnamed one) and for tasks
	// submitted before owners were recorded. A token without the admin or
	// answerer role sees and acts on its own tasks only.
	Owner     string    `json:"owner,omitempty"`
	State     State     `json:"state"`
	Rounds    []Round   `json:"rounds"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Outcome explains a terminal state.
	Outcome *Outcome `json:"outcome,omitempty"`
	// WaitedMS is the total time spent waiting for answers.
	WaitedMS  int64     `json:"waited_ms"`
	Attention Attention `json:"attention"`
	// History is who did what to the task and when: submit, answer,
	// cancel, respawn, continue (the most recent MaxHistory entries, the
	// submit always kept).
	History []HistoryEntry `json:"history,omitempty"`
	// Result is what the task hands back: its last round's result (the
	// sub-agent's .agora/result.json, or Claude Code's final result text as
	// a JSON string), inline when small. ResultRef points at a large one in
	// storage instead (docs/contract.md, "The result").
	Result    json.RawMessage    `json:"result,omitempty"`
	ResultRef *schemas.ObjectRef `json:"result_ref,omitempty"`
	// Artifacts are the files the last finished round left (name, size,
	// sha256), served by GET /v1/tasks/{id}/artifacts/{name}.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Origin is the task this one was made from, by replay or fork.
	Origin *TaskLink `json:"origin,omitempty"`
	// Derived are the replays and forks made from this task (the most
	// recent MaxDerived).
	Derived []TaskLink `json:"derived,omitempty"`
	// Replay, on a replay, is the recording it answers from and what it
	// found (docs/replay.md).
	Replay *Replay `json:"replay,omitempty"`
	// Revision is the KV revision this copy was read at.
	Revision uint64 `json:"revision"`
}

// Artifact is one file a finished round left, copied to storage.
type Artifact struct {
	// Name is the file's path relative to the workspace (or, for a file
	// in .agora/artifacts/, relative to that directory), with slashes.
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// IfUnanswered says what happens to an open question if nobody answers,
// and when: the consequence every surface shows beside the question.
type IfUnanswered struct {
	// At is when it happens (the current route step's deadline, or the
	// task's wait limit when that comes first).
	At time.Time `json:"at"`
	// Action is one of the IfUnanswered constants.
	Action string `json:"action"`
	// Default is the answer taken, for IfUnansweredDefault.
	Default string `json:"default,omitempty"`
	// Next is the route step the question goes to, for IfUnansweredEscalate.
	Next string `json:"next,omitempty"`
	// Text reads "at 14:05 UTC the default `draft` is taken",
	// "at 14:05 UTC it goes to `human`" or "at 14:05 UTC it expires".
	Text string `json:"text"`
}

// IfUnanswered actions.
const (
	IfUnansweredDefault  = "default"
	IfUnansweredEscalate = "escalate"
	IfUnansweredExpire   = "expire"
)

// MaxHistory bounds Task.History.
const MaxHistory = 100

// Actions recorded in Task.History.
const (
	ActionSubmit   = "submit"
	ActionAnswer   = "answer"
	ActionCancel   = "cancel"
	ActionRespawn  = "respawn"
	ActionContinue = "continue"
	// ActionRetry is a dispatch the retry policy queued again after a
	// failure; By is "retry policy".
	ActionRetry = "retry"
	// ActionReplay and ActionFork: the task was made by replay or fork
	// (on the new task, its first entry's Detail names the original), or
	// made one (on the original).
	ActionReplay = "replay"
	ActionFork   = "fork"
)

// HistoryEntry is one action on a task.
type HistoryEntry struct {
	// Action is one of the Action constants.
	Action string `json:"action"`
	// By is who acted: the authenticated token's name, or the person an
	// answering service or the operator vouched for; "operator" for the
	// operator without a name.
	By string `json:"by"`
	// Via is the token that vouched for By, when it is not By itself.
	Via    string    `json:"via,omitempty"`
	At     time.Time `json:"at"`
	Detail string    `json:"detail,omitempty"`
}

// Outcome explains how a task ended.
type Outcome struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// Round is one dispatch of the task's sub-agent.
type Round struct {
	N          int       `json:"n"`
	DispatchID string    `json:"dispatch_id"`
	State      State     `json:"state"`
	QueuedAt   time.Time `json:"queued_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	// Failure is the dispatch's failure, when it failed.
	Failure *schemas.Failure `json:"failure,omitempty"`
	Usage   *schemas.Usage   `json:"usage,omitempty"`
	// Question is what the round asked, if it did.
	Question *schemas.NeedsInput `json:"question,omitempty"`
	AskedAt  time.Time           `json:"asked_at,omitzero"`
	Answer   *Answer             `json:"answer,omitempty"`
	// Route progress while the question is open.
	Step         int       `json:"step"`
	StepDeadline time.Time `json:"step_deadline,omitzero"`
	// Decisions records what each route step did.
	Decisions []Decision `json:"decisions,omitempty"`
	// IfUnanswered is what happens to the open question if nobody answers.
	IfUnanswered *IfUnanswered `json:"if_unanswered,omitempty"`
	// Result and Artifacts are what this round left when it finished
	// (the task's are its last round's).
	Result    json.RawMessage    `json:"result,omitempty"`
	ResultRef *schemas.ObjectRef `json:"result_ref,omitempty"`
	Artifacts []Artifact         `json:"artifacts,omitempty"`
	// CopiedFrom, on a fork's rounds up to the one it answered
	// differently, is the original's dispatch the round was copied from
	// (it did not run again).
	CopiedFrom string `json:"copied_from,omitempty"`
	// FollowUp is the message that started this round by `continue`.
	FollowUp string `json:"follow_up,omitempty"`
	// Attempt counts dispatches of this round (respawn and retry add one).
	Attempt int `json:"attempt"`
	// RetryAt, on an attempt the retry policy queued, is when it is put on
	// the queue (after the backoff); until then the task is queued and
	// the round not enqueued.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Enqueued: the dispatch request is on the queue (the outbox flag a
	// restarted orchestrator checks).
	Enqueued bool `json:"enqueued"`
}

// Answer is the accepted answer to a round's question.
type Answer struct {
	Value string `json:"value"`
	// By is who answered; Channel is through what (api, cli, memory,
	// lookup, agent:…, webhook:…, default).
	By string `json:"by"`
	// Via is the authenticated token that answered on behalf of By (an
	// answering service, or an admin), when it is not By itself.
	Via     string    `json:"via,omitempty"`
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	WaitMS  int64     `json:"wait_ms"`
	// Assumed: nobody answered; the sentinel's default was taken.
	Assumed bool `json:"assumed,omitempty"`
	// Rule is the remembered answer that gave this one (Channel "rule"):
	// its id and who made it.
	Rule *RuleRef `json:"rule,omitempty"`
	// Remembered is the id of the rule this answer made (AnswerRequest.Remember).
	Remembered string `json:"remembered,omitempty"`
}

// Decision is what one route step did with a question.
type Decision struct {
	StepIndex int       `json:"step_index"`
	Step      string    `json:"step"`
	Result    string    `json:"result"` // answered, declined, pending, timed out, error
	Detail    string    `json:"detail,omitempty"`
	At        time.Time `json:"at"`
}

// Attention says what a task needs from whom, and the exact next command.
type Attention struct {
	Required bool `json:"required"`
	// Kind is none (queued for capacity), running, needs_answer or terminal.
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	Action  string `json:"action,omitempty"`
	// ElapsedMS and LastOutput describe a running round.
	ElapsedMS  int64  `json:"elapsed_ms,omitempty"`
	LastOutput string `json:"last_output,omitempty"`
}

// AnswerRequest answers a task's open question.
type AnswerRequest struct {
	TaskID string `json:"task_id"`
	// Round, when set, must be the round whose question is open.
	Round  int    `json:"round,omitempty"`
	Answer string `json:"answer"`
	By     string `json:"by"`
	// Via is the token that vouches for By, when it is not By itself.
	Via string `json:"via,omitempty"`
	// Channel is how the answer came (api, cli, slack, web).
	Channel string `json:"channel"`
	// Remember, when set, also makes the answer a rule (see Remember).
	Remember *Remember `json:"remember,omitempty"`
}

// QuestionView is one open question, for the questions list.
type QuestionView struct {
	TaskID     string    `json:"task_id"`
	Round      int       `json:"round"`
	DispatchID string    `json:"dispatch_id"`
	Subagent   string    `json:"subagent"`
	Question   string    `json:"question"`
	Options    []string  `json:"options,omitempty"`
	Context    string    `json:"context,omitempty"`
	Default    *string   `json:"default,omitempty"`
	AskedAt    time.Time `json:"asked_at"`
	AgeMS      int64     `json:"age_ms"`
	Action     string    `json:"action"`
	// IfUnanswered is what happens if nobody answers, and when.
	IfUnanswered *IfUnanswered `json:"if_unanswered,omitempty"`
	// StepFailures says which route steps failed to ask the question, and
	// why (a refused Slack post, a failed webhook).
	StepFailures string `json:"step_failures,omitempty"`
}

// Summary counts tasks by state.
type Summary struct {
	Counts map[State]int `json:"counts"`
	// Text reads "2 running · 3 queued · 1 needs input · 4 finished".
	Text string `json:"text"`
	// ParkedEvents counts the lifecycle events the orchestrator could not
	// apply and parked for an operator; Alert says so and what to run.
	ParkedEvents int    `json:"parked_events,omitempty"`
	Alert        string `json:"alert,omitempty"`
}

// ListOptions filter List and ask for one page of it.
type ListOptions struct {
	State State  `json:"state,omitempty"`
	Label string `json:"label,omitempty"` // key=value
	// Limit bounds the page: 0 means DefaultPageLimit, at most MaxPageLimit.
	Limit int `json:"limit,omitempty"`
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string `json:"cursor,omitempty"`
}

// Change is one task change, for watchers (the SSE stream).
type Change struct {
	Task    *Task  `json:"task,omitempty"`
	TaskID  string `json:"task_id"`
	Removed bool   `json:"removed,omitempty"`
}

// ArtifactList is GET /v1/tasks/{id}/artifacts: the files the task's last
// round left when it finished.
type ArtifactList struct {
	TaskID    string     `json:"task_id"`
	Artifacts []Artifact `json:"artifacts"`
}

// CheckArtifactName says what is wrong with an artifact name: it must be a
// relative path with '/' separators and no empty, '.' or '..' segment
// (schemas.ArtifactNamePattern), so that it stays inside any directory it
// is written under.
func CheckArtifactName(name string) error {
	if !schemas.ValidArtifactName(name) {
		return fmt.Errorf("artifact name %q: want a relative path with '/' separators, no leading '/', no '.' or '..' segment, no backslash or control character", name)
	}
	return nil
}

// ArtifactETag is the ETag of an artifact's content: its sha256 in hex,
// quoted. GET /v1/tasks/{id}/artifacts/{name} sends it, and the same
// digest as Repr-Digest (RFC 9530) and Digest (RFC 3230).
func ArtifactETag(sha256hex string) string { return `"` + sha256hex + `"` }
