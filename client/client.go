// Package client is the Go client of agora's HTTP API (package
// orchestrator/api) for integrators: submit tasks, read them, answer their
// questions, cancel, respawn, continue and remove them, read or follow a
// round's output, watch their changes and wait for them to settle. Its
// methods mirror orchestrator.Service and speak the types of package wire;
// its errors match wire's sentinel errors (the orchestrator's) with
// errors.Is, as if the orchestrator were in process.
//
// Its registry methods register and read sub-agents, capabilities and env
// bundles.
//
// It links no NATS, AWS or Docker package (docs/architecture.md;
// test/arch and TestClientDependencies hold that), so a Slack app or a web
// service can import it cheaply.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// DefaultPollInterval is how often Wait reads the task again while its
// event stream is quiet.
const DefaultPollInterval = 30 * time.Second

// Client calls one agora API. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	poll  time.Duration
	// reopen is Wait's first pause before reopening a broken stream.
	reopen time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (transport, TLS, proxies). It should
// have no Timeout: that would cut Watch and Wait short. Bound each call with
// its context instead. The default is a new http.Client on
// http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc = hc }
}

// WithPollInterval sets how often Wait reads the task again while its event
// stream is quiet, a safety net for a change made while the stream was
// being opened. Default DefaultPollInterval.
func WithPollInterval(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.poll = d
		}
	}
}

// New returns a client of the API at baseURL (e.g. "http://127.0.0.1:7070")
// that sends token as its bearer token; an empty token sends none (an API
// without tokens, on loopback).
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: &http.Client{},
		poll: DefaultPollInterval, reopen: time.Second}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Submit creates a task, or returns the existing one when req.TaskID names
// a task submitted with the same request (wire.ErrConflict when the
// request differs).
func (c *Client) Submit(ctx context.Context, req wire.SubmitRequest) (*wire.Task, error) {
	var t wire.Task
	if err := c.do(ctx, http.MethodPost, "/v1/tasks", req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Health asks the server whether it is up (GET /healthz, which takes no
// token): nil when it answers {"status":"ok"}.
func (c *Client) Health(ctx context.Context) error {
	var h wire.Health
	if err := c.do(ctx, http.MethodGet, "/healthz", nil, &h); err != nil {
		return err
	}
	if h.Status != "ok" {
		return fmt.Errorf("agora api: GET /healthz: status %q, want \"ok\"", h.Status)
	}
	return nil
}

// Get returns one task.
func (c *Client) Get(ctx context.Context, taskID string) (*wire.Task, error) {
	return c.task(ctx, http.MethodGet, taskID, "", nil)
}

// List returns one page of the tasks matching opts, newest first, in their
// list view (no request input, no partial_state: Get a task for those),
// and the counts of all tasks by state. opts.Limit bounds the page (0: the
// server's default, 100); pass the page's NextCursor as opts.Cursor for
// the next one. ListAll follows every page.
func (c *Client) List(ctx context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
	q := pageQuery(wire.PageOptions{Limit: opts.Limit, Cursor: opts.Cursor})
	if opts.State != "" {
		q.Set("state", string(opts.State))
	}
	if opts.Label != "" {
		q.Set("label", opts.Label)
	}
	var list wire.TaskList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/tasks", q), nil, &list); err != nil {
		return wire.TaskPage{}, err
	}
	return list, nil
}

// ListAll follows List's pages from opts.Cursor (empty: the first) to the
// last, opts.Limit tasks a request (0: the most the server allows), and
// returns every task and the counts of the last page. Tasks submitted
// meanwhile are not in it (the list is newest first); none is listed
// twice.
func (c *Client) ListAll(ctx context.Context, opts wire.ListOptions) ([]*wire.Task, wire.Summary, error) {
	var summary wire.Summary
	if opts.Limit == 0 {
		opts.Limit = wire.MaxPageLimit
	}
	tasks, err := all(ctx, opts.Cursor, func(cursor string) ([]*wire.Task, string, error) {
		o := opts
		o.Cursor = cursor
		page, err := c.List(ctx, o)
		summary = page.Summary
		return page.Tasks, page.NextCursor, err
	})
	return tasks, summary, err
}

// Questions returns one page of the open questions, oldest first.
// QuestionsAll follows every page.
func (c *Client) Questions(ctx context.Context, opts wire.PageOptions) (wire.QuestionPage, error) {
	var list wire.QuestionList
	if err := c.do(ctx, http.MethodGet, withQuery("/v1/questions", pageQuery(opts)), nil, &list); err != nil {
		return wire.QuestionPage{}, err
	}
	return list, nil
}

// QuestionsAll returns every open question, oldest first, following the
// pages of Questions.
func (c *Client) QuestionsAll(ctx context.Context) ([]wire.QuestionView, error) {
	return all(ctx, "", func(cursor string) ([]wire.QuestionView, string, error) {
		page, err := c.Questions(ctx, wire.PageOptions{Limit: wire.MaxPageLimit, Cursor: cursor})
		return page.Questions, page.NextCursor, err
	})
}

// all collects the items of every page from cursor on; page reads one.
func all[T any](ctx context.Context, cursor string, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var out []T
	for {
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		if next == cursor {
			return nil, fmt.Errorf("agora api: the server gave the same cursor twice (%q)", next)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cursor = next
	}
}

// pageQuery is the query of one page: limit and cursor, when set.
func pageQuery(p wire.PageOptions) url.Values {
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// Answer answers the open question of req.TaskID. An empty req.By is the
// token's name (or "api"), an empty req.Channel "api"; a non-zero req.Round
// must be the round whose question is open. A late answer is
// wire.ErrAlreadyAnswered, with who answered when in the message.
func (c *Client) Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, req.TaskID, "/answer",
		wire.AnswerBody{Answer: req.Answer, Round: req.Round, By: req.By, Channel: req.Channel, Remember: req.Remember})
}

// Cancel ends a queued, running or waiting task.
func (c *Client) Cancel(ctx context.Context, taskID string) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, taskID, "/cancel", nil)
}

