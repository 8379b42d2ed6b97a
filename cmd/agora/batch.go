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
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
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
		bar := newBatchBar(stderr, environ, id, report.Lines)
		bar.draw(report)
		err = c.SubmitBatch(ctx, id, report.Results, client.BatchOptions{Workers: batchWorkers,
			Progress: func() { bar.draw(report) }, Describe: func(err error) string { return a.explain(err, "").Error() }})
		if err != nil {
			return a.explain(err, "")
		}
		report.Count()
		bar.done(report)

		if a.json {
			if err := writeJSON(stdout, report); err != nil {
				return err
			}
		} else {
			writeBatchSummary(stdout, report)
		}
		if report.Failed > 0 {
			return exitOutcome{code: 1, msg: fmt.Sprintf("%d of %d line%s failed (%s); fix them and run the same command again: the accepted ones are kept",
				report.Failed, report.Lines, pluralS(report.Lines), report.FailedLines())}
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

// writeBatchSummary writes what became of the lines.
func writeBatchSummary(w io.Writer, r *batchreport.Report) {
	fmt.Fprintf(w, "batch %s from %s: %d line%s · %d submitted · %d already there · %d failed\n",
		r.Batch, r.File, r.Lines, pluralS(r.Lines), r.Submitted, r.Existing, r.Failed)
	if r.Failed > 0 {
		fmt.Fprintln(w, "failed:")
		for _, g := range r.GroupFailures() {
			fmt.Fprintf(w, "  %s: %s\n", batchreport.LineList(g.Lines), g.Err)
		}
	}
	if r.Submitted+r.Existing > 0 {
		fmt.Fprintf(w, "next: agora batch status %s\n", r.Batch)
	}
}

// batchBar shows batch submit's progress on stderr: a bar redrawn in place
// on a terminal (colored unless NO_COLOR or TERM=dumb), otherwise a line
// of counts at most every two seconds and at the end.
type batchBar struct {
	w     io.Writer
	ui    ui
	batch string
	total int
	last  time.Time
	drawn bool
}

func newBatchBar(w io.Writer, environ []string, batch string, total int) *batchBar {
	return &batchBar{w: w, ui: newUI(w, environ), batch: batch, total: total, last: time.Now()}
}

func (b *batchBar) counts(r *batchreport.Report) (done int, text string) {
	sub, ex, failed := batchreport.Counts(r.Results)
	parts := []string{fmt.Sprintf("%d submitted", sub)}
	if ex > 0 {
		parts = append(parts, fmt.Sprintf("%d already there", ex))
	}
	if failed > 0 {
		parts = append(parts, b.ui.paint(sgrRed, fmt.Sprintf("%d failed", failed)))
	}
	return sub + ex + failed, strings.Join(parts, " · ")
}

func (b *batchBar) draw(r *batchreport.Report) {
	done, text := b.counts(r)
	now := time.Now()
	if !b.ui.tty {
		if now.Sub(b.last) < 2*time.Second || done == 0 {
			return
		}
		b.last = now
		fmt.Fprintf(b.w, "batch %s: %d/%d lines: %s\n", b.batch, done, b.total, text)
		return
	}
	if done < b.total && now.Sub(b.last) < 50*time.Millisecond {
		return
	}
	b.last = now
	const width = 30
	fill := done * width / max(b.total, 1)
	bar := b.ui.paint(sgrGreen, strings.Repeat("█", fill)) + b.ui.paint(sgrDim, strings.Repeat("░", width-fill))
	fmt.Fprintf(b.w, "\r\x1b[K%s %d/%d %s", bar, done, b.total, text)
	b.drawn = true
}

func (b *batchBar) done(r *batchreport.Report) {
	if b.ui.tty {
		if b.drawn {
			fmt.Fprint(b.w, "\r\x1b[K")
		}
		return
	}
	done, text := b.counts(r)
	fmt.Fprintf(b.w, "batch %s: %d/%d lines: %s\n", b.batch, done, b.total, text)
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

// batchStatus is batch status's --json output.
type batchStatus struct {
	Batch     string             `json:"batch"`
	Tasks     int                `json:"tasks"`
	Counts    map[wire.State]int `json:"counts"`
	Questions []questionGroup    `json:"questions"`
}

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
		st := batchStatus{Batch: id, Tasks: len(tasks), Counts: map[wire.State]int{}}
		for _, t := range tasks {
			st.Counts[t.State]++
		}
		if st.Questions, err = c.QuestionGroups(ctx, wire.GroupOptions{Batch: id}); err != nil {
			return a.explain(err, "")
		}
		if a.json {
			return writeJSON(stdout, st)
		}
		u := newUI(stdout, environ)
		var parts []string
		for _, s := range []wire.State{wire.StateQueued, wire.StateRunning, wire.StateNeedsInput,
			wire.StateFinished, wire.StateFailed, wire.StateCancelled, wire.StateExpired} {
			if n := st.Counts[s]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, u.state(s)))
			}
		}
		fmt.Fprintf(stdout, "batch %s: %d task%s · %s\n", u.paint(sgrBold, id), st.Tasks, pluralS(st.Tasks), strings.Join(parts, " · "))
		if n := st.Counts[wire.StateFailed]; n > 0 {
			fmt.Fprintf(stdout, "failed: agora status --label %s=%s --state failed\n", batchLabel, id)
		}
		fmt.Fprintln(stdout)
		u.writeQuestionGroups(stdout, st.Questions, false)
		return nil
	}
}

