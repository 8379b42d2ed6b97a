package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

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
	// Chosen, ordered and grouped from the cache's open entries: only the
	// view of each group's first question is decoded, for what the group
	// shows of it.
	id := caller(ctx)
	qs := c.openQuestions(id.Admin || id.Answerer, id.Name, opts.Batch)
	groups := []wire.QuestionGroup{}
	index := map[[2]string]int{}
	now := o.now()
	for _, q := range qs {
		k := [2]string{q.batch, q.group} // groupID's hash once a group, not once a question
		i, ok := index[k]
		if !ok {
			t, err := q.task()
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", q.key.id, err)
			}
			r := currentRound(t)
			if r == nil || r.Question == nil {
				continue // cannot be: the entry says it asked
			}
			i = len(groups)
			index[k] = i
			nq := r.Question
			groups = append(groups, wire.QuestionGroup{ID: groupID(q.batch, q.group), Key: q.group, Batch: q.batch, Question: nq.Question,
				Options: nq.Options, Context: nq.Context, Default: nq.Default, AskedAt: r.AskedAt,
				Action: answerAction(t.ID, nq), IfUnanswered: ifUnanswered(t, r, now)})
		}
		g := &groups[i]
		g.Count++
		g.TaskIDs = append(g.TaskIDs, q.key.id)
		g.Questions = append(g.Questions, wire.GroupMember{TaskID: q.key.id, Round: int(q.round),
			Subagent: q.subagent, AskedAt: time.Unix(0, q.asked).UTC(), StepFailures: q.failures})
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