// Respawn starts a failed, cancelled or expired task again from its last
// round.
func (c *Client) Respawn(ctx context.Context, taskID string) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, taskID, "/respawn", nil)
}

// Continue starts a new round of a finished task with message as the
// answer; an empty by is the token's name (or "api").
func (c *Client) Continue(ctx context.Context, taskID, message, by string) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, taskID, "/continue", wire.ContinueBody{Message: message, By: by})
}

// Remove deletes a task and its stored data.
func (c *Client) Remove(ctx context.Context, taskID string) error {
	path, err := taskPath(taskID, "")
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil)
}

// task calls an endpoint of one task that answers with the task.
func (c *Client) task(ctx context.Context, method, taskID, suffix string, body any) (*wire.Task, error) {
	path, err := taskPath(taskID, suffix)
	if err != nil {
		return nil, err
	}
	var t wire.Task
	if err := c.do(ctx, method, path, body, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func taskPath(taskID, suffix string) (string, error) {
	if taskID == "" {
		return "", fmt.Errorf("agora api: empty task id: %w", wire.ErrInvalidRequest)
	}
	return "/v1/tasks/" + url.PathEscape(taskID) + suffix, nil
}

// do sends body (JSON, when not nil) and decodes a 2xx response into out
// (when not nil); any other status is an *Error.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("agora api: %s %s: encode request: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := c.newRequest(ctx, method, path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// send sends req and decodes a 2xx response into out (when not nil); any
// other status is an *Error.
func (c *Client) send(req *http.Request, out any) error {
	method, path := req.Method, req.URL.Path
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorOf(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("agora api: %s %s: decode response: %w", method, path, err)
	}
	return nil
}

func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("agora api: %s %s: %w", method, path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// Error is an error response of the API.
type Error struct {
	// Status is the HTTP status; 0 for an error sent inside an event
	// stream.
	Status int
	// Code is the API's error code (wire.Code: not_found, conflict, invalid,
	// invalid_answer, already_answered, no_question, wrong_state,
	// unauthorized, no_route, internal); empty when the response was not
	// the API's (a proxy's error page, say).
	Code string
	// Message is the API's message, e.g. "task t-42: task not found".
	Message string
	// Differences, on a conflict, are the fields in which a submit request
	// differs from the one stored under its task id (wire.ConflictError);
	// MoreDifferences counts those past wire.MaxDifferences.
	Differences     []wire.Difference
	MoreDifferences int
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("agora api: %s (HTTP %d)", e.Message, e.Status)
	}
	if e.Status == 0 {
		return fmt.Sprintf("agora api: %s (%s)", e.Message, e.Code)
	}
	return fmt.Sprintf("agora api: %s (HTTP %d, %s)", e.Message, e.Status, e.Code)
}

// Is reports whether target is the orchestrator sentinel error of e's code,
// so errors.Is(err, wire.ErrNotFound) holds for a not_found
// response.
func (e *Error) Is(target error) bool {
	s := wire.Code(e.Code).Sentinel()
	return s != nil && s == target
}

// errorOf reads an error response.
func errorOf(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body wire.ErrorBody
	if json.Unmarshal(data, &body) == nil && body.Code != "" {
		return &Error{Status: resp.StatusCode, Code: string(body.Code), Message: body.Error,
			Differences: body.Differences, MoreDifferences: body.MoreDifferences}
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Status: resp.StatusCode, Message: msg}
}

// Replay starts a new task that runs the finished task taskID again from
// round 1, answering each question with the answer recorded for it
// (docs/replay.md); the new task's Replay says what it found once it ends.
func (c *Client) Replay(ctx context.Context, taskID string, req wire.ReplayRequest) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, taskID, "/replay", req)
}

// ReplayBatch replays every finished task of batch into a new batch.
func (c *Client) ReplayBatch(ctx context.Context, batch string, req wire.ReplayRequest) (wire.BatchReplay, error) {
	var out wire.BatchReplay
	if batch == "" {
		return out, fmt.Errorf("agora api: empty batch id: %w", wire.ErrInvalidRequest)
	}
	err := c.do(ctx, http.MethodPost, "/v1/batches/"+url.PathEscape(batch)+"/replay", req, &out)
	return out, err
}

// Fork starts a new task from round req.Round of taskID — that round's
// workspace snapshot and partial_state — with req.Answer as its answer.
func (c *Client) Fork(ctx context.Context, taskID string, req wire.ForkRequest) (*wire.Task, error) {
	return c.task(ctx, http.MethodPost, taskID, "/fork", req)
}
