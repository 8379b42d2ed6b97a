package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/agoradev/agora/wire"
)

// Rules returns one page of the remembered-answer rules the token may see,
// by id. A rule is made by answering with Remember (Answer).
func (c *Client) Rules(ctx context.Context, opts wire.PageOptions) (wire.RuleList, error) {
	var list wire.RuleList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/rules", pageQuery(opts)), nil, &list); err != nil {
		return wire.RuleList{}, err
	}
	return list, nil
}

// RulesAll returns every rule the token may see, following the pages.
func (c *Client) RulesAll(ctx context.Context) ([]wire.Rule, error) {
	return all(ctx, "", func(cursor string) ([]wire.Rule, string, error) {
		page, err := c.Rules(ctx, wire.PageOptions{Limit: wire.MaxPageLimit, Cursor: cursor})
		return page.Rules, page.NextCursor, err
	})
}

// Rule returns one rule by id.
func (c *Client) Rule(ctx context.Context, id string) (*wire.Rule, error) {
	var rule wire.Rule
	if err := c.do(ctx, http.MethodGet, "/v1/rules/"+url.PathEscape(id), nil, &rule); err != nil {
		return nil, err
	}
	return &rule, nil
}

// RemoveRule deletes a rule: the next matching question goes along its
// route again.
func (c *Client) RemoveRule(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/rules/"+url.PathEscape(id), nil, nil)
}
