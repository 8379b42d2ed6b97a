package api

import "github.com/agoradev/agora/orchestrator"

// The request and response bodies the API speaks besides the orchestrator's
// own types (SubmitRequest, Task, Change), which travel as they are.

// AnswerBody is the body of POST /v1/tasks/{id}/answer.
type AnswerBody struct {
	Answer string `json:"answer"`
	// Round, when set, must be the round whose question is open: an answer
	// meant for round 2 cannot land on round 3.
	Round int `json:"round,omitempty"`
	// By is who answers; empty means the token's name, else "api".
	By string `json:"by,omitempty"`
	// Channel is how the answer came (cli, slack, web, …); empty means "api".
	Channel string `json:"channel,omitempty"`
}

// ContinueBody is the body of POST /v1/tasks/{id}/continue.
type ContinueBody struct {
	// Message is the follow-up: the next round's answer.
	Message string `json:"message"`
	// By is who continues; empty means the token's name, else "api".
	By string `json:"by,omitempty"`
}

// TaskList is the body of GET /v1/tasks: one page.
type TaskList struct {
	// Tasks match the filters, newest first, in their list view (no
	// request input, no partial_state: GET the task for those); never
	// null.
	Tasks []*orchestrator.Task `json:"tasks"`
	// Summary counts every task by state, whatever the filters and the page.
	Summary orchestrator.Summary `json:"summary"`
	// NextCursor, passed as ?cursor=, gives the next page; absent on the
	// last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// QuestionList is the body of GET /v1/questions: one page.
type QuestionList struct {
	// Questions are the open ones, oldest first; never null.
	Questions []orchestrator.QuestionView `json:"questions"`
	// NextCursor, passed as ?cursor=, gives the next page; absent on the
	// last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ParkedEventList is the body of GET /v1/parked-events.
type ParkedEventList struct {
	// ParkedEvents are the events the orchestrator could not apply after
	// their last delivery, oldest first; never null.
	ParkedEvents []orchestrator.ParkedEvent `json:"parked_events"`
	// Stats counts what the event pipeline did since the serving process
	// started.
	Stats orchestrator.PipelineStats `json:"stats"`
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
