package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/orchestrator"
)

const logsSynopsis = "TASK [--round N] [-f] [--worker] [--json] [--server URL] [--token TOKEN]"

func runLogs(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return verbExit(stderr, "agora logs", logsMain(ctx, args, environ, stdout))
}

// logsMain prints a round's output (the current round's by default): what
// storage keeps of a round that has ended; with -f a round that has not
// ended is followed live until it ends. --json wraps the output in
// {"task_id", "round", "dispatch_id", "output"}, one object per chunk
// with -f.
func logsMain(ctx context.Context, args, environ []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("agora logs", flag.ContinueOnError)
	a := newAPIFlags(fs)
	round := fs.Int("round", 0, "the round `N` (default: the current round; a respawned round: its latest attempt)")
	var follow bool
	fs.BoolVarP(&follow, "follow", "f", false, "follow a round that has not ended until it ends")
	worker := fs.Bool("worker", false, "also show the worker's own lines (its lifecycle events as JSON); by default only what the sub-agent printed")
	pos, err := parseVerb(fs, logsSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one TASK, e.g. agora logs t-42 -f ('agora status' lists the tasks)")
	}
	if *round < 0 {
		return usagef("--round %d: want a round number (1, 2, …)", *round)
	}
	id := pos[0]
	c, err := a.connect(environ)
	if err != nil {
		return err
	}
	// Read the task first: an unknown task, or round, is said plainly,
	// and --json names the round.
	t, err := c.Get(ctx, id)
	if err != nil {
		return a.explain(err, id)
	}
	r := lastRound(t)
	if *round > 0 {
		r = nil
		for i := range t.Rounds {
			if t.Rounds[i].N == *round {
				r = &t.Rounds[i]
			}
		}
		if r == nil {
			return fmt.Errorf("task %s has no round %d (its rounds are 1 to %d); 'agora status %s' shows them", id, *round, lastRound(t).N, id)
		}
	}
	out := stdout
	var whole *strings.Builder
	if a.json {
		if follow {
			out = jsonChunks{w: stdout, task: id, round: r.N, dispatch: r.DispatchID}
		} else {
			whole = &strings.Builder{}
			out = whole
		}
	}
	var filter *subagentLines
	if !*worker {
		filter = &subagentLines{w: out}
		out = filter
	}
	err = c.Logs(ctx, id, r.N, follow, out)
	if filter != nil {
		if ferr := filter.Flush(); err == nil {
			err = ferr
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return nil // interrupted while following: that is how it ends
	case errors.Is(err, orchestrator.ErrWrongState):
		return fmt.Errorf("round %d of %s is %s: its output is stored when it ends; follow it live with: agora logs %s -f",
			r.N, id, stateLabel(r.State), id)
	case err != nil:
		return a.explain(err, id)
	}
	if whole != nil {
		return writeJSON(stdout, logsJSON{TaskID: id, Round: r.N, DispatchID: r.DispatchID, Output: whole.String()})
	}
	return nil
}

// logsJSON is what logs --json prints.
type logsJSON struct {
	TaskID     string `json:"task_id"`
	Round      int    `json:"round"`
	DispatchID string `json:"dispatch_id"`
	Output     string `json:"output"`
}

// jsonChunks writes each chunk as one logsJSON line.
type jsonChunks struct {
	w        io.Writer
	task     string
	round    int
	dispatch string
}

func (j jsonChunks) Write(p []byte) (int, error) {
	data, err := json.Marshal(logsJSON{TaskID: j.task, Round: j.round, DispatchID: j.dispatch, Output: string(p)})
	if err != nil {
		return 0, err
	}
	if _, err := j.w.Write(append(data, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

// subagentLines passes on what a sub-agent printed and drops the worker's
// own event lines: a round's stored output is the container's, in which the
// worker prints each lifecycle event as one JSON line ({"kind":"dispatch.…",
// …, "mac":"…"}). Lines are passed on whole; Flush writes a last line
// without a newline.
type subagentLines struct {
	w       io.Writer
	partial []byte
}

func (s *subagentLines) Write(p []byte) (int, error) {
	n := len(p)
	data := p
	if len(s.partial) > 0 {
		data = append(s.partial, p...)
		s.partial = nil
	}
	var keep []byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.partial = append([]byte(nil), data...)
			break
		}
		line := data[:i+1]
		data = data[i+1:]
		if !isWorkerLine(line) {
			keep = append(keep, line...)
		}
	}
	if len(keep) > 0 {
		if _, err := s.w.Write(keep); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Flush writes what is left of a last line without a newline.
func (s *subagentLines) Flush() error {
	line := s.partial
	s.partial = nil
	if len(line) == 0 || isWorkerLine(line) {
		return nil
	}
	_, err := s.w.Write(line)
	return err
}

// isWorkerLine tells a worker's event line: a JSON object whose first
// field is a dispatch.* kind (schemas.Event's order).
func isWorkerLine(line []byte) bool {
	line = bytes.TrimSpace(line)
	return bytes.HasPrefix(line, []byte(`{"kind":"dispatch.`)) && bytes.HasSuffix(line, []byte("}")) && json.Valid(line)
}
