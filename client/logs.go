package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Logs copies the output of round round of task taskID (0: the current
// round) to w as it arrives. For a round that has ended it is the stored
// output. With follow, a round that has not ended is followed live until it
// ends, and Logs returns then; without, such a round is
// wire.ErrWrongState. A stream that the API ends with an error
// after the output began returns that error (an *Error with Status 0).
func (c *Client) Logs(ctx context.Context, taskID string, round int, follow bool, w io.Writer) error {
	path, err := taskPath(taskID, "/logs")
	if err != nil {
		return err
	}
	q := url.Values{}
	if round != 0 {
		q.Set("round", strconv.Itoa(round))
	}
	if follow {
		q.Set("follow", "1")
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errorOf(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/plain" {
		return fmt.Errorf("agora api: GET %s: content type %q, want text/plain", path, resp.Header.Get("Content-Type"))
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("agora api: GET %s: %w", path, err)
	}
	// The trailer is read with the end of the body.
	if t := resp.Trailer.Get(wire.TrailerError); t != "" {
		var body wire.ErrorBody
		if json.Unmarshal([]byte(t), &body) != nil || body.Code == "" {
			return &Error{Code: string(wire.CodeInternal), Message: t}
		}
		return &Error{Code: string(body.Code), Message: body.Error}
	}
	return nil
}

// outputTailBytes is about how much of a round's output OutputTail keeps
// while it reads: the last lines are in it.
const outputTailBytes = 64 << 10

// OutputTail returns the last n lines the sub-agent printed in round
// (0: the current one) of task taskID — agora's own marked lines left out
// (schemas.OutputFilter) — and whether there were more. A round that
// printed nothing is no lines. Of a very long last line only its end is
// kept.
func (c *Client) OutputTail(ctx context.Context, taskID string, round, n int) (lines []string, cut bool, err error) {
	tail := &tailBuffer{max: outputTailBytes}
	if err := c.Logs(ctx, taskID, round, false, &schemas.OutputFilter{W: tail}); err != nil {
		return nil, false, err
	}
	text := strings.TrimRight(string(tail.data), "\n")
	if text == "" {
		return nil, false, nil
	}
	lines = strings.Split(text, "\n")
	if len(lines) > n {
		return lines[len(lines)-n:], true, nil
	}
	return lines, false, nil
}

// tailBuffer keeps about the last max bytes written to it (between max
// and twice that).
type tailBuffer struct {
	data []byte
	max  int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.data = append(b.data, p...)
	if len(b.data) > 2*b.max {
		b.data = append(b.data[:0:0], b.data[len(b.data)-b.max:]...)
	}
	return len(p), nil
}
