package orchestrator

import "github.com/agoradev/agora/wire"

// The task types travel over the API, so they are defined in package wire,
// which has no dependencies a client would not want. The orchestrator's
// code, and its callers inside this module, use them by these names.
type (
	State         = wire.State
	SubmitRequest = wire.SubmitRequest
	Limits        = wire.Limits
	Task          = wire.Task
	Outcome       = wire.Outcome
	Round         = wire.Round
	Answer        = wire.Answer
	Decision      = wire.Decision
	Attention     = wire.Attention
	AnswerRequest = wire.AnswerRequest
	QuestionView  = wire.QuestionView
	Summary       = wire.Summary
	ListOptions   = wire.ListOptions
	Change        = wire.Change
	PageOptions   = wire.PageOptions
	TaskPage      = wire.TaskPage
	QuestionPage  = wire.QuestionPage
	PageError     = wire.PageError
	ParkedEvent   = wire.ParkedEvent
	PipelineStats = wire.PipelineStats
)

// States of a task (wire.State).
const (
	StateQueued     = wire.StateQueued
	StateRunning    = wire.StateRunning
	StateNeedsInput = wire.StateNeedsInput
	StateFinished   = wire.StateFinished
	StateFailed     = wire.StateFailed
	StateCancelled  = wire.StateCancelled
	StateExpired    = wire.StateExpired
)

// Page sizes (wire.DefaultPageLimit, wire.MaxPageLimit).
const (
	DefaultPageLimit = wire.DefaultPageLimit
	MaxPageLimit     = wire.MaxPageLimit
)

// States in display order.
var States = wire.States

// Errors callers branch on (errors.Is); the same values as wire's.
var (
	ErrNotFound        = wire.ErrNotFound
	ErrConflict        = wire.ErrConflict
	ErrAlreadyAnswered = wire.ErrAlreadyAnswered
	ErrNoQuestion      = wire.ErrNoQuestion
	ErrInvalidAnswer   = wire.ErrInvalidAnswer
	ErrInvalidRequest  = wire.ErrInvalidRequest
	ErrWrongState      = wire.ErrWrongState
)

// PageLimit is wire.PageLimit.
func PageLimit(limit int) (int, error) { return wire.PageLimit(limit) }
