package main

// Batches: many tasks submitted from one JSON Lines file under one batch
// id (the label agora.batch), their progress, and their questions grouped —
// identical questions (the memory answerer's notion: normalised text and
// option set, see answer.MemoryKey) of one batch shown once and answered
// once for all of them (answer --all-like).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/cmd/agora/internal/progress"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// batchLabel is the label that holds a task's batch id.
const batchLabel = wire.BatchLabel

// batchWorkers is how many lines batch submit sends at once.
const batchWorkers = 4

const batchUsage = `usage: agora batch submit FILE.jsonl [--batch ID] [--route R] [--json]
       agora batch status ID [--json]
       agora batch results ID
       agora batch cancel ID [--yes] [--json]
       agora batch retry ID [--state STATE] [--yes] [--json]

  submit  submit one task per line of FILE (an orchestrator submit request in
          JSON; - reads stdin); every task is labelled agora.batch=ID (default:
          the file's name) and its id defaults to ID-<line>, so running the
          same file again submits only what is missing
  status  the batch's tasks by state and its open questions, identical ones
          grouped ('agora answer --all-like TASK ANSWER' answers a group)
  results one JSON line per task of the batch, in line order: id, state,
          outcome, result and artifacts
  cancel  cancel the batch's tasks that have not ended (agora cancel --batch ID)
  retry   respawn the batch's failed and expired tasks from their last round
          (agora respawn --batch ID --state failed --state expired; --state
          narrows it); cancelled ones are left alone: somebody meant it
  Both count the tasks first and ask on a terminal; --yes for scripts.
`

// ---- batch submit

const batchSubmitSynopsis = "FILE.jsonl [--batch ID] [--route R] [--json] [--server URL] [--token TOKEN]"

// batchSubmitVerb submits every line of the file. A bad line is reported
// with its number and does not stop the others; nothing accepted is
// undone. Exit 1 when any line failed.
func batchSubmitVerb(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	batch := fs.String("batch", "", "the batch `ID` (default: the file's name without its extension)")
	route := fs.String("route", "", "the route of every line that names none, e.g. memory,human=24h")
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		if len(pos) != 1 {
			return usagef("want one FILE of JSON lines, e.g. agora batch submit tasks.jsonl")
		}
		file := pos[0]
		id := *batch
		if id == "" {
			if file == "-" {
				return usagef("reading stdin, give the batch id with --batch ID")
			}
			id = batchreport.IDFromFile(file)
		}
		if !batchreport.ValidID(id) {
			return usagef("batch id %q: want letters, digits, '-' and '_' (at most 80), starting with a letter or digit; pass --batch ID", id)
		}
		if *route != "" {
			if _, err := wire.ParseRoute(*route); err != nil {
				return usagef("--route %q: %v; e.g. --route memory,lookup,human=30m", *route, err)
			}
		}
		var data []byte
		var err error
		if file == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return usagef("%s: %v", file, unwrapPath(err))
		}
		report := &batchreport.Report{Batch: id, File: file, Results: client.ParseBatch(data, id, *route)}
		report.Lines = len(report.Results)
		if report.Lines == 0 {
			return usagef("%s has no lines; want one submit request (JSON) per line", file)
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		bar := progress.NewBar(stderr, view.New(stderr, environ), id, report.Lines)
		bar.Draw(report)
		err = c.SubmitBatch(ctx, id, report.Results, client.BatchOptions{Workers: batchWorkers,
			Progress: func() { bar.Draw(report) }, Describe: func(err error) string { return a.explain(err, "").Error() }})
		if err != nil {
			return a.explain(err, "")
		}
		report.Count()
		bar.Done(report)

		if err := a.show(stdout, report, func() { view.BatchSummary(stdout, report) }); err != nil {
			return err
		}
		if report.Failed > 0 {
			return exitcode.Outcome{Code: 1, Msg: fmt.Sprintf("%d of %d line%s failed (%s); fix them and run the same command again: the accepted ones are kept",
				report.Failed, report.Lines, view.PluralS(report.Lines), report.FailedLines())}
		}
		return nil
	}
}

func unwrapPath(err error) error {
	if e := errors.Unwrap(err); e != nil {
		return e
	}
	return err
}

// ---- batch cancel, batch retry

const (
	batchBulkSynopsis  = "ID [--yes] [--json] [--server URL] [--token TOKEN]"
	batchRetrySynopsis = "ID [--state STATE] [--yes] [--json] [--server URL] [--token TOKEN]"
)

// retryStates are what batch retry respawns by default: the failed tasks
// and the expired ones (a question nobody answered is asked again);
// cancelled ones were stopped on purpose.
var retryStates = []wire.State{wire.StateFailed, wire.StateExpired}

