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
			t.ID, id, stateLabel(t.State), t.ID, id)
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
		writeReplay(stdout, final)
	}
	return replayExit(final)
}

// followReplay waits for a replay to end.
func followReplay(ctx context.Context, c *client.Client, t *wire.Task) (*wire.Task, error) {
	final, err := c.Follow(ctx, t, client.FollowOptions{Poll: waitPoll, GiveUp: waitGiveUp})
	if errors.Is(err, client.ErrRemoved) {
		return nil, fmt.Errorf("replay %s was removed while waiting for it", t.ID)
	}
	return final, err
}

// writeReplay prints what a replay found: its verdict and every divergence.
func writeReplay(w io.Writer, t *wire.Task) {
	rp := t.Replay
	if rp == nil {
		fmt.Fprintf(w, "%s is not a replay\n", t.ID)
		return
	}
	fmt.Fprintf(w, "%s replay of %s: %s (%s); %d question%s answered from the recording\n", t.ID, rp.Of, orDash(rp.Verdict), stateLabel(t.State),
		rp.Matched, pluralS(rp.Matched))
	for _, d := range rp.Divergences {
		note := ""
		if !d.Fails(rp.Strict) {
			note = " (reported; --strict makes it fail)"
		}
		fmt.Fprintf(w, "  round %d  %s: %s%s\n", d.Round, d.Kind, d.Detail, note)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// replayExit is 0 for a matched replay, 1 naming the first divergence.
func replayExit(t *wire.Task) error {
	rp := t.Replay
	if rp != nil && rp.Verdict == wire.ReplayMatched {
		return nil
	}
	what := fmt.Sprintf("ended %s", stateLabel(t.State))
	if rp != nil {
		if d := rp.FirstFailing(); d != nil {
			what = d.Kind + ": " + d.Detail
		}
	}
	return exitOutcome{code: exitFailed, msg: fmt.Sprintf("replay %s diverged: %s; 'agora status %s' shows its timeline", t.ID, what, t.ID)}
}

// replayBatchMain replays a batch and, with --wait, summarises the replays.
func replayBatchMain(ctx context.Context, c *client.Client, f replayFlags, stdout, stderr io.Writer) error {
	out, err := c.ReplayBatch(ctx, f.batch, f.req)
	if err != nil {
		return f.api.explain(err, "")
	}
	started := 0
	for _, r := range out.Replays {
		if r.Replay != "" {
			started++
		}
	}
	if !f.wait {
		if f.api.json {
			return writeJSON(stdout, out)
		}
		fmt.Fprintf(stdout, "batch %s replays %s: %d task%s started, %d not finished skipped; 'agora replay --batch %s --wait' summarises when they end\n",
			out.Batch, out.Of, started, pluralS(started), out.Skipped, f.batch)
		for _, r := range out.Replays {
			if r.Error != "" {
				fmt.Fprintf(stdout, "  %s: %s\n", r.Original, r.Error)
			}
		}
		return nil
	}
	ids := make([]string, len(out.Replays))
	for i, r := range out.Replays {
		ids[i] = r.Replay
	}
	finals, errs := c.FollowAll(ctx, ids, client.FollowOptions{Poll: waitPoll, GiveUp: waitGiveUp})
	if f.api.json {
		if err := writeJSON(stdout, struct {
			wire.BatchReplay
			Tasks []*wire.Task `json:"tasks"`
		}{out, finals}); err != nil {
			return err
		}
	}
	matched, failed := 0, []string{}
	for i, r := range out.Replays {
		line := ""
		switch {
		case r.Error != "":
			line = "not started: " + r.Error
		case errors.Is(errs[i], client.ErrRemoved):
			line = fmt.Sprintf("not followed: replay %s was removed while waiting for it", r.Replay)
		case errs[i] != nil:
			line = "not followed: " + errs[i].Error()
		case finals[i].Replay != nil && finals[i].Replay.Verdict == wire.ReplayMatched:
			matched++
			line = "matched"
		default:
			line = strings.TrimPrefix(replayExit(finals[i]).Error(), "replay ")
		}
		if line != "matched" {
			failed = append(failed, r.Original)
		}
		if !f.api.json {
			fmt.Fprintf(stdout, "%s → %s  %s\n", r.Original, orDash(r.Replay), line)
		}
	}
	if !f.api.json {
		fmt.Fprintf(stdout, "batch %s: %d of %d replay%s matched, %d diverged; %d task%s of %s not finished, not replayed\n",
			out.Batch, matched, len(out.Replays), pluralS(len(out.Replays)), len(out.Replays)-matched, out.Skipped, pluralS(out.Skipped), out.Of)
	}
	if len(failed) > 0 {
		return exitOutcome{code: exitFailed, msg: fmt.Sprintf("batch %s: %d replay%s did not match (of %s); 'agora status --batch %s' lists them",
			out.Batch, len(failed), pluralS(len(failed)), strings.Join(clipList(failed, 5), ", "), out.Batch)}
	}
	return nil
}

func clipList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("%d more", len(s)-n))
}

// writeLinks writes, in a task's timeline, the task it was made from, what
// its replay found, and the replays and forks made from it.
func writeLinks(w io.Writer, t *wire.Task) {
	if o := t.Origin; o != nil {
		fmt.Fprintf(w, "%s of %s", o.Kind, o.TaskID)
		if o.Kind == wire.LinkFork {
			fmt.Fprintf(w, " from round %d, answered %q", o.Round, o.Answer)
		}
		fmt.Fprintf(w, " by %s\n", o.By)
	}
	if rp := t.Replay; rp != nil {
		fmt.Fprintf(w, "replay: %s · %d of %d recorded answers used", orDash(rp.Verdict), rp.Matched, len(rp.Recorded))
		if len(rp.Divergences) == 0 {
			fmt.Fprint(w, " · no divergence")
		}
		fmt.Fprintln(w)
		for _, d := range rp.Divergences {
			fmt.Fprintf(w, "  divergence, round %d, %s: %s\n", d.Round, d.Kind, d.Detail)
		}
	}
	if len(t.Derived) > 0 {
		parts := make([]string, len(t.Derived))
		for i, l := range t.Derived {
			parts[i] = l.TaskID + " (" + l.Kind
			if l.Round > 0 {
				parts[i] += fmt.Sprintf(" from round %d", l.Round)
			}
			parts[i] += ")"
		}
		fmt.Fprintf(w, "replays and forks: %s\n", strings.Join(parts, ", "))
	}
}
