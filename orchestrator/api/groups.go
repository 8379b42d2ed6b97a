package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// groupIDPattern is a question group's id (orchestrator's groupID).
var groupIDPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

func checkGroupID(id string) error {
	if !groupIDPattern.MatchString(id) {
		return fmt.Errorf("question group %s: not a group id (24 hex digits); GET /v1/question-groups lists them", quoteID(id))
	}
	return nil
}

// questionGroups serves GET /v1/question-groups[?batch=ID].
func (h *handler) questionGroups(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "batch" {
			h.fail(w, r, invalid(fmt.Sprintf("query: unknown parameter %q; this list takes batch", k)))
			return
		}
	}
	groups, err := h.svc.QuestionGroups(r.Context(), wire.GroupOptions{Batch: q.Get("batch")})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if groups == nil {
		groups = []wire.QuestionGroup{}
	}
	h.write(w, r, http.StatusOK, wire.QuestionGroupList{Groups: groups})
}

// answerGroup serves POST /v1/question-groups/{group}/answer: the answer
// goes to every task of the group whose question is still open.
func (h *handler) answerGroup(w http.ResponseWriter, r *http.Request) {
	body, who, via, ok := h.groupBody(w, r)
	if !ok {
		return
	}
	id := r.PathValue("group")
	groups, err := h.svc.QuestionGroups(r.Context(), wire.GroupOptions{})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	i := slices.IndexFunc(groups, func(g wire.QuestionGroup) bool { return g.ID == id })
	if i < 0 {
		h.fail(w, r, fmt.Errorf("question group %s has no open question (all answered, or never asked): %w", id, wire.ErrNoQuestion))
		return
	}
	res, err := h.answerAll(r.Context(), groups[i], "", body, who, via)
	h.replyGroup(w, r, res, err)
}

// answerAllLike serves POST /v1/tasks/{id}/answer-all-like: the task's open
// question and every one like it (its group) get the answer, the task's
// first.
func (h *handler) answerAllLike(w http.ResponseWriter, r *http.Request) {
	body, who, via, ok := h.groupBody(w, r)
	if !ok {
		return
	}
	taskID := r.PathValue("id")
	t, err := h.svc.Get(r.Context(), taskID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cur := lastRound(t)
	if t.State != wire.StateNeedsInput || cur == nil || cur.Question == nil || cur.Answer != nil {
		h.fail(w, r, fmt.Errorf("task %s is %s: %w", taskID, stateText(t.State), wire.ErrNoQuestion))
		return
	}
	groups, err := h.svc.QuestionGroups(r.Context(), wire.GroupOptions{Batch: t.Request.Labels[wire.BatchLabel]})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	i := slices.IndexFunc(groups, func(g wire.QuestionGroup) bool { return slices.Contains(g.TaskIDs, taskID) })
	if i < 0 { // answered between the two reads
		h.fail(w, r, fmt.Errorf("task %s: %w (answered meanwhile)", taskID, wire.ErrNoQuestion))
		return
	}
	// The answer reads against the task's own question: an option's number
	// is the option at that place in its list.
	g := groups[i]
	g.Options = cur.Question.Options
	res, err := h.answerAll(r.Context(), g, taskID, body, who, via)
	h.replyGroup(w, r, res, err)
}

// groupBody reads a group answer's body and who gives it (by); on a
// mistake it has answered the request and ok is false.
func (h *handler) groupBody(w http.ResponseWriter, r *http.Request) (body wire.AnswerBody, who, via string, ok bool) {
	if err := decode(w, r, &body); err != nil {
		h.fail(w, r, err)
		return body, "", "", false
	}
	if body.Round != 0 {
		h.fail(w, r, invalid("body: round: a group's questions are of different rounds; drop round"))
		return body, "", "", false
	}
	if body.Channel == "" {
		body.Channel = wire.DefaultChannel
	}
	who, via, err := by(r, body.By)
	if err != nil {
		h.fail(w, r, err)
		return body, "", "", false
	}
	return body, who, via, true
}

func (h *handler) answerAll(ctx context.Context, g wire.QuestionGroup, like string, body wire.AnswerBody, who, via string) (wire.GroupAnswerResult, error) {
	return AnswerGroup(ctx, h.svc, g, like, wire.AnswerRequest{Answer: body.Answer, By: who, Via: via, Channel: body.Channel})
}

// AnswerGroup answers every question of g (like's first, when like names
// one of its tasks) with req's answer, by and channel, validated once
// against the group's question: an option's number means the same option
// for every task, whatever the order of its options. A question answered
// or a task ended meanwhile is reported, not fatal. The API's group
// endpoints and the web inbox answer groups through it.
func AnswerGroup(ctx context.Context, svc orchestrator.Service, g wire.QuestionGroup, like string, req wire.AnswerRequest) (wire.GroupAnswerResult, error) {
	value, err := answer.ValidateAnswer(answer.Question{Question: g.Question, Options: g.Options}, req.Answer)
	if err != nil {
		if like != "" {
			return wire.GroupAnswerResult{}, fmt.Errorf("task %s round %d: %v: %w", like, roundOf(g, like), err, wire.ErrInvalidAnswer)
		}
		return wire.GroupAnswerResult{}, fmt.Errorf("question group %s: %v: %w", g.ID, err, wire.ErrInvalidAnswer)
	}
	members := slices.Clone(g.Questions)
	if like != "" {
		slices.SortStableFunc(members, func(a, b wire.GroupMember) int {
			switch {
			case a.TaskID == like:
				return -1
			case b.TaskID == like:
				return 1
			}
			return 0
		})
	}
	res := wire.GroupAnswerResult{Like: like, GroupID: g.ID, Question: g.Question, Options: g.Options, Answer: value,
		Results: make([]wire.GroupAnswerItem, 0, len(members))}
	for _, m := range members {
		item := wire.GroupAnswerItem{TaskID: m.TaskID, Round: m.Round}
		t, err := svc.Answer(ctx, wire.AnswerRequest{TaskID: m.TaskID, Round: m.Round, Answer: value, By: req.By, Via: req.Via, Channel: req.Channel})
		switch {
		case err == nil:
			item.Result, item.State = wire.GroupAnswered, t.State
			res.Answered++
		case errors.Is(err, wire.ErrAlreadyAnswered):
			item.Result, item.Error = wire.GroupAlreadyAnswered, err.Error()
			res.AlreadyAnswered++
		case ctx.Err() != nil:
			return res, ctx.Err()
		default:
			item.Result, item.Error = wire.GroupFailed, err.Error()
			res.Failed++
		}
		res.Results = append(res.Results, item)
	}
	return res, nil
}

func (h *handler) replyGroup(w http.ResponseWriter, r *http.Request, res wire.GroupAnswerResult, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.write(w, r, http.StatusOK, res)
}

func roundOf(g wire.QuestionGroup, taskID string) int {
	for _, m := range g.Questions {
		if m.TaskID == taskID {
			return m.Round
		}
	}
	return 0
}

func lastRound(t *wire.Task) *wire.Round {
	if len(t.Rounds) == 0 {
		return nil
	}
	return &t.Rounds[len(t.Rounds)-1]
}

func stateText(s wire.State) string { return strings.ReplaceAll(string(s), "_", " ") }
