package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/registry"
)

// RegisterSubagent registers a sub-agent definition; Registered.Created is
// false when the same definition was registered before.
func (c *Client) RegisterSubagent(ctx context.Context, s registry.Subagent) (registry.Registered, error) {
	var out registry.Registered
	err := c.do(ctx, http.MethodPost, "/v1/subagents", s, &out)
	return out, err
}

// RegisterEnv registers an env bundle (values and secret refs).
func (c *Client) RegisterEnv(ctx context.Context, e registry.Env) (registry.Registered, error) {
	var out registry.Registered
	err := c.do(ctx, http.MethodPost, "/v1/envs", e, &out)
	return out, err
}

// RegisterCapability uploads a capability's tar (registry.PackDir makes one
// from a directory).
func (c *Client) RegisterCapability(ctx context.Context, name, description string, archive []byte) (registry.Registered, error) {
	q := url.Values{"name": {name}}
	if description != "" {
		q.Set("description", description)
	}
	path := "/v1/capabilities?" + q.Encode()
	req, err := c.newRequest(ctx, http.MethodPost, path, bytes.NewReader(archive))
	if err != nil {
		return registry.Registered{}, err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	req.Header.Set("Accept", "application/json")
	var out registry.Registered
	err = c.send(req, &out)
	return out, err
}

// Entries returns one page of the latest version of every registered name
// of kind, by name. EntriesAll follows every page.
func (c *Client) Entries(ctx context.Context, kind registry.Kind, opts orchestrator.PageOptions) (api.EntryList, error) {
	var out api.EntryList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/"+kindPath(kind), pageQuery(opts)), nil, &out); err != nil {
		return api.EntryList{}, err
	}
	return out, nil
}

// EntriesAll returns the latest version of every registered name of kind,
// by name, following the pages of Entries.
func (c *Client) EntriesAll(ctx context.Context, kind registry.Kind) ([]*registry.Entry, error) {
	return all(ctx, "", func(cursor string) ([]*registry.Entry, string, error) {
		page, err := c.Entries(ctx, kind, orchestrator.PageOptions{Limit: orchestrator.MaxPageLimit, Cursor: cursor})
		return page.Entries, page.NextCursor, err
	})
}

// Entry returns one entry: NAME (the latest) or NAME@VERSION.
func (c *Client) Entry(ctx context.Context, kind registry.Kind, ref string) (*registry.Entry, error) {
	if ref == "" {
		return nil, fmt.Errorf("agora api: empty %s name", kind)
	}
	var out registry.Entry
	if err := c.do(ctx, http.MethodGet, "/v1/"+kindPath(kind)+"/"+url.PathEscape(ref), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Versions returns one page of the versions of a name, oldest first.
// VersionsAll follows every page.
func (c *Client) Versions(ctx context.Context, kind registry.Kind, name string, opts orchestrator.PageOptions) (api.EntryList, error) {
	if name == "" {
		return api.EntryList{}, fmt.Errorf("agora api: empty %s name", kind)
	}
	var out api.EntryList
	path := "/v1/" + kindPath(kind) + "/" + url.PathEscape(name) + "/versions"
	if err := c.do(ctx, http.MethodGet, withQuery(path, pageQuery(opts)), nil, &out); err != nil {
		return api.EntryList{}, err
	}
	return out, nil
}

// VersionsAll returns every version of a name, oldest first, following the
// pages of Versions.
func (c *Client) VersionsAll(ctx context.Context, kind registry.Kind, name string) ([]*registry.Entry, error) {
	return all(ctx, "", func(cursor string) ([]*registry.Entry, string, error) {
		page, err := c.Versions(ctx, kind, name, orchestrator.PageOptions{Limit: orchestrator.MaxPageLimit, Cursor: cursor})
		return page.Entries, page.NextCursor, err
	})
}

func kindPath(k registry.Kind) string {
	switch k {
	case registry.KindCapability:
		return "capabilities"
	case registry.KindEnv:
		return "envs"
	}
	return "subagents"
}
