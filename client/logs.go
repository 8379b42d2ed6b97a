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
