package main

// Batches: many tasks submitted from one JSON Lines file under one batch
// id (the label agora.batch), their progress, and their questions grouped —
// identical questions (the memory answerer's notion: normalised text and
// option set, see answer.MemoryKey) of one batch shown once and answered
// once for all of them (answer --all-like).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
)

// batchLabel is the label that holds a task's batch id.
const batchLabel = "agora.batch"

// batchWorkers is how many lines batch submit sends at once.
const batchWorkers = 4

// batchIDPattern is a batch id: a task id with room for "-<line>".
var batchIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$`)

const batchUsage = `usage: agora batch submit FILE.jsonl [--batch ID] [--route R] [--json]
       agora batch status ID [--json]

  submit  submit one task per line of FILE (an orchestrator submit request in
          JSON; - reads stdin); every task is labelled agora.batch=ID (default:
          the file's name) and its id defaults to ID-<line>, so running the
          same file again submits only what is missing
  status  the batch's tasks by state and its open questions, identical ones
          grouped ('agora answer --all-like TASK ANSWER' answers a group)
`

func runBatch(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "agora batch: want a subcommand, submit FILE.jsonl or status ID; 'agora batch -h' explains them")
		return 2
	}
	switch args[0] {
	case "submit":
		return verbExit(stderr, "agora batch submit", batchSubmitMain(ctx, args[1:], environ, stdout, stderr))
	case "status":
		return verbExit(stderr, "agora batch status", batchStatusMain(ctx, args[1:], environ, stdout))
	case "help", "-h", "--help":
		fmt.Fprint(stdout, batchUsage)
		return 0
	}
	fmt.Fprintf(stderr, "agora batch: unknown subcommand %q; want submit or status\n", args[0])
	return 2
}

// ---- batch submit

const batchSubmitSynopsis = "FILE.jsonl [--batch ID] [--route R] [--json] [--server URL] [--token TOKEN]"

// batchLine is what became of one line of a batch file.
type batchLine struct {
	Line   int    `json:"line"`
	TaskID string `json:"task_id,omitempty"`
	// Result is submitted, existing (already there) or failed.
	Result string             `json:"result"`
	State  orchestrator.State `json:"state,omitempty"`
	Error  string             `json:"error,omitempty"`

	req *orchestrator.SubmitRequest
}

// Results of a batch line.
const (
	lineSubmitted = "submitted"
	lineExisting  = "existing"
	lineFailed    = "failed"
)

// batchSubmitReport is batch submit's --json output.
type batchSubmitReport struct {
	Batch     string      `json:"batch"`
	File      string      `json:"file"`
	Lines     int         `json:"lines"`
	Submitted int         `json:"submitted"`
	Existing  int         `json:"existing"`
	Failed    int         `json:"failed"`
	Results   []batchLine `json:"results"`
}

func (r *batchSubmitReport) count() {
	r.Submitted, r.Existing, r.Failed = 0, 0, 0
	for _, l := range r.Results {
		switch l.Result {
		case lineSubmitted:
			r.Submitted++
		case lineExisting:
			r.Existing++
		case lineFailed:
			r.Failed++
		}
	}
}

// batchSubmitMain submits every line of the file. A bad line is reported
// with its number and does not stop the others; nothing accepted is
// undone. Exit 1 when any line failed.
func batchSubmitMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agora batch submit", flag.ContinueOnError)
	a := newAPIFlags(fs)
	batch := fs.String("batch", "", "the batch `ID` (default: the file's name without its extension)")
	route := fs.String("route", "", "the route of every line that names none, e.g. memory,human=24h")
	pos, err := parseVerb(fs, batchSubmitSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one FILE of JSON lines, e.g. agora batch submit tasks.jsonl")
	}
	file := pos[0]
	id := *batch
	if id == "" {
		if file == "-" {
			return usagef("reading stdin, give the batch id with --batch ID")
		}
		id = batchIDFromFile(file)
	}
	if !batchIDPattern.MatchString(id) {
		return usagef("batch id %q: want letters, digits, '-' and '_' (at most 80), starting with a letter or digit; pass --batch ID", id)
	}
	if *route != "" {
		if _, err := answer.ParseRoute(*route); err != nil {
			return usagef("--route %q: %v; e.g. --route memory,lookup,human=30m", *route, err)
		}
	}
	var data []byte
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return usagef("%s: %v", file, unwrapPath(err))
	}
	report := &batchSubmitReport{Batch: id, File: file, Results: parseBatchLines(data, id, *route)}
	report.Lines = len(report.Results)
	if report.Lines == 0 {
		return usagef("%s has no lines; want one submit request (JSON) per line", file)
	}
	c, err := a.connect(environ)
	if err != nil {
		return err
	}
	// What the batch holds already: a line whose task is there is
	// "already there", not submitted again.
	existing, _, err := c.ListAll(ctx, orchestrator.ListOptions{Label: batchLabel + "=" + id})
	if err != nil {
		return a.explain(err, "")
	}
	there := make(map[string]bool, len(existing))
	for _, t := range existing {
		there[t.ID] = true
	}

	bar := newBatchBar(stderr, environ, id, report.Lines)
	bar.draw(report)
	submitBatch(ctx, c, a, report, there, func() { bar.draw(report) })
	report.count()
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
			report.Failed, report.Lines, pluralS(report.Lines), failedLineNumbers(report))}
	}
	return nil
}

// batchIDFromFile is the default batch id: the file's base name without
// its extension, other characters than letters, digits, - and _ as -.
func batchIDFromFile(file string) string {
	base := filepath.Base(file)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	id := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, base)
	return strings.TrimLeft(id, "-_")
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func unwrapPath(err error) error {
	if e := errors.Unwrap(err); e != nil {
		return e
	}
	return err
}

// parseBatchLines reads every non-blank line into a request with the
// batch's label, its default task id and route; a line that does not read
// is failed with its one-line error.
func parseBatchLines(data []byte, batch, route string) []batchLine {
	var out []batchLine
	ids := map[string]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		l := batchLine{Line: n}
		req, err := decodeBatchLine(raw)
		if err != nil {
			l.Result, l.Error = lineFailed, err.Error()
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
		if v, ok := req.Labels[batchLabel]; ok && v != batch {
			l.Result, l.Error = lineFailed, fmt.Sprintf("label %s is %q, not this batch's %q; drop the label or pass --batch %s", batchLabel, v, batch, v)
			out = append(out, l)
			continue
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[batchLabel] = batch
		if first, dup := ids[req.TaskID]; dup {
			l.Result, l.Error = lineFailed, fmt.Sprintf("task id %s is line %d's already; give the line another task_id", req.TaskID, first)
			out = append(out, l)
			continue
		}
		ids[req.TaskID] = n
		l.req = &req
		out = append(out, l)
	}
	return out
}

// decodeBatchLine reads one line: one JSON object of known fields.
func decodeBatchLine(raw []byte) (orchestrator.SubmitRequest, error) {
	var req orchestrator.SubmitRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value on the line")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("more than one JSON value on the line")
		}
	}
	if err == nil {
		return req, nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return req, fmt.Errorf("not a JSON object (%s %s); want one submit request per line", article(te.Value), te.Value)
		}
		return req, fmt.Errorf("field %s: a JSON %s where %s belongs", te.Field, te.Value, te.Type)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return req, errors.New("bad JSON: the line ends inside a value")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field") {
		return req, fmt.Errorf("%s; the submit request's fields are task_id, subagent_ref or subagent, input, route, labels, … (docs/api.md)", msg)
	}
	return req, fmt.Errorf("bad JSON: %s", msg)
}

// submitBatch submits the lines that read, batchWorkers at a time, calling
// progress after each.
func submitBatch(ctx context.Context, c *client.Client, a *apiFlags, report *batchSubmitReport, there map[string]bool, progress func()) {
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range batchWorkers {
		wg.Go(func() {
			for i := range work {
				l := report.Results[i]
				t, err := c.Submit(ctx, *l.req)
				mu.Lock()
				switch {
				case err != nil:
					l.Result, l.Error = lineFailed, a.explain(err, "").Error()
				case there[t.ID]:
					l.Result, l.State = lineExisting, t.State
				default:
					l.Result, l.State = lineSubmitted, t.State
				}
				report.Results[i] = l
				progress()
				mu.Unlock()
			}
		})
	}
	for i, l := range report.Results {
		if l.req == nil {
			continue
		}
		if ctx.Err() != nil {
			mu.Lock()
			report.Results[i].Result, report.Results[i].Error = lineFailed, "interrupted before it was submitted; run the same command again to go on"
			mu.Unlock()
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			mu.Lock()
			report.Results[i].Result, report.Results[i].Error = lineFailed, "interrupted before it was submitted; run the same command again to go on"
			mu.Unlock()
		}
	}
	close(work)
	wg.Wait()
}

// writeBatchSummary writes what became of the lines.
func writeBatchSummary(w io.Writer, r *batchSubmitReport) {
	fmt.Fprintf(w, "batch %s from %s: %d line%s · %d submitted · %d already there · %d failed\n",
		r.Batch, r.File, r.Lines, pluralS(r.Lines), r.Submitted, r.Existing, r.Failed)
	if r.Failed > 0 {
		fmt.Fprintln(w, "failed:")
		for _, g := range groupFailures(r.Results) {
			fmt.Fprintf(w, "  %s: %s\n", lineList(g.lines), g.err)
		}
	}
	if r.Submitted+r.Existing > 0 {
		fmt.Fprintf(w, "next: agora batch status %s\n", r.Batch)
	}
}

// failureGroup is the lines that failed with one same error.
type failureGroup struct {
	err   string
	lines []int
}

// groupFailures groups the failed lines by their error, in the order of
// each error's first line: 400 lines with the same typo are one group.
func groupFailures(results []batchLine) []failureGroup {
	var groups []failureGroup
	index := map[string]int{}
	for _, l := range results {
		if l.Result != lineFailed {
			continue
		}
		i, ok := index[l.Error]
		if !ok {
			i = len(groups)
			index[l.Error] = i
			groups = append(groups, failureGroup{err: l.Error})
		}
		groups[i].lines = append(groups[i].lines, l.Line)
	}
	return groups
}

// maxListedLines is how many line numbers a list shows before "…".
const maxListedLines = 8

// lineList is "line 3", "lines 3, 5, 9" or, past maxListedLines,
// "lines 3, 5, 9, … (400 lines)".
func lineList(lines []int) string {
	nums := make([]string, 0, min(len(lines), maxListedLines))
	for _, n := range lines[:min(len(lines), maxListedLines)] {
		nums = append(nums, strconv.Itoa(n))
	}
	text := "line" + pluralS(len(lines)) + " " + strings.Join(nums, ", ")
	if len(lines) > maxListedLines {
		text += fmt.Sprintf(" … (%d lines)", len(lines))
	}
	return text
}

func failedLineNumbers(r *batchSubmitReport) string {
	var lines []int
	for _, l := range r.Results {
		if l.Result == lineFailed {
			lines = append(lines, l.Line)
		}
	}
	return lineList(lines)
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

func (b *batchBar) counts(r *batchSubmitReport) (done int, text string) {
	sub, ex, failed := 0, 0, 0
	for _, l := range r.Results {
		switch l.Result {
		case lineSubmitted:
			sub++
		case lineExisting:
			ex++
		case lineFailed:
			failed++
		}
	}
	parts := []string{fmt.Sprintf("%d submitted", sub)}
	if ex > 0 {
		parts = append(parts, fmt.Sprintf("%d already there", ex))
	}
	if failed > 0 {
		parts = append(parts, b.ui.paint(sgrRed, fmt.Sprintf("%d failed", failed)))
	}
	return sub + ex + failed, strings.Join(parts, " · ")
}

func (b *batchBar) draw(r *batchSubmitReport) {
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

func (b *batchBar) done(r *batchSubmitReport) {
	if b.ui.tty {
		if b.drawn {
			fmt.Fprint(b.w, "\r\x1b[K")
		}
		return
	}
	done, text := b.counts(r)
	fmt.Fprintf(b.w, "batch %s: %d/%d lines: %s\n", b.batch, done, b.total, text)
}

// ---- batch status

const batchStatusSynopsis = "ID [--json] [--server URL] [--token TOKEN]"

// batchStatus is batch status's --json output.
type batchStatus struct {
	Batch     string                     `json:"batch"`
	Tasks     int                        `json:"tasks"`
	Counts    map[orchestrator.State]int `json:"counts"`
	Questions []questionGroup            `json:"questions"`
}

// batchStatusMain counts the batch's tasks by state and groups their open
// questions.
func batchStatusMain(ctx context.Context, args, environ []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("agora batch status", flag.ContinueOnError)
	a := newAPIFlags(fs)
	pos, err := parseVerb(fs, batchStatusSynopsis, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one batch ID, e.g. agora batch status tasks")
	}
	id := pos[0]
	c, err := a.connect(environ)
	if err != nil {
		return err
	}
	tasks, _, err := c.ListAll(ctx, orchestrator.ListOptions{Label: batchLabel + "=" + id})
	if err != nil {
		return a.explain(err, "")
	}
	if len(tasks) == 0 {
		return fmt.Errorf("no tasks in batch %s on %s; 'agora batch submit FILE --batch %s' submits them", id, a.server, id)
	}
	st := batchStatus{Batch: id, Tasks: len(tasks), Counts: map[orchestrator.State]int{}}
	batchOf := map[string]string{}
	for _, t := range tasks {
		st.Counts[t.State]++
		batchOf[t.ID] = id
	}
	qs, err := c.QuestionsAll(ctx)
	if err != nil {
		return a.explain(err, "")
	}
	var mine []orchestrator.QuestionView
	for _, q := range qs {
		if _, ok := batchOf[q.TaskID]; ok {
			mine = append(mine, q)
		}
	}
	st.Questions = groupQuestions(mine, batchOf)
	if a.json {
		return writeJSON(stdout, st)
	}
	u := newUI(stdout, environ)
	var parts []string
	for _, s := range []orchestrator.State{orchestrator.StateQueued, orchestrator.StateRunning, orchestrator.StateNeedsInput,
		orchestrator.StateFinished, orchestrator.StateFailed, orchestrator.StateCancelled, orchestrator.StateExpired} {
		if n := st.Counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, u.state(s)))
		}
	}
	fmt.Fprintf(stdout, "batch %s: %d task%s · %s\n", u.paint(sgrBold, id), st.Tasks, pluralS(st.Tasks), strings.Join(parts, " · "))
	if n := st.Counts[orchestrator.StateFailed]; n > 0 {
		fmt.Fprintf(stdout, "failed: agora status --label %s=%s --state failed\n", batchLabel, id)
	}
	fmt.Fprintln(stdout)
	u.writeQuestionGroups(stdout, st.Questions, false)
	return nil
}

// ---- grouped questions

// questionGroup is one question asked, identically, by one or more tasks
// of one batch.
type questionGroup struct {
	// Key is the question's answer.MemoryKey without a sub-agent: the same
	// for the same normalised text and option set.
	Key      string   `json:"key"`
	Batch    string   `json:"batch,omitempty"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Count    int      `json:"count"`
	TaskIDs  []string `json:"task_ids"`
	// Action answers them all (or the one).
	Action  string    `json:"action"`
	AskedAt time.Time `json:"oldest_asked_at"`
}

