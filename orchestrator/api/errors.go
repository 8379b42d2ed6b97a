package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agoradev/agora/orchestrator"
)

// Code is the machine-readable kind of an API error: the "code" field of
// every error body. The set is closed; each code that stands for one of the
// orchestrator's sentinel errors maps back to it (Sentinel), so a client can
// branch with errors.Is as if it called the orchestrator in process.
type Code string

const (
	// CodeNotFound (404): no such task. Sentinel orchestrator.ErrNotFound.
	CodeNotFound Code = "not_found"
	// CodeConflict (409): the task id is taken by a different request.
	// Sentinel orchestrator.ErrConflict.
	CodeConflict Code = "conflict"
	// CodeInvalid: the request is malformed — 400 for a body or query that
	// cannot be read, 413 for a body over 1 MiB — or the orchestrator
	// rejected it (422). Sentinel orchestrator.ErrInvalidRequest.
	CodeInvalid Code = "invalid"
	// CodeInvalidAnswer (422): the answer is not acceptable for the
	// question, e.g. not one of its options. Sentinel
	// orchestrator.ErrInvalidAnswer.
	CodeInvalidAnswer Code = "invalid_answer"
	// CodeAlreadyAnswered (409): somebody answered first; the message says
	// who, through which channel and when. Sentinel
	// orchestrator.ErrAlreadyAnswered.
	CodeAlreadyAnswered Code = "already_answered"
	// CodeNoQuestion (409): the task has no open question (to answer, or of
	// that round). Sentinel orchestrator.ErrNoQuestion.
	CodeNoQuestion Code = "no_question"
	// CodeWrongState (409): the operation is not possible in the task's
	// state, e.g. cancelling a finished task. Sentinel
	// orchestrator.ErrWrongState.
	CodeWrongState Code = "wrong_state"
	// CodeUnauthorized: 401 for a missing or unknown bearer token, 403 for a
	// non-loopback client of an API that has no tokens. No sentinel.
	CodeUnauthorized Code = "unauthorized"
	// CodeNoRoute: 404 for a path the API does not serve, 405 for a method
	// the path does not take (the Allow header lists the ones it does). No
	// sentinel: a wrong base URL must not read as a missing task.
	CodeNoRoute Code = "no_route"
	// CodeInternal (500): anything else, e.g. storage unavailable. No
	// sentinel.
	CodeInternal Code = "internal"
)

// Codes lists the vocabulary.
var Codes = []Code{CodeNotFound, CodeConflict, CodeInvalid, CodeInvalidAnswer, CodeAlreadyAnswered,
	CodeNoQuestion, CodeWrongState, CodeUnauthorized, CodeNoRoute, CodeInternal}

// sentinels pairs each code with the orchestrator error it stands for, in
// the order classify tries them.
var sentinels = []struct {
	code   Code
	err    error
	status int
}{
	{CodeNotFound, orchestrator.ErrNotFound, http.StatusNotFound},
	{CodeConflict, orchestrator.ErrConflict, http.StatusConflict},
	{CodeAlreadyAnswered, orchestrator.ErrAlreadyAnswered, http.StatusConflict},
	{CodeNoQuestion, orchestrator.ErrNoQuestion, http.StatusConflict},
	{CodeInvalidAnswer, orchestrator.ErrInvalidAnswer, http.StatusUnprocessableEntity},
	{CodeInvalid, orchestrator.ErrInvalidRequest, http.StatusUnprocessableEntity},
	{CodeWrongState, orchestrator.ErrWrongState, http.StatusConflict},
}

// Sentinel is the orchestrator error c stands for, nil for codes that stand
// for none (unauthorized, no_route, internal, or a code this version does
// not know).
func (c Code) Sentinel() error {
	for _, s := range sentinels {
		if s.code == c {
			return s.err
		}
	}
	return nil
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	// Error is the message, e.g. "task t-42 round 1: question already
	// answered by alice via cli at 2025-06-01T10:00:00Z (answer "B")".
	Error string `json:"error"`
	Code  Code   `json:"code"`
}

// requestError is an error the API itself finds in a request (bad body,
// bad query, no token) before or instead of asking the service.
type requestError struct {
	status int
	code   Code
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func invalid(msg string) error { return &requestError{http.StatusBadRequest, CodeInvalid, msg} }

// classify gives err's status and code.
func classify(err error) (int, Code) {
	if re, ok := errors.AsType[*requestError](err); ok {
		return re.status, re.code
	}
	if errors.Is(err, orchestrator.ErrInvalidID) {
		// An id in the path that cannot be one: the request is malformed.
		return http.StatusBadRequest, CodeInvalid
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.status, s.code
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, CodeInternal
	}
	return http.StatusInternalServerError, CodeInternal
}
