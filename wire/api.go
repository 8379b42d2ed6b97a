package wire

import (
	"errors"
	"net/http"
	"time"

	"github.com/agoradev/agora/schemas"
)

// The request and response bodies of the HTTP API besides the task types
// (SubmitRequest, Task, Change), which travel as they are.

// AnswerBody is the body of POST /v1/tasks/{id}/answer.
type AnswerBody struct {
	Answer string `json:"answer"`
	// Round, when set, must be the round whose question is open: an answer
	// meant for round 2 cannot land on round 3.
	Round int `json:"round,omitempty"`
	// By is the person an answering service (a token with the answerer
	// role) or an admin answers for; it is recorded with the token's name
	// as Answer.Via. Any other token may leave it empty or give its own
	// name. Empty means the token's name, else "api".
	By string `json:"by,omitempty"`
	// Channel is how the answer came (cli, slack, web, …); empty means "api".
	Channel string `json:"channel,omitempty"`
	// Remember, when set, also makes the answer a rule that answers the
	// next questions like it (docs/answerers.md, "Remembered answers").
	Remember *Remember `json:"remember,omitempty"`
}

// ContinueBody is the body of POST /v1/tasks/{id}/continue.
type ContinueBody struct {
	// Message is the follow-up: the next round's answer.
	Message string `json:"message"`
	// By is who continues, under the same rule as AnswerBody.By.
	By string `json:"by,omitempty"`
}

// TaskList is the body of GET /v1/tasks: one page (the same shape as TaskPage).
type TaskList = TaskPage

// QuestionList is the body of GET /v1/questions: one page (the same shape as QuestionPage).
type QuestionList = QuestionPage

// ParkedEventList is the body of GET /v1/parked-events.
type ParkedEventList struct {
	// ParkedEvents are the events the orchestrator could not apply after
	// their last delivery, oldest first; never null.
	ParkedEvents []ParkedEvent `json:"parked_events"`
	// Stats counts what the event pipeline did since the serving process
	// started.
	Stats PipelineStats `json:"stats"`
}

// Health is the body of GET /healthz.
type Health struct {
	Status string `json:"status"`
}

const (
	// DefaultChannel is the channel of answers that name none.
	DefaultChannel = "api"
	// DefaultBy is who answers or continues when neither the body nor the
	// token names anybody.
	DefaultBy = "api"
)

