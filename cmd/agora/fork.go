package main

// agora fork: a new task from round N of a task — its workspace snapshot
// and partial_state — with another answer (docs/replay.md). Parse, call
// the client, render.

import (
	"context"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

const forkSynopsis = "TASK --round N --answer X [--by NAME] [--task-id ID] [--json] [--server URL] [--token TOKEN]"

func forkVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	var req wire.ForkRequest
	fs.IntVar(&req.Round, "round", 0, "the round `N` whose question gets another answer")
	answer := fs.String("answer", "", "the other answer `X` (one of the question's options when it gave options)")
	fs.StringVar(&req.By, "by", "", "who forks, recorded in the timeline (default: the token's name, else $USER)")
	fs.StringVar(&req.TaskID, "task-id", "", "the new task's `ID` (default: generated)")
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		switch {
		case len(pos) != 1:
			return usagef(`want one TASK, e.g. agora fork t-42 --round 1 --answer B ('agora status t-42' shows its rounds)`)
		case req.Round < 1:
			return usagef("--round N: want the round whose question to answer differently, 1 or more ('agora status %s' shows them)", pos[0])
		case !fs.Changed("answer"):
			return usagef(`--answer X: want the other answer, e.g. agora fork %s --round %d --answer B`, pos[0], req.Round)
		}
		req.Answer = *answer
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		t, err := c.Fork(ctx, pos[0], req)
		if err != nil {
			return a.explainOp(ctx, c, err, pos[0])
		}
		return a.show(stdout, t, func() { view.Forked(stdout, t, pos[0], req) })
	}
}
