package main

// Bulk operations: cancel, respawn and rm of every task a selector picks
// (--batch, --label, --state), and batch cancel|retry. The selection is
// read first, page by page through the API's list, and counted; nothing
// changes until it is confirmed on a terminal or by --yes. Each task is
// then changed through its own endpoint, a few at a time, so the token's
// scope holds for each as for one (docs/orchestrator.md#bulk-operations).

import (
	"context"
	"fmt"
	"io"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/progress"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// selectorFlags are a bulk verb's --batch, --label, --state and --yes.
type selectorFlags struct {
	batch  string
	labels []string
	states []string
	yes    bool
}

func newSelectorFlags(fs *flag.FlagSet, verb string) *selectorFlags {
	s := &selectorFlags{}
	fs.StringVar(&s.batch, "batch", "", "act on the tasks of batch `ID` (the label "+wire.BatchLabel+"=ID)")
	fs.StringArrayVar(&s.labels, "label", nil, "act on the tasks labelled `KEY=VALUE` (repeat: all of them)")
	fs.StringArrayVar(&s.states, "state", nil, "act on the tasks in `STATE` (repeat: any of them)")
	fs.BoolVar(&s.yes, "yes", false, verb+" what the selector picks without asking (scripts; without a terminal it is required)")
	return s
}

func (s *selectorFlags) selector() (client.Selector, error) {
	sel := client.Selector{Batch: s.batch, Labels: s.labels}
	for _, st := range s.states {
		sel.States = append(sel.States, wire.State(st))
	}
	if s.batch != "" && !batchreport.ValidID(s.batch) {
		return sel, usagef("--batch %q: want a batch id (letters, digits, '-' and '_')", s.batch)
	}
	if err := sel.Check(); err != nil {
		return sel, usagef("--%v", err)
	}
	return sel, nil
}

// bulkOp is one verb's bulk form.
type bulkOp struct {
	verb, done string // cancel, cancelled
	// fits reports whether the verb applies to a task in state; the others
	// are left alone and counted, with why.
	fits  func(wire.State) bool
	other string
	call  func(ctx context.Context, c *client.Client, id string) (*wire.Task, error)
}

var (
	bulkCancel = bulkOp{verb: "cancel", done: "cancelled", fits: func(s wire.State) bool { return !s.Terminal() },
		other: "already ended", call: func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) { return c.Cancel(ctx, id) }}
	bulkRespawn = bulkOp{verb: "respawn", done: "respawned", fits: func(s wire.State) bool {
		return s == wire.StateFailed || s == wire.StateCancelled || s == wire.StateExpired
	}, other: "not failed, cancelled or expired", call: func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) { return c.Respawn(ctx, id) }}
	bulkRemove = bulkOp{verb: "remove", done: "removed", fits: func(wire.State) bool { return true },
		call: func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) {
			return nil, c.Remove(ctx, id)
		}}
)

// bulkMain selects, counts, confirms and acts.
func bulkMain(ctx context.Context, c *client.Client, a *apiFlags, op bulkOp, sel client.Selector, yes bool, stdout, stderr io.Writer) error {
	picked, err := c.Select(ctx, sel)
	if err != nil {
		return a.explain(err, "")
	}
	var ids []string
	for _, p := range picked {
		if op.fits(p.State) {
			ids = append(ids, p.TaskID)
		}
	}
	rep := view.BulkReport{Operation: op.verb, Selector: sel.String(), Matched: len(picked), LeftAlone: len(picked) - len(ids), Results: []client.BulkItem{}}
	count := fmt.Sprintf("%d task%s match %s", len(picked), view.PluralS(len(picked)), sel)
	if rep.LeftAlone > 0 {
		count += fmt.Sprintf("; %d %s, left alone", rep.LeftAlone, op.other)
	}
	if len(ids) == 0 {
		return a.show(stdout, rep, func() { fmt.Fprintf(stdout, "%s; nothing to %s\n", count, op.verb) })
	}
	if !yes {
		if err := view.Confirm(os.Stdin, view.IsTTY(os.Stdin), stderr, count, op.verb, len(ids)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stderr, "%s: %s\n", op.verb, count)
	}
	rep.Results = c.Bulk(ctx, ids, client.BulkOptions{Progress: progress.Counter(stderr, op.verb, len(ids))},
		func(ctx context.Context, id string) (*wire.Task, error) { return op.call(ctx, c, id) })
	rep.Count()
	if err := a.show(stdout, rep, func() { view.BulkSummary(stdout, op.done, op.other, rep) }); err != nil {
		return err
	}
	if rep.Failed > 0 {
		return exitcode.Outcome{Code: 1, Msg: fmt.Sprintf("%d of %d task%s not %s; run the same command again for them", rep.Failed, len(ids), view.PluralS(len(ids)), op.done)}
	}
	return nil
}