// EntryList is the answer to listing a kind or the versions of a name:
// one page.
type EntryList struct {
	// Entries are never null.
	Entries []*Entry `json:"entries"`
	// NextCursor, passed as ?cursor=, gives the next page; absent on the
	// last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Code is the machine-readable kind of an API error: the "code" field of
// every error body. The set is closed; each code that stands for one of the
// sentinel errors (ErrNotFound, …) maps back to it (Sentinel), so a client can
// branch with errors.Is as if it called the orchestrator in process.
type Code string

const (
	// CodeNotFound (404): no such task. Sentinel ErrNotFound.
	CodeNotFound Code = "not_found"
	// CodeConflict (409): the task id is taken by a different request.
	// Sentinel ErrConflict.
	CodeConflict Code = "conflict"
	// CodeInvalid: the request is malformed — 400 for a body or query that
	// cannot be read, 413 for a body over 1 MiB — or the orchestrator
	// rejected it (422). Sentinel ErrInvalidRequest.
	CodeInvalid Code = "invalid"
	// CodeInvalidAnswer (422): the answer is not acceptable for the
	// question, e.g. not one of its options. Sentinel
	// ErrInvalidAnswer.
	CodeInvalidAnswer Code = "invalid_answer"
	// CodeAlreadyAnswered (409): somebody answered first; the message says
	// who, through which channel and when. Sentinel
	// ErrAlreadyAnswered.
	CodeAlreadyAnswered Code = "already_answered"
	// CodeNoQuestion (409): the task has no open question (to answer, or of
	// that round). Sentinel ErrNoQuestion.
	CodeNoQuestion Code = "no_question"
	// CodeWrongState (409): the operation is not possible in the task's
	// state, e.g. cancelling a finished task. Sentinel
	// ErrWrongState.
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
	// CodeRateLimited (429): too many failed attempts (wrong tokens) from
	// this client; the Retry-After header says when to try again. No
	// sentinel.
	CodeRateLimited Code = "rate_limited"
)

// Codes lists the vocabulary.
var Codes = []Code{CodeNotFound, CodeConflict, CodeInvalid, CodeInvalidAnswer, CodeAlreadyAnswered,
	CodeNoQuestion, CodeWrongState, CodeUnauthorized, CodeNoRoute, CodeInternal, CodeRateLimited}

// sentinels pairs each code with the orchestrator error it stands for, in
// the order classify tries them.
var sentinels = []struct {
	code   Code
	err    error
	status int
}{
	{CodeNotFound, ErrNotFound, http.StatusNotFound},
	{CodeConflict, ErrConflict, http.StatusConflict},
	{CodeAlreadyAnswered, ErrAlreadyAnswered, http.StatusConflict},
	{CodeNoQuestion, ErrNoQuestion, http.StatusConflict},
	{CodeInvalidAnswer, ErrInvalidAnswer, http.StatusUnprocessableEntity},
	{CodeInvalid, ErrInvalidRequest, http.StatusUnprocessableEntity},
	{CodeWrongState, ErrWrongState, http.StatusConflict},
}

// SentinelCode is the code and HTTP status of the first sentinel error err
// is (errors.Is); ok is false when it is none of them.
func SentinelCode(err error) (code Code, status int, ok bool) {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code, s.status, true
		}
	}
	return "", 0, false
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
	// Differences, on a conflict (409, code conflict) from POST /v1/tasks,
	// are the fields in which the request differs from the one stored
	// under its task id (ConflictError); absent when the caller may not
	// see the stored request.
	Differences []Difference `json:"differences,omitempty"`
	// MoreDifferences counts the differences past MaxDifferences.
	MoreDifferences int `json:"more_differences,omitempty"`
}

// Server-sent event names.
const (
	// EventTask carries one Change as JSON.
	EventTask = "task"
	// EventError carries an ErrorBody when the service's watch fails; the
	// stream ends after it.
	EventError = "error"
)

// TrailerError is the trailer that ends a logs stream which failed after
// its output began: its value is an ErrorBody as JSON. A stream without it
// ended well.
const TrailerError = "Agora-Error"

// ParkedEvent is an event that could not be applied after MaxDeliveries
// tries, with the last error.
type ParkedEvent struct {
	// Sequence is the event's stream sequence in AGORA_EVENTS.
	Sequence   uint64            `json:"sequence"`
	Subject    string            `json:"subject"`
	DispatchID string            `json:"dispatch_id"`
	TaskID     string            `json:"task_id,omitempty"`
	Kind       schemas.EventKind `json:"kind"`
	Error      string            `json:"error"`
	Deliveries uint64            `json:"deliveries"`
	StoredAt   time.Time         `json:"stored_at"`
	ParkedAt   time.Time         `json:"parked_at"`
	// Event is the event as stored.
	Event schemas.Event `json:"event"`
}

// PipelineStats counts what the event pipeline did since this process
// started: applied, retried, parked, and dropped by reason.
type PipelineStats struct {
	Applied uint64 `json:"applied"`
	Retried uint64 `json:"retried"`
	Parked  uint64 `json:"parked"`
	// Dropped counts events that can never apply: unknown_task (removed,
	// never existed or forged), invalid (breaks the event schema),
	// unknown_kind (a kind outside the vocabulary).
	Dropped map[string]uint64 `json:"dropped"`
	// ParkedNow is how many parked events wait for an operator.
	ParkedNow int `json:"parked_now"`
}
