package wire

import "time"

// Link kinds: how one task came from another (Task.Origin, Task.Derived).
const (
	// LinkReplay: a replay runs a finished task again from round 1 and
	// answers each question with the answer recorded for it.
	LinkReplay = "replay"
	// LinkFork: a fork starts from one round's workspace snapshot and
	// partial_state with another answer.
	LinkFork = "fork"
)

// MaxDerived bounds Task.Derived: the most recent links are kept.
const MaxDerived = 100

// TaskLink ties a task to another: the one it was made from (Origin) or
// one made from it (Derived).
type TaskLink struct {
	// Kind is LinkReplay or LinkFork.
	Kind string `json:"kind"`
	// TaskID is the other task.
	TaskID string `json:"task_id"`
	// Round is, for a fork, the round answered differently.
	Round int `json:"round,omitempty"`
	// Answer is, for a fork, the answer it gave instead.
	Answer string    `json:"answer,omitempty"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at"`
}

// ReplayRequest is the body of POST /v1/tasks/{id}/replay and of
// POST /v1/batches/{batch}/replay.
type ReplayRequest struct {
	// TaskID names the new task (one task only); empty: one is generated.
	TaskID string `json:"task_id,omitempty"`
	// SubagentRef runs another registered version of the sub-agent,
	// NAME or NAME@VERSION; empty: the original's pinned sub-agent.
	SubagentRef string `json:"subagent_ref,omitempty"`
	// Strict makes a different result a failed replay too; by default a
	// different result is reported but the replay matches when every
	// question did.
	Strict bool `json:"strict,omitempty"`
}

// ForkRequest is the body of POST /v1/tasks/{id}/fork.
type ForkRequest struct {
	// TaskID names the new task; empty: one is generated.
	TaskID string `json:"task_id,omitempty"`
	// Round is the round whose question is answered differently.
	Round int `json:"round"`
	// Answer is the other answer: one of the question's options when it
	// gave options.
	Answer string `json:"answer"`
	// By is who forks, under the same rule as AnswerBody.By.
	By string `json:"by,omitempty"`
}

// Replay is what a replay task compares itself with and what it found.
type Replay struct {
	// Of is the task replayed.
	Of string `json:"of"`
	// Strict: a different result fails the replay (ReplayRequest.Strict).
	Strict bool `json:"strict,omitempty"`
	// Recorded are the original's answered rounds, in order.
	Recorded []RecordedRound `json:"recorded"`
	// Rounds is how many rounds the original ran.
	Rounds int `json:"rounds"`
	// ResultDigest identifies the original's result (ResultDigest); empty
	// when it had none.
	ResultDigest string `json:"result_digest,omitempty"`
	// Matched counts the questions answered from the recording so far.
	Matched int `json:"matched"`
	// Divergences are every difference found, in the order found.
	Divergences []Divergence `json:"divergences,omitempty"`
	// Verdict is empty while the replay runs, then ReplayMatched or
	// ReplayDiverged.
	Verdict string `json:"verdict,omitempty"`
}

// Replay verdicts.
const (
	// ReplayMatched: the replay finished after the same rounds, every
	// recorded question asked again and answered from the recording (and,
	// when strict, the same result).
	ReplayMatched = "matched"
	// ReplayDiverged: some divergence other than the result (or, when
	// strict, any) was found.
	ReplayDiverged = "diverged"
)

// RecordedRound is one answered round of the original.
type RecordedRound struct {
	Round    int      `json:"round"`
	Question string   `json:"question,omitempty"`
	Options  []string `json:"options,omitempty"`
	Answer   string   `json:"answer"`
	// FollowUp: the round finished and was continued with Answer as the
	// follow-up message (agora continue); Question is empty.
	FollowUp bool `json:"follow_up,omitempty"`
}

// Divergence kinds.
const (
	// DivergenceNewQuestion: a round asked where the original did not.
	DivergenceNewQuestion = "new_question"
	// DivergenceQuestion: a round asked another question than the original.
	DivergenceQuestion = "question"
	// DivergenceOptions: the same question with other options.
	DivergenceOptions = "options"
	// DivergenceFewerRounds: a round finished where the original asked
	// (or was continued) and went on.
	DivergenceFewerRounds = "fewer_rounds"
	// DivergenceOutcome: the replay ended other than finished.
	DivergenceOutcome = "outcome"
	// DivergenceResult: the replay finished with another result.
	DivergenceResult = "result"
)

// Divergence is one difference between a replay and its original.
type Divergence struct {
	Round int `json:"round"`
	// Kind is one of the Divergence constants.
	Kind string `json:"kind"`
	// Detail says what differs, e.g. `round 2 asked "Tabs or spaces?";
	// the original asked "Keep a.conf or b.conf?"`.
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// Fails reports whether d makes the replay diverged: every kind does but
// a different result, which does only when strict.
func (d Divergence) Fails(strict bool) bool { return d.Kind != DivergenceResult || strict }

// FirstFailing is the first divergence that makes r diverged, or nil.
func (r *Replay) FirstFailing() *Divergence {
	for i := range r.Divergences {
		if r.Divergences[i].Fails(r.Strict) {
			return &r.Divergences[i]
		}
	}
	return nil
}

// BatchReplay is the answer of POST /v1/batches/{batch}/replay: the new
// batch holding one replay per finished task of the original batch.
type BatchReplay struct {
	// Of is the batch replayed; Batch is the new one.
	Of    string `json:"of"`
	Batch string `json:"batch"`
	// Replays are the tasks started, one per finished task of Of.
	Replays []ReplayStarted `json:"replays"`
	// Skipped counts Of's tasks that had not finished (nothing to replay).
	Skipped int `json:"skipped"`
}

// ReplayStarted is one task of a batch replay.
type ReplayStarted struct {
	Original string `json:"original"`
	// Replay is the new task's id; empty when Error says why none started.
	Replay string `json:"replay,omitempty"`
	Error  string `json:"error,omitempty"`
}
