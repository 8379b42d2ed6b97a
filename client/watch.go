package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// Watch calls fn with each change of task taskID (of every task when taskID
// is empty), in order, from the API's event stream, until ctx ends; then it
// returns ctx's error. It returns earlier with an error when the stream
// cannot be opened or breaks (the API restarted, say), or with an *Error
// when the API's own watch fails. Changes made while no stream is open are
// not replayed: after watching again, Get the task. A removed task's change
// has Removed set and no Task.
func (c *Client) Watch(ctx context.Context, taskID string, fn func(wire.Change)) error {
	s, err := c.openEvents(ctx, taskID)
	if err != nil {
		return err
	}
	defer s.close()
	for {
		ch, err := s.next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		fn(ch)
	}
}

// Wait returns the task once it needs input (state needs_input: a question
// waits for an answer) or has reached a terminal state (finished, failed,
// cancelled, expired) — whichever comes first, at once if it is so already.
// A CI job submits, waits, answers the question if there is one, and waits
// again.
//
// Wait follows the task's event stream and reads the task again every poll
// interval (WithPollInterval) as a safety net. If the stream breaks after it
// was open (a transport error, or a gateway's 502, 503 or 504 while the
// API restarts), Wait reopens it, up to 5 times in a row with growing
// pauses (1s, 2s, 4s, 8s, 16s). A stream that cannot be opened the first
// time, any other answer of the API (an *Error), or the task's removal
// (wire.ErrNotFound) ends it with the error.
func (c *Client) Wait(ctx context.Context, taskID string) (*wire.Task, error) {
	if _, err := taskPath(taskID, ""); err != nil {
		return nil, err
	}
	const maxReopens = 5
	delay, failures, everOpened := c.reopen, 0, false
	for {
		t, opened, err := c.waitStream(ctx, taskID)
		if err == nil {
			return t, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		everOpened = everOpened || opened
		if opened {
			delay, failures = c.reopen, 0
		}
		failures++
		if !everOpened || !retryable(err) {
			return nil, err
		}
		if failures > maxReopens {
			return nil, fmt.Errorf("wait for task %s: the event stream broke and %d reopens failed: %w", taskID, maxReopens, err)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		delay *= 2
	}
}

// retryable reports whether Wait reopens a stream after err: a transport
// error, or a gateway's 502, 503 or 504 while the API restarts. An answer
// of the API itself is final.
func retryable(err error) bool {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return true
	}
	switch e.Status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// settled reports whether Wait returns t.
func settled(t *wire.Task) bool {
	return t.State == wire.StateNeedsInput || t.State.Terminal()
}

// waitStream opens the task's event stream, then reads the task (so no
// change between the two is missed), then follows the stream until the
// task settles or the stream ends. opened says whether the stream opened.
func (c *Client) waitStream(ctx context.Context, taskID string) (t *wire.Task, opened bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.openEvents(ctx, taskID)
	if err != nil {
		return nil, false, err
	}
	defer s.close()
	if t, err = c.Get(ctx, taskID); err != nil || settled(t) {
		return t, true, err
	}

	type item struct {
		change wire.Change
		err    error
	}
	items := make(chan item)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			ch, err := s.next()
			select {
			case items <- item{ch, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		s.close() // unblocks the reader
		<-readerDone
	}()

	poll := time.NewTicker(c.poll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case it := <-items:
			switch {
			case it.err != nil:
				return nil, true, it.err
			case it.change.Removed:
				return nil, true, &Error{Code: string(wire.CodeNotFound),
					Message: fmt.Sprintf("task %s was removed while waiting", taskID)}
			case it.change.Task != nil && settled(it.change.Task):
				return it.change.Task, true, nil
			}
		case <-poll.C:
			if t, err = c.Get(ctx, taskID); err != nil || settled(t) {
				return t, true, err
			}
		}
	}
}

// stream is an open server-sent event stream.
type stream struct {
	body io.ReadCloser
	r    *bufio.Reader
}

// errStreamEnded: the API closed the event stream.
var errStreamEnded = errors.New("agora api: event stream ended")

func (c *Client) openEvents(ctx context.Context, taskID string) (*stream, error) {
	path := "/v1/events"
	if taskID != "" {
		path += "?task=" + url.QueryEscape(taskID)
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("agora api: GET %s: content type %q, want text/event-stream", path, resp.Header.Get("Content-Type"))
	}
	return &stream{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

func (s *stream) close() { _ = s.body.Close() }

// next returns the next task change. An error event is an *Error; events
// of other names are skipped.
func (s *stream) next() (wire.Change, error) {
	var (
		event   string
		data    bytes.Buffer
		hasData bool
	)
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return wire.Change{}, errStreamEnded
			}
			return wire.Change{}, fmt.Errorf("agora api: read event stream: %w", err)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" { // the end of an event
			switch {
			case !hasData:
			case event == wire.EventTask:
				var ch wire.Change
				if err := json.Unmarshal(data.Bytes(), &ch); err != nil {
					return wire.Change{}, fmt.Errorf("agora api: decode task event: %w", err)
				}
				return ch, nil
			case event == wire.EventError:
				var body wire.ErrorBody
				if err := json.Unmarshal(data.Bytes(), &body); err != nil || body.Code == "" {
					return wire.Change{}, &Error{Code: string(wire.CodeInternal), Message: strings.TrimSpace(data.String())}
				}
				return wire.Change{}, &Error{Code: string(body.Code), Message: body.Error}
			}
			event, hasData = "", false
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") { // a comment: the heartbeat
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
}
