package api

import "github.com/agoradev/agora/wire"

// The API's bodies, codes and event names are defined in package wire,
// which a client imports without the server's dependencies. These names
// keep code written against this package compiling.
type (
	// Deprecated: use wire.AnswerBody.
	AnswerBody = wire.AnswerBody
	// Deprecated: use wire.ContinueBody.
	ContinueBody = wire.ContinueBody
	// Deprecated: use wire.TaskList.
	TaskList = wire.TaskList
	// Deprecated: use wire.QuestionList.
	QuestionList = wire.QuestionList
	// Deprecated: use wire.ParkedEventList.
	ParkedEventList = wire.ParkedEventList
	// Deprecated: use wire.Health.
	Health = wire.Health
	// Deprecated: use wire.EntryList.
	EntryList = wire.EntryList
	// Deprecated: use wire.ErrorBody.
	ErrorBody = wire.ErrorBody
	// Deprecated: use wire.Code.
	Code = wire.Code
)

// Deprecated: use the constants of package wire.
const (
	DefaultChannel      = wire.DefaultChannel
	DefaultBy           = wire.DefaultBy
	CodeNotFound        = wire.CodeNotFound
	CodeConflict        = wire.CodeConflict
	CodeInvalid         = wire.CodeInvalid
	CodeInvalidAnswer   = wire.CodeInvalidAnswer
	CodeAlreadyAnswered = wire.CodeAlreadyAnswered
	CodeNoQuestion      = wire.CodeNoQuestion
	CodeWrongState      = wire.CodeWrongState
	CodeUnauthorized    = wire.CodeUnauthorized
	CodeNoRoute         = wire.CodeNoRoute
	CodeInternal        = wire.CodeInternal
	CodeRateLimited     = wire.CodeRateLimited
	EventTask           = wire.EventTask
	EventError          = wire.EventError
	TrailerError        = wire.TrailerError
)

// Codes lists the vocabulary. Deprecated: use wire.Codes.
var Codes = wire.Codes
