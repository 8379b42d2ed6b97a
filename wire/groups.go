package wire

import "time"

// BatchLabel is the label that holds a task's batch id (agora batch
// submit sets it).
const BatchLabel = "agora.batch"

// QuestionGroup is one question asked identically — the same text once
// normalised (case, spacing, trailing punctuation) and the same set of
// options — by one or more tasks of one batch (tasks of no batch group
// among themselves). A Slack message, a web page or the CLI shows it once
// and answers it once for all of them.
type QuestionGroup struct {
	// ID names the group for POST /v1/question-groups/{id}/answer; it is
	// the same for as long as the group has open questions.
	ID string `json:"id"`
	// Key is the question's grouping key (its normalised text and
	// options, hashed).
	Key      string   `json:"key"`
	Batch    string   `json:"batch,omitempty"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Context  string   `json:"context,omitempty"`
	Default  *string  `json:"default,omitempty"`
	// Count is len(TaskIDs).
	Count int `json:"count"`
	// TaskIDs wait for the answer, oldest question first.
	TaskIDs []string `json:"task_ids"`
	// Questions are the tasks' open questions, in TaskIDs' order.
	Questions []GroupMember `json:"questions"`
	// Action is the command that answers them all (or the one).
	Action  string    `json:"action"`
	AskedAt time.Time `json:"oldest_asked_at"`
	// IfUnanswered is what happens to the oldest question if nobody answers.
	IfUnanswered *IfUnanswered `json:"if_unanswered,omitempty"`
}

// GroupMember is one task's open question in a group.
type GroupMember struct {
	TaskID   string    `json:"task_id"`
	Round    int       `json:"round"`
	Subagent string    `json:"subagent"`
	AskedAt  time.Time `json:"asked_at"`
	// StepFailures says which route steps failed to ask this question,
	// and why (e.g. "route step slack:#ops failed: Slack refused the
	// question (invalid_blocks: …)"), so it is not lost silently.
	StepFailures string `json:"step_failures,omitempty"`
}

// GroupOptions filter the question groups.
type GroupOptions struct {
	// Batch keeps the groups of one batch.
	Batch string `json:"batch,omitempty"`
}

// QuestionGroupList is the body of GET /v1/question-groups: every group,
// oldest question first (groups are few: one per distinct question).
type QuestionGroupList struct {
	Groups []QuestionGroup `json:"groups"`
}

// GroupAnswerResult is what answering a group did, task by task: the body
// of POST /v1/question-groups/{id}/answer and of POST
// /v1/tasks/{id}/answer-all-like.
type GroupAnswerResult struct {
	// Like is the task whose question was answered with all like it, for
	// answer-all-like; GroupID the group answered.
	Like     string   `json:"like,omitempty"`
	GroupID  string   `json:"group_id"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	// Answer is the value given to every task (an option's number is
	// turned into the option).
	Answer          string            `json:"answer"`
	Answered        int               `json:"answered"`
	AlreadyAnswered int               `json:"already_answered"`
	Failed          int               `json:"failed"`
	Results         []GroupAnswerItem `json:"results"`
}

// GroupAnswerItem is what became of one task's question.
type GroupAnswerItem struct {
	TaskID string `json:"task_id"`
	Round  int    `json:"round"`
	// Result is answered, already_answered or failed.
	Result string `json:"result"`
	// State is the task's state after the answer.
	State State  `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
}

// Results of a GroupAnswerItem.
const (
	GroupAnswered        = "answered"
	GroupAlreadyAnswered = "already_answered"
	GroupFailed          = "failed"
)
