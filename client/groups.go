package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agoradev/agora/wire"
)

// QuestionGroups lists the open questions grouped: the identical questions
// of one batch are one group, answered at once with AnswerGroup.
func (c *Client) QuestionGroups(ctx context.Context, opts wire.GroupOptions) ([]wire.QuestionGroup, error) {
	q := url.Values{}
	if opts.Batch != "" {
		q.Set("batch", opts.Batch)
	}
	var list wire.QuestionGroupList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/question-groups", q), nil, &list); err != nil {
		return nil, err
	}
	return list.Groups, nil
}

// AnswerGroup answers every open question of group groupID. An empty
// body.By is the token's name, an empty body.Channel "api"; body.Round
// must be 0. Questions answered or tasks ended meanwhile are reported in
// the result, not as an error.
func (c *Client) AnswerGroup(ctx context.Context, groupID string, body wire.AnswerBody) (wire.GroupAnswerResult, error) {
	if groupID == "" {
		return wire.GroupAnswerResult{}, fmt.Errorf("agora api: empty question group id: %w", wire.ErrInvalidRequest)
	}
	var res wire.GroupAnswerResult
	err := c.do(ctx, http.MethodPost, "/v1/question-groups/"+url.PathEscape(groupID)+"/answer", body, &res)
	return res, err
}

// AnswerAllLike answers the open question of taskID and every open question
// like it (same batch, same question and options), taskID's first.
func (c *Client) AnswerAllLike(ctx context.Context, taskID string, body wire.AnswerBody) (wire.GroupAnswerResult, error) {
	path, err := taskPath(taskID, "/answer-all-like")
	if err != nil {
		return wire.GroupAnswerResult{}, err
	}
	var res wire.GroupAnswerResult
	err = c.do(ctx, http.MethodPost, path, body, &res)
	return res, err
}
