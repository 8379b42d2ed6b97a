package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// request compiles round r of t into its dispatch request: the same
// sub-agent pinned by hash, the same bundles, the original input plus the
// answer, the resume (question, answer, partial_state, history) and the
// previous round's workspace. Pure.
func (o *Orchestrator) request(t *wire.Task, r *wire.Round) schemas.DispatchRequest {
	req := t.Request
	sub := req.Subagent
	sub.Version = t.SubagentHash
	spec := schemas.DispatchSpec{
		DispatchID: r.DispatchID, TaskID: t.ID, Round: r.N, Subagent: sub,
		Input: req.Input, Capabilities: req.Capabilities, Env: req.Env, TimeoutSeconds: req.TimeoutSeconds,
	}
	var prev *wire.Round
	for i := range t.Rounds {
		if t.Rounds[i].N == r.N-1 && t.Rounds[i].Answer != nil {
			prev = &t.Rounds[i]
		}
	}
	if prev != nil {
		res := &schemas.Resume{Answer: prev.Answer.Value}
		if q := prev.Question; q != nil {
			res.Question, res.Options, res.Context = q.Question, q.Options, q.Context
			res.PartialState, res.PartialStateRef = q.PartialState, q.PartialStateRef
		} else {
			res.Question = "(follow-up after the task finished)"
		}
		for i := range t.Rounds {
			h := &t.Rounds[i]
			if h.N < r.N && h.Answer != nil && (i == len(t.Rounds)-1 || t.Rounds[i+1].N != h.N) {
				q := "(follow-up after the task finished)"
				if h.Question != nil {
					q = h.Question.Question
				}
				res.History = append(res.History, schemas.HistoryEntry{Round: h.N, Question: q, Answer: h.Answer.Value})
			}
		}
		spec.Resume = res
		spec.Input = withAnswer(req.Input, prev.Answer.Value)
	}
	dr := schemas.DispatchRequest{Spec: spec, Image: req.Image, Network: req.Network, Egress: req.Egress, Resources: req.Resources}
	if req.Workspace == schemas.WorkspaceFresh {
		dr.Workspace = &schemas.WorkspaceRequest{Mode: schemas.WorkspaceFresh}
	} else if prev != nil && prev.Question != nil {
		dr.Workspace = &schemas.WorkspaceRequest{Mode: schemas.WorkspacePersist, RestoreFrom: prev.DispatchID}
	}
	return dr
}

// withAnswer is the original input object plus "answer".
func withAnswer(input json.RawMessage, answer string) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(input) > 0 {
		_ = json.Unmarshal(input, &obj)
	}
	a, _ := json.Marshal(answer)
	obj["answer"] = a
	out, _ := json.Marshal(obj)
	return out
}

// enqueue puts the task's current round on the queue, publishes
// dispatch.accepted and sets the round's outbox flag.
func (o *Orchestrator) enqueue(ctx context.Context, t *wire.Task) (*wire.Task, error) {
	r := currentRound(t)
	req := o.request(t, r)
	if _, err := o.cfg.Bus.Enqueue(ctx, req); err != nil {
		return nil, fmt.Errorf("enqueue round %d of %s: %w", r.N, t.ID, err)
	}
	if err := o.cfg.Bus.PublishAccepted(ctx, &req.Spec); err != nil {
		o.log.Warn("publish dispatch.accepted", "dispatch_id", r.DispatchID, "error", err)
	}
	id := r.DispatchID
	if _, err := o.store.index.Put(ctx, id, []byte(t.ID)); err != nil {
		o.log.Warn("index dispatch", "dispatch_id", id, "error", err)
	}
	// From t as the caller has it: most often just written (its revision
	// current), so no read first; a task changed since is read again.
	return o.store.updateFrom(ctx, t.ID, t, func(t *wire.Task) error {
		for i := range t.Rounds {
			if t.Rounds[i].DispatchID == id {
				if t.Rounds[i].Enqueued {
					return errNoChange
				}
				t.Rounds[i].Enqueued = true
				return nil
			}
		}
		return errNoChange
	})
}
