package client

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agoradev/agora/wire"
)

// RegisterSubagent registers a sub-agent definition; Registered.Created is
// false when the same definition was registered before.
func (c *Client) RegisterSubagent(ctx context.Context, s wire.Subagent) (wire.Registered, error) {
	var out wire.Registered
	err := c.do(ctx, http.MethodPost, "/v1/subagents", s, &out)
	return out, err
}

// RegisterEnv registers an env bundle (values and secret refs).
func (c *Client) RegisterEnv(ctx context.Context, e wire.Env) (wire.Registered, error) {
	var out wire.Registered
	err := c.do(ctx, http.MethodPost, "/v1/envs", e, &out)
	return out, err
}

// RegisterCapability uploads a capability's tar (registryfile.PackDir makes one
// from a directory).
func (c *Client) RegisterCapability(ctx context.Context, name, description string, archive []byte) (wire.Registered, error) {
	q := url.Values{"name": {name}}
	if description != "" {
		q.Set("description", description)
	}
	path := "/v1/capabilities?" + q.Encode()
	req, err := c.newRequest(ctx, http.MethodPost, path, bytes.NewReader(archive))
	if err != nil {
		return wire.Registered{}, err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	req.Header.Set("Accept", "application/json")
	var out wire.Registered
	err = c.send(req, &out)
	return out, err
}

// Entries returns one page of the latest version of every registered name
// of kind, by name. EntriesAll follows every page.
func (c *Client) Entries(ctx context.Context, kind wire.Kind, opts wire.PageOptions) (wire.EntryList, error) {
	var out wire.EntryList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/"+kindPath(kind), pageQuery(opts)), nil, &out); err != nil {
		return wire.EntryList{}, err
	}
	return out, nil
}

// EntriesAll returns the latest version of every registered name of kind,
// by name, following the pages of Entries.
func (c *Client) EntriesAll(ctx context.Context, kind wire.Kind) ([]*wire.Entry, error) {
	return all(ctx, "", func(cursor string) ([]*wire.Entry, string, error) {
		page, err := c.Entries(ctx, kind, wire.PageOptions{Limit: wire.MaxPageLimit, Cursor: cursor})
		return page.Entries, page.NextCursor, err
	})
}

// Entry returns one entry: NAME (the latest) or NAME@VERSION.
func (c *Client) Entry(ctx context.Context, kind wire.Kind, ref string) (*wire.Entry, error) {
	if ref == "" {
		return nil, fmt.Errorf("agora api: empty %s name", kind)
	}
	var out wire.Entry
	if err := c.do(ctx, http.MethodGet, "/v1/"+kindPath(kind)+"/"+url.PathEscape(ref), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Versions returns one page of the versions of a name, oldest first.
// VersionsAll follows every page.
func (c *Client) Versions(ctx context.Context, kind wire.Kind, name string, opts wire.PageOptions) (wire.EntryList, error) {
	if name == "" {
		return wire.EntryList{}, fmt.Errorf("agora api: empty %s name", kind)
	}
	var out wire.EntryList
	path := "/v1/" + kindPath(kind) + "/" + url.PathEscape(name) + "/versions"
	if err := c.do(ctx, http.MethodGet, withQuery(path, pageQuery(opts)), nil, &out); err != nil {
		return wire.EntryList{}, err
	}
	return out, nil
}

// VersionsAll returns every version of a name, oldest first, following the
// pages of Versions.
func (c *Client) VersionsAll(ctx context.Context, kind wire.Kind, name string) ([]*wire.Entry, error) {
	return all(ctx, "", func(cursor string) ([]*wire.Entry, string, error) {
		page, err := c.Versions(ctx, kind, name, wire.PageOptions{Limit: wire.MaxPageLimit, Cursor: cursor})
		return page.Entries, page.NextCursor, err
	})
}

func kindPath(k wire.Kind) string {
	switch k {
	case wire.KindCapability:
		return "capabilities"
	case wire.KindEnv:
		return "envs"
	}
	return "subagents"
}