// questionKey is the grouping key of a question: its normalised text and
// option set, as the memory answerer sees them.
func questionKey(question string, options []string) string {
	return answer.MemoryKey(answer.Question{Question: question, Options: options})
}

// groupQuestions groups qs (oldest first) by batch and questionKey, the
// groups in the order of their oldest question.
func groupQuestions(qs []orchestrator.QuestionView, batchOf map[string]string) []questionGroup {
	groups := []questionGroup{}
	index := map[[2]string]int{}
	for _, q := range qs {
		k := [2]string{batchOf[q.TaskID], questionKey(q.Question, q.Options)}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, questionGroup{Key: k[1], Batch: k[0], Question: q.Question, Options: q.Options,
				AskedAt: q.AskedAt, Action: q.Action})
		}
		g := &groups[i]
		g.Count++
		g.TaskIDs = append(g.TaskIDs, q.TaskID)
		if g.Count == 2 {
			g.Action = allLikeAction(g.Action, g.TaskIDs[0], g.Options)
		}
	}
	return groups
}

// allLikeAction turns a question's answer command into the one that
// answers all the questions like it.
func allLikeAction(action, taskID string, options []string) string {
	if rest, ok := strings.CutPrefix(action, "agora answer "); ok {
		return "agora answer --all-like " + rest
	}
	ans := "<answer>"
	if len(options) > 0 {
		ans = options[0]
	}
	return "agora answer --all-like " + taskID + " " + ans
}

