// Package answer is the answerer seam: who answers a sub-agent's question.
// A task's route is an ordered list of steps ("memory", "lookup",
// "agent:triage", "webhook:https://…", "human"), each with a timeout; the
// orchestrator asks each step in turn. Automatic answerers answer at once or
// decline; human ones notify and return ErrPending, and the answer arrives
// later through the orchestrator's Answer (API, CLI, Slack, web page).
//
// This package holds the interface, the question/reply types, the Resolver
// that turns route steps into answerers, and the implementations, one file
// each: memory, lookup, webhook, agent, human (go.yaml.in/yaml/v3 reads
// lookup rules); answertest holds the conformance suites. The route's syntax
// (wire.ParseRoute) is in package wire, because a task's request carries it
// and the CLI checks it before sending. The orchestrator wires it. What it
// may import: docs/architecture.md.
// docs/answerers.md is the user's guide and the webhook protocol.
package answer

import (
	"context"
	"errors"
	"time"
)

// Question is what an answerer is asked.
type Question struct {
	TaskID     string `json:"task_id"`
	Round      int    `json:"round"`
	DispatchID string `json:"dispatch_id"`
	// Subagent and SubagentHash name the asking sub-agent and pin its
	// definition; memory keys on the hash.
	Subagent     string    `json:"subagent"`
	SubagentHash string    `json:"subagent_hash"`
	Question     string    `json:"question"`
	Options      []string  `json:"options,omitempty"`
	Context      string    `json:"context,omitempty"`
	Default      *string   `json:"default,omitempty"`
	AskedAt      time.Time `json:"asked_at"`
	// AllowMemory: the task lets earlier answers be reused.
	AllowMemory bool `json:"allow_memory"`
}

// Reply is an answer and who gave it.
type Reply struct {
	Answer string `json:"answer"`
	// By names who answered: a person, "memory: answered by alice on task
	// t-3 round 1", "lookup: rules.yaml rule 2", "agent triage (task t-9)",
	// "ops-bot via webhook https://hooks.example.com/agora".
	By string `json:"by"`
}

var (
	// ErrDecline: this answerer has no answer; the next step takes over at once.
	ErrDecline = errors.New("answerer declined")
	// ErrPending: the answerer notified someone and the answer will come
	// through the orchestrator's Answer; the step waits for its timeout.
	ErrPending = errors.New("answer pending")
)

// Answerer answers questions. Ask must respect ctx (the step's timeout).
// It returns a Reply, or ErrDecline, or ErrPending, or another error (the
// step is treated as declined and the error recorded).
type Answerer interface {
	Ask(ctx context.Context, q Question) (Reply, error)
}

// Func adapts a function to Answerer.
type Func func(ctx context.Context, q Question) (Reply, error)

// Ask implements Answerer.
func (f Func) Ask(ctx context.Context, q Question) (Reply, error) { return f(ctx, q) }
