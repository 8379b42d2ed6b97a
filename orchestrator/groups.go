package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// QuestionGroupKey is the grouping key of a question: its normalised text
// and option set, as the memory answerer sees them but without the
// sub-agent, so the same question of different sub-agents of one batch is
// one group.
func QuestionGroupKey(question string, options []string) string {
	return answer.MemoryKey(answer.Question{Question: question, Options: options})
}

// groupID names the group of key in batch.
func groupID(batch, key string) string {
	sum := sha256.Sum256([]byte("agora-group-v1\x00" + batch + "\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// QuestionGroups returns the open questions grouped by batch and
// QuestionGroupKey, the groups in the order of their oldest question, the
// questions of a group oldest first.
func (o *Orchestrator) QuestionGroups(ctx context.Context, opts wire.GroupOptions) ([]wire.QuestionGroup, error) {
	c, err := o.listing(ctx)
	if err != nil {
		return nil, err
	}
	// Chosen and ordered from the cache's open entries; only the views
	// of the questions grouped are decoded.
	var picked []keyedOpen
	id := caller(ctx)
	c.eachOpen(func(t openTask) {
		if !t.waitsOnQuestion(t.state) || !id.seesOwner(t.owner) {
			return
		}
		if opts.Batch != "" && !labelIs(t.labels, wire.BatchLabel, opts.Batch) {
			return
		}
		picked = append(picked, keyedOpen{sortKey{t.asked, t.id}, t.openEntry})
	})
	slices.SortFunc(picked, func(a, b keyedOpen) int { return a.key.compare(b.key) })
	type open struct {
		t *wire.Task
		r *wire.Round
	}
	qs := make([]open, 0, len(picked))
	for _, p := range picked {
		t, err := p.e.task()
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", p.key.id, err)
		}
		if r := currentRound(t); r != nil && r.Question != nil {
			qs = append(qs, open{t, r})
		}
	}
	groups := []wire.QuestionGroup{}
	index := map[string]int{}
	for _, q := range qs {
		batch := q.t.Request.Labels[wire.BatchLabel]
		key := QuestionGroupKey(q.r.Question.Question, q.r.Question.Options)
		id := groupID(batch, key)
		i, ok := index[id]
		if !ok {
			i = len(groups)
			index[id] = i
			nq := q.r.Question
			groups = append(groups, wire.QuestionGroup{ID: id, Key: key, Batch: batch, Question: nq.Question,
				Options: nq.Options, Context: nq.Context, Default: nq.Default, AskedAt: q.r.AskedAt,
				Action: answerAction(q.t.ID, nq), IfUnanswered: ifUnanswered(q.t, q.r, o.now())})
		}
		g := &groups[i]
		g.Count++
		g.TaskIDs = append(g.TaskIDs, q.t.ID)
		g.Questions = append(g.Questions, wire.GroupMember{TaskID: q.t.ID, Round: q.r.N,
			Subagent: q.t.Request.Subagent.Name, AskedAt: q.r.AskedAt, StepFailures: stepFailures(q.r)})
		if g.Count == 2 {
			g.Action = allLikeAction(g.Action, g.TaskIDs[0], g.Options)
		}
	}
	return groups, nil
}

// allLikeAction turns a question's answer command into the one that
// answers all the questions like it.
func allLikeAction(action, taskID string, options []string) string {
	if rest, ok := strings.CutPrefix(action, "agora answer "); ok {
		return "agora answer --all-like " + rest
	}
	ans := "<answer>"
	if len(options) > 0 {
		ans = options[0]
	}
	return "agora answer --all-like " + taskID + " " + ans
}
