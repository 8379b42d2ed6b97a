package orchestrator

import (
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// questionOf turns a round's question into what answerers are asked.
func questionOf(t *wire.Task, r *wire.Round) answer.Question {
	q := answer.Question{
		TaskID: t.ID, Round: r.N, DispatchID: r.DispatchID,
		Subagent: t.Request.Subagent.Name, SubagentHash: t.SubagentHash,
		AskedAt: r.AskedAt, AllowMemory: t.Request.AllowMemory,
	}
	if r.Question != nil {
		q.Question, q.Options, q.Context, q.Default = r.Question.Question, r.Question.Options, r.Question.Context, r.Question.Default
	}
	return q
}