// ---- grouped questions

// questionGroup is one question asked identically by one or more tasks of
// one batch; the API groups them (GET /v1/question-groups).
type questionGroup = wire.QuestionGroup

// writeQuestionGroups writes one row per group; withBatch adds the batch
// column.
func (u ui) writeQuestionGroups(w io.Writer, groups []questionGroup, withBatch bool) {
	if len(groups) == 0 {
		fmt.Fprintln(w, "no open questions")
		return
	}
	header := []string{"COUNT", "QUESTION", "OPTIONS", "TASKS", "IF UNANSWERED", "ANSWER ALL WITH"}
	if withBatch {
		header = append([]string{"COUNT", "BATCH"}, header[1:]...)
	}
	rows := make([][]cell, 0, len(groups))
	for _, g := range groups {
		row := []cell{{fmt.Sprint(g.Count), sgrBold}}
		if withBatch {
			row = append(row, cell{orDash(g.Batch), ""})
		}
		row = append(row, cell{clipText(g.Question, 60), sgrYellow}, cell{strings.Join(g.Options, " / "), ""},
			cell{taskList(g.TaskIDs, 50), ""}, cell{ifUnansweredText(g.IfUnanswered, time.Now()), ""}, cell{g.Action, sgrBold})
		rows = append(rows, row)
	}
	u.writeTable(w, header, rows)
}

// taskList joins ids up to about n characters, then says how many more.
func taskList(ids []string, n int) string {
	s := ""
	for i, id := range ids {
		next := s
		if i > 0 {
			next += ","
		}
		next += id
		if len(next) > n && i > 0 {
			return fmt.Sprintf("%s,… (+%d)", s, len(ids)-i)
		}
		s = next
	}
	return s
}

// questionsGroupedMain is questions --group.
func questionsGroupedMain(ctx context.Context, c *client.Client, a *apiFlags, environ []string, stdout io.Writer) error {
	groups, err := c.QuestionGroups(ctx, wire.GroupOptions{})
	if err != nil {
		return a.explain(err, "")
	}
	if a.json {
		return writeJSON(stdout, struct {
			Groups []questionGroup `json:"groups"`
		}{groups})
	}
	newUI(stdout, environ).writeQuestionGroups(stdout, groups, true)
	return nil
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
		return fmt.Errorf("%s; 'agora questions --group' lists the open ones", plainMessage(e))
	}
	if err != nil {
		return a.explain(err, taskID)
	}
	value := rep.Answer
	if a.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		for _, res := range rep.Results {
			switch res.Result {
			case wire.GroupAnswered:
				fmt.Fprintf(stdout, "%s round %d: answered %s; now %s\n", res.TaskID, res.Round, value, stateLabel(res.State))
			case wire.GroupAlreadyAnswered:
				fmt.Fprintf(stdout, "%s round %d: already answered (%s)\n", res.TaskID, res.Round, res.Error)
			default:
				fmt.Fprintf(stdout, "%s round %d: failed: %s\n", res.TaskID, res.Round, res.Error)
			}
		}
		fmt.Fprintf(stdout, "%d answered · %d already answered · %d failed\n", rep.Answered, rep.AlreadyAnswered, rep.Failed)
	}
	if rep.Failed > 0 {
		return exitOutcome{code: 1, msg: fmt.Sprintf("%d of %d questions like %s's were not answered; 'agora questions --group' shows what is still open",
			rep.Failed, len(rep.Results), taskID)}
	}
	return nil
}