// writeQuestionGroups writes one row per group; withBatch adds the batch
// column.
func (u ui) writeQuestionGroups(w io.Writer, groups []questionGroup, withBatch bool) {
	if len(groups) == 0 {
		fmt.Fprintln(w, "no open questions")
		return
	}
	header := []string{"COUNT", "QUESTION", "OPTIONS", "TASKS", "ANSWER ALL WITH"}
	if withBatch {
		header = append([]string{"COUNT", "BATCH"}, header[1:]...)
	}
	rows := make([][]cell, 0, len(groups))
	for _, g := range groups {
		row := []cell{{fmt.Sprint(g.Count), sgrBold}}
		if withBatch {
			batch := g.Batch
			if batch == "" {
				batch = "-"
			}
			row = append(row, cell{batch, ""})
		}
		row = append(row, cell{clipText(g.Question, 60), sgrYellow}, cell{strings.Join(g.Options, " / "), ""},
			cell{taskList(g.TaskIDs, 50), ""}, cell{g.Action, sgrBold})
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

// questionGroups lists the open questions grouped by batch and identical
// question (questions --group).
func questionGroups(ctx context.Context, c *client.Client) ([]questionGroup, error) {
	qs, err := c.QuestionsAll(ctx)
	if err != nil {
		return nil, err
	}
	batchOf, err := waitingBatches(ctx, c)
	if err != nil {
		return nil, err
	}
	return groupQuestions(qs, batchOf), nil
}

// waitingBatches maps the tasks that wait for an answer to their batch.
func waitingBatches(ctx context.Context, c *client.Client) (map[string]string, error) {
	tasks, _, err := c.ListAll(ctx, orchestrator.ListOptions{State: orchestrator.StateNeedsInput})
	if err != nil {
		return nil, err
	}
	batchOf := make(map[string]string, len(tasks))
	for _, t := range tasks {
		batchOf[t.ID] = t.Request.Labels[batchLabel]
	}
	return batchOf, nil
}

// questionsGroupedMain is questions --group.
func questionsGroupedMain(ctx context.Context, c *client.Client, a *apiFlags, environ []string, stdout io.Writer) error {
	groups, err := questionGroups(ctx, c)
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

// allLikeResult is what became of one task's question.
type allLikeResult struct {
	TaskID string `json:"task_id"`
	Round  int    `json:"round"`
	// Result is answered, already_answered or failed.
	Result string             `json:"result"`
	State  orchestrator.State `json:"state,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// allLikeReport is answer --all-like's --json output.
type allLikeReport struct {
	Like            string          `json:"like"`
	Question        string          `json:"question"`
	Options         []string        `json:"options,omitempty"`
	Answer          string          `json:"answer"`
	Answered        int             `json:"answered"`
	AlreadyAnswered int             `json:"already_answered"`
	Failed          int             `json:"failed"`
	Results         []allLikeResult `json:"results"`
}

// allLikeHook, when set (by tests), runs between finding the questions
// and answering them.
var allLikeHook func()

// answerAllLikeMain answers the open question of taskID and every open
// question identical to it (same batch, same questionKey) with ans.
func answerAllLikeMain(ctx context.Context, c *client.Client, a *apiFlags, taskID, ans, who string, stdout io.Writer) error {
	t, err := c.Get(ctx, taskID)
	if err != nil {
		return a.explain(err, taskID)
	}
	r := lastRound(t)
	if t.State != orchestrator.StateNeedsInput || r == nil || r.Question == nil || r.Answer != nil {
		return fmt.Errorf("task %s is %s: no open question; 'agora questions --group' lists the open ones", taskID, stateLabel(t.State))
	}
	q := r.Question
	// The answer as an option's value: an option's number means the same
	// option for every task, whatever the order of their options.
	value, err := answer.ValidateAnswer(answer.Question{Question: q.Question, Options: q.Options}, ans)
	if err != nil {
		return usagef("task %s round %d: %v", taskID, r.N, err)
	}
	batch := t.Request.Labels[batchLabel]
	key := questionKey(q.Question, q.Options)
	qs, err := c.QuestionsAll(ctx)
	if err != nil {
		return a.explain(err, "")
	}
	batchOf, err := waitingBatches(ctx, c)
	if err != nil {
		return a.explain(err, "")
	}
	targets := []allLikeResult{{TaskID: taskID, Round: r.N}}
	for _, o := range qs {
		if o.TaskID != taskID && batchOf[o.TaskID] == batch && questionKey(o.Question, o.Options) == key {
			targets = append(targets, allLikeResult{TaskID: o.TaskID, Round: o.Round})
		}
	}
	if allLikeHook != nil {
		allLikeHook()
	}
	rep := allLikeReport{Like: taskID, Question: q.Question, Options: q.Options, Answer: value}
	for _, tg := range targets {
		got, err := c.Answer(ctx, orchestrator.AnswerRequest{TaskID: tg.TaskID, Round: tg.Round, Answer: value, By: who, Channel: "cli"})
		switch {
		case err == nil:
			tg.Result, tg.State = "answered", got.State
			rep.Answered++
		case errors.Is(err, orchestrator.ErrAlreadyAnswered):
			tg.Result, tg.Error = "already_answered", a.explain(err, tg.TaskID).Error()
			rep.AlreadyAnswered++
		default:
			tg.Result, tg.Error = "failed", a.explain(err, tg.TaskID).Error()
			rep.Failed++
		}
		rep.Results = append(rep.Results, tg)
	}
	if a.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		for _, res := range rep.Results {
			switch res.Result {
			case "answered":
				fmt.Fprintf(stdout, "%s round %d: answered %s; now %s\n", res.TaskID, res.Round, value, stateLabel(res.State))
			case "already_answered":
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
