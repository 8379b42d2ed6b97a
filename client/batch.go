package client

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// BatchLine is one line of a batch file and what became of it.
type BatchLine struct {
	Line   int    `json:"line"`
	TaskID string `json:"task_id,omitempty"`
	// Result is submitted, existing (the task was there already) or
	// failed; empty until SubmitBatch has dealt with the line.
	Result string     `json:"result"`
	State  wire.State `json:"state,omitempty"`
	Error  string     `json:"error,omitempty"`
	// Conflict is set when the line's task id is taken by a different
	// request: the fields that differ (empty when the server does not
	// say, e.g. another owner's task).
	Conflict *Conflict `json:"conflict,omitempty"`
	// Request is the line's submit request; nil when the line is failed.
	Request *wire.SubmitRequest `json:"-"`
}

// Conflict is what differs between a batch line and the task stored
// under its id.
type Conflict struct {
	Differences []wire.Difference `json:"differences"`
	More        int               `json:"more,omitempty"`
}

// Results of a batch line.
const (
	BatchSubmitted = "submitted"
	BatchExisting  = "existing"
	BatchFailed    = "failed"
)

// ParseBatch reads a batch file — one submit request (JSON) per line,
// blank lines skipped — into its lines: each request gets the batch's
// label (wire.BatchLabel), the task id BATCH-LINE when it names none, and
// route when it names none. A line that does not read, claims another
// batch or repeats a task id is failed with a one-line error naming the
// fix; the others carry their Request. Nothing is sent.
func ParseBatch(data []byte, batch, route string) []BatchLine {
	var out []BatchLine
	ids := map[string]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		l := BatchLine{Line: n}
		req, err := decodeBatchLine(raw)
		if err != nil {
			l.Result, l.Error = BatchFailed, err.Error()
			out = append(out, l)
			continue
		}
		if req.TaskID == "" {
			req.TaskID = fmt.Sprintf("%s-%d", batch, n)
		}
		l.TaskID = req.TaskID
		if req.Route == "" {
			req.Route = route
		}
		if v, ok := req.Labels[wire.BatchLabel]; ok && v != batch {
			l.Result, l.Error = BatchFailed, fmt.Sprintf("label %s is %q, not this batch's %q; drop the label or pass --batch %s", wire.BatchLabel, v, batch, v)
			out = append(out, l)
			continue
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[wire.BatchLabel] = batch
		if first, dup := ids[req.TaskID]; dup {
			l.Result, l.Error = BatchFailed, fmt.Sprintf("task id %s is line %d's already; give the line another task_id", req.TaskID, first)
			out = append(out, l)
			continue
		}
		ids[req.TaskID] = n
		l.Request = &req
		out = append(out, l)
	}
	return out
}

// decodeBatchLine reads one line: one JSON object of known fields, read
// as the server reads it (schemas.DecodeKnown: exact names, JSON Schema
// integers, no duplicate keys).
func decodeBatchLine(raw []byte) (wire.SubmitRequest, error) {
	var req wire.SubmitRequest
	err := schemas.DecodeKnown("submit request", raw, &req)
	if err == nil {
		return req, nil
	}
	ve, ok := errors.AsType[*schemas.ValidationError](err)
	if !ok || len(ve.Problems) == 0 {
		return req, err
	}
	p := ve.Problems[0]
	switch {
	case p.Pointer == "" && strings.HasPrefix(p.Message, "expected an object, got "):
		return req, fmt.Errorf("not a JSON object (%s); want one submit request per line", strings.TrimPrefix(p.Message, "expected an object, got "))
	case strings.HasPrefix(p.Message, "not valid JSON: unexpected data after the JSON value"):
		return req, errors.New("more than one JSON value on the line")
	case p.Message == "not valid JSON: the document ends early":
		return req, errors.New("bad JSON: the line ends inside a value")
	case strings.HasPrefix(p.Message, "not valid JSON"):
		_, why, _ := strings.Cut(p.Message, ": ") // "not valid JSON at byte N: why"
		return req, fmt.Errorf("bad JSON: %s", why)
	case strings.HasPrefix(p.Message, "unknown field"):
		return req, fmt.Errorf("%s (docs/api.md)", ve.Detail())
	}
	return req, errors.New(ve.Detail())
}

// BatchOptions tune SubmitBatch.
type BatchOptions struct {
	// Workers is how many lines are sent at once (default 4).
	Workers int
	// Progress is called after each line is dealt with, one call at a
	// time.
	Progress func()
	// Describe words a submit error for the line's Error (default
	// err.Error()).
	Describe func(error) string
}

// SubmitBatch submits the lines of batch that read (ParseBatch), Workers at
// a time, and records in each what became of it: a line whose task the
// batch already holds is existing, not submitted again, so running the
// same file twice submits only what is missing. A line that fails does
// not stop the others, and nothing accepted is undone; lines not sent
// because ctx ended are failed with a note to run again. The error is
// only for listing the batch's tasks beforehand.
func (c *Client) SubmitBatch(ctx context.Context, batch string, lines []BatchLine, opts BatchOptions) error {
	existing, _, err := c.ListAll(ctx, wire.ListOptions{Label: wire.BatchLabel + "=" + batch})
	if err != nil {
		return err
	}
	there := make(map[string]bool, len(existing))
	for _, t := range existing {
		there[t.ID] = true
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	progress := func() {}
	if opts.Progress != nil {
		progress = opts.Progress
	}
	describe := func(err error) string { return err.Error() }
	if opts.Describe != nil {
		describe = opts.Describe
	}
	const interrupted = "interrupted before it was submitted; run the same command again to go on"
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Go(func() {
			for i := range work {
				l := lines[i]
				t, err := c.Submit(ctx, *l.Request)
				mu.Lock()
				switch {
				case err != nil:
					l.Result, l.Error = BatchFailed, describe(err)
					if e, ok := errors.AsType[*Error](err); ok && errors.Is(err, wire.ErrConflict) {
						l.Conflict = &Conflict{Differences: e.Differences, More: e.MoreDifferences}
					}
				case there[t.ID]:
					l.Result, l.State = BatchExisting, t.State
				default:
					l.Result, l.State = BatchSubmitted, t.State
				}
				lines[i] = l
				progress()
				mu.Unlock()
			}
		})
	}
	for i, l := range lines {
		if l.Request == nil {
			continue
		}
		if ctx.Err() != nil {
			mu.Lock()
			lines[i].Result, lines[i].Error = BatchFailed, interrupted
			mu.Unlock()
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			mu.Lock()
			lines[i].Result, lines[i].Error = BatchFailed, interrupted
			mu.Unlock()
		}
	}
	close(work)
	wg.Wait()
	return nil
}

// SortBatchTasks orders the tasks of a batch as the lines of its file:
// their ids (BATCH-N) with runs of digits compared as numbers, so that
// b-2 comes before b-10.
func SortBatchTasks(tasks []*wire.Task) {
	slices.SortFunc(tasks, func(x, y *wire.Task) int { return CompareNatural(x.ID, y.ID) })
}

// CompareNatural orders strings with their runs of digits compared as
// numbers (leading zeros ignored): b-2 before b-10.
func CompareNatural(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of s's leading run of ASCII digits.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