// batchBulkVerb is batch cancel and batch retry: the bulk verb on the
// batch's tasks.
func batchBulkVerb(name string, op bulkOp) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		a := newAPIFlags(fs)
		yes := fs.Bool("yes", false, op.verb+" them without asking (scripts; without a terminal it is required)")
		var states *[]string
		if op.verb == bulkRespawn.verb {
			states = fs.StringArray("state", nil, "respawn the batch's tasks in `STATE` (repeat; default failed and expired)")
		}
		return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
			if len(pos) != 1 {
				return usagef("want one batch ID, e.g. %s nightly", name)
			}
			sf := selectorFlags{batch: pos[0]}
			if states != nil {
				sf.states = *states
			}
			sel, err := sf.selector()
			if err != nil {
				return err
			}
			if op.verb == bulkRespawn.verb && len(sel.States) == 0 {
				sel.States = retryStates
			}
			c, err := a.connect(environ)
			if err != nil {
				return err
			}
			return bulkMain(ctx, c, a, op, sel, *yes, stdout, stderr)
		}
	}
}

// ---- batch status

const batchStatusSynopsis = "ID [--json] [--server URL] [--token TOKEN]"

// openedBatch is a batch verb's flags, client and every task of the batch.
type openedBatch struct {
	api    *apiFlags
	client *client.Client
	id     string
	tasks  []*wire.Task
}

// batchOpener declares a batch verb's flags on fs; its func takes one
// batch ID and lists every task of the batch; a batch without tasks is an
// error naming the server.
func batchOpener(fs *flag.FlagSet, verb string) func(ctx context.Context, args, environ []string) (*openedBatch, error) {
	a := newAPIVerb(fs)
	return func(ctx context.Context, args, environ []string) (*openedBatch, error) {
		c, pos, err := a.open(args, environ, wantOne(fmt.Sprintf("want one batch ID, e.g. agora batch %s tasks", verb)))
		if err != nil {
			return nil, err
		}
		id := pos[0]
		tasks, _, err := c.ListAll(ctx, wire.ListOptions{Label: batchLabel + "=" + id})
		if err != nil {
			return nil, a.explain(err, "")
		}
		if len(tasks) == 0 {
			return nil, fmt.Errorf("no tasks in batch %s on %s; 'agora batch submit FILE --batch %s' submits them", id, a.server, id)
		}
		return &openedBatch{api: a.apiFlags, client: c, id: id, tasks: tasks}, nil
	}
}

// batchStatusVerb counts the batch's tasks by state and groups their open
// questions.
func batchStatusVerb(fs *flag.FlagSet) runFunc {
	open := batchOpener(fs, "status")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		b, err := open(ctx, args, environ)
		if err != nil {
			return err
		}
		a, c, id, tasks := b.api, b.client, b.id, b.tasks
		st := view.BatchStatus{Batch: id, Tasks: len(tasks), Counts: map[wire.State]int{}}
		for _, t := range tasks {
			st.Counts[t.State]++
		}
		if st.Questions, err = c.QuestionGroups(ctx, wire.GroupOptions{Batch: id}); err != nil {
			return a.explain(err, "")
		}
		return a.show(stdout, st, func() { view.New(stdout, environ).BatchStatus(stdout, st) })
	}
}

// ---- grouped questions

// questionGroup is one question asked identically by one or more tasks of
// one batch; the API groups them (GET /v1/question-groups).
type questionGroup = wire.QuestionGroup

// questionsGroupedMain is questions --group.
func questionsGroupedMain(ctx context.Context, c *client.Client, a *apiFlags, environ []string, stdout io.Writer) error {
	groups, err := c.QuestionGroups(ctx, wire.GroupOptions{})
	if err != nil {
		return a.explain(err, "")
	}
	return a.show(stdout, struct {
		Groups []questionGroup `json:"groups"`
	}{groups}, func() { view.New(stdout, environ).QuestionGroups(stdout, groups, true) })
}

// ---- answer --all-like

// allLikeReport is answer --all-like's --json output: what the API did
// with each question like the task's.
type allLikeReport = wire.GroupAnswerResult

// answerAllLikeMain answers the open question of taskID and every open
// question identical to it (same batch, same question and options) with
// ans: POST /v1/tasks/{id}/answer-all-like.
func answerAllLikeMain(ctx context.Context, c *client.Client, a *apiFlags, taskID, ans, who string, stdout io.Writer) error {
	rep, err := c.AnswerAllLike(ctx, taskID, wire.AnswerBody{Answer: ans, By: who, Channel: "cli"})
	if e, ok := errors.AsType[*client.Error](err); ok && e.Code == string(wire.CodeNoQuestion) {
		return fmt.Errorf("%s; 'agora questions --group' lists the open ones", explain.PlainMessage(e))
	}
	if err != nil {
		return a.explain(err, taskID)
	}
	if err := a.show(stdout, rep, func() { view.AllLike(stdout, rep) }); err != nil {
		return err
	}
	if rep.Failed > 0 {
		return exitcode.Outcome{Code: 1, Msg: fmt.Sprintf("%d of %d questions like %s's were not answered; 'agora questions --group' shows what is still open",
			rep.Failed, len(rep.Results), taskID)}
	}
	return nil
}
