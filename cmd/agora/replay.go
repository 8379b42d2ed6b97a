package main

// agora replay: run a finished task (or a batch's) again from round 1,
// answering from the recorded answers (docs/replay.md). Parse, call the
// client, render.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/follow"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

const replaySynopsis = "TASK | --batch BATCH [--subagent NAME@VERSION] [--strict] [--task-id ID] [--wait] [--json] [--server URL] [--token TOKEN]"

type replayFlags struct {
	api      *apiFlags
	batch    string
	wait     bool
	req      wire.ReplayRequest
	taskArgs []string
}

// replayVerb declares agora replay's flags on fs.
func replayVerb(fs *flag.FlagSet) runFunc {
	f := &replayFlags{api: newAPIFlags(fs)}
	fs.StringVar(&f.batch, "batch", "", "replay every finished task of `BATCH` into a new batch, and summarise")
	fs.StringVar(&f.req.SubagentRef, "subagent", "", "run this registered sub-agent `NAME@VERSION` (or NAME, its newest) instead of the original's pinned one")
	fs.BoolVar(&f.req.Strict, "strict", false, "a different result fails the replay too (by default it is reported only)")
	fs.StringVar(&f.req.TaskID, "task-id", "", "the new task's `ID` (default: generated)")
	fs.BoolVar(&f.wait, "wait", false, "follow the replay to its end; exit 0 only when it matched, 1 naming the first divergence")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		if err := f.check(args); err != nil {
			return err
		}
		return replayMain(ctx, *f, environ, stdout, stderr)
	}
}

// check takes the arguments: one TASK, or none with --batch.
func (f *replayFlags) check(pos []string) error {
	f.taskArgs = pos
	switch {
	case f.batch != "" && len(pos) > 0:
		return usagef("give one TASK or --batch BATCH, not both")
	case f.batch != "" && f.req.TaskID != "":
		return usagef("--task-id names one task; a batch replay names its tasks <new batch>-<task>")
	case f.batch == "" && len(pos) != 1:
		return usagef("want one TASK, e.g. agora replay t-42 --wait, or --batch BATCH ('agora status' lists the tasks)")
	}
	return nil
}

func replayMain(ctx context.Context, f replayFlags, environ []string, stdout, stderr io.Writer) error {
	c, err := f.api.connect(environ)
	if err != nil {
		return err
	}
	if f.batch != "" {
		return replayBatchMain(ctx, c, f, stdout, stderr)
	}
	id := f.taskArgs[0]
	t, err := c.Replay(ctx, id, f.req)
	if err != nil {
		return f.api.explainOp(ctx, c, err, id)
	}
	if !f.wait {
		if f.api.json {
			return writeJSON(stdout, t)
		}
		fmt.Fprintf(stdout, "%s replays %s: %s; 'agora status %s' shows what it finds, 'agora replay %s --wait' waits for it\n",
			t.ID, id, view.StateLabel(t.State), t.ID, id)
		return nil
	}
	final, err := followReplay(ctx, c, t)
	if err != nil {
		return f.api.explain(err, t.ID)
	}
	if f.api.json {
		if err := writeJSON(stdout, final); err != nil {
			return err
		}
	} else {
		view.Replay(stdout, final)
	}
	return replayExit(final)
}

// followReplay waits for a replay to end.
func followReplay(ctx context.Context, c *client.Client, t *wire.Task) (*wire.Task, error) {
	final, err := c.Follow(ctx, t, client.FollowOptions{Poll: follow.Poll, GiveUp: follow.GiveUp})
	if errors.Is(err, client.ErrRemoved) {
		return nil, fmt.Errorf("replay %s was removed while waiting for it", t.ID)
	}
	return final, err
}

// replayExit is 0 for a matched replay, 1 naming the first divergence.
func replayExit(t *wire.Task) error {
	if msg := view.ReplayVerdict(t); msg != "" {
		return exitcode.Outcome{Code: exitFailed, Msg: msg}
	}
	return nil
}

// replayBatchMain replays a batch and, with --wait, summarises the replays.
func replayBatchMain(ctx context.Context, c *client.Client, f replayFlags, stdout, stderr io.Writer) error {
	out, err := c.ReplayBatch(ctx, f.batch, f.req)
	if err != nil {
		return f.api.explain(err, "")
	}
	if !f.wait {
		return f.api.show(stdout, out, func() { view.ReplayBatchStarted(stdout, out, f.batch) })
	}
	ids := make([]string, len(out.Replays))
	for i, r := range out.Replays {
		ids[i] = r.Replay
	}
	finals, errs := c.FollowAll(ctx, ids, client.FollowOptions{Poll: follow.Poll, GiveUp: follow.GiveUp})
	text := stdout // the summary; with --json the tasks instead
	if f.api.json {
		text = io.Discard
		if err := writeJSON(stdout, struct {
			wire.BatchReplay
			Tasks []*wire.Task `json:"tasks"`
		}{out, finals}); err != nil {
			return err
		}
	}
	failed := view.ReplayBatch(text, out, finals, errs)
	if len(failed) > 0 {
		return exitcode.Outcome{Code: exitFailed, Msg: fmt.Sprintf("batch %s: %d replay%s did not match (of %s); 'agora status --batch %s' lists them",
			out.Batch, len(failed), view.PluralS(len(failed)), strings.Join(view.ClipList(failed, 5), ", "), out.Batch)}
	}
	return nil
}
