package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

const dispatchSynopsis = `--subagent NAME[@VERSION] | --subagent-file FILE | --command "CMD" [--name NAME] [--input JSON|@FILE] [--route ROUTE]
       [--task-id ID] [--timeout SECONDS] [--allow-memory] [--label KEY=VALUE]... [--wait [--detach-on-signal] [--heartbeat DURATION]]
       [--json] [--server URL] [--token TOKEN]`

// Timings of dispatch --wait.
const (
	// waitPoll is how often --wait reads the task besides following its
	// changes: a safety net for a change made while the stream was being
	// (re)opened.
	waitPoll = 2 * time.Second
	// waitGiveUp is how long --wait keeps trying while the server does not
	// answer before it fails.
	waitGiveUp = time.Minute
	// defaultHeartbeat is how often --wait says it still waits while a
	// question waits for a person (--heartbeat).
	defaultHeartbeat = time.Minute
	// heartbeatCheck is how often --wait looks whether a heartbeat is due
	// when stderr is no terminal (a terminal's status line ticks every
	// second anyway).
	heartbeatCheck = 5 * time.Second
	// cancelTimeout bounds the cancel --wait sends after a signal: well
	// inside the 7.5 s a GitHub Actions runner leaves between its SIGINT
	// and its SIGTERM, and the 10 s many runners wait before SIGKILL.
	cancelTimeout = 5 * time.Second
)

type dispatchFlags struct {
	subagent, subagentFile, command, name, input, route, taskID, timeout string
	allowMemory, wait, detachOnSignal                                    bool
	heartbeat                                                            time.Duration
	labels                                                               multiFlag
	api                                                                  *apiFlags
}

// dispatchVerb declares agora dispatch's flags on fs.
func dispatchVerb(fs *flag.FlagSet) runFunc {
	f := &dispatchFlags{}
	f.api = newAPIFlags(fs)
	fs.StringVar(&f.subagent, "subagent", "", "a registered sub-agent: `NAME` (its latest version) or NAME@VERSION; the task pins the versions it resolves")
	fs.StringVar(&f.subagentFile, "subagent-file", "", "the sub-agent: a YAML or JSON `FILE` (name, runtime, command or prompt, model; route, timeout_seconds, limits as defaults)")
	fs.StringVar(&f.command, "command", "", "the sub-agent: a shell command `CMD` run with /bin/sh -c in the worker image (runtime exec)")
	fs.StringVar(&f.name, "name", "", "the sub-agent's `NAME` (default: the file's name, or \"command\")")
	fs.StringVar(&f.input, "input", "", "the task's input: a JSON object, or @`FILE` holding one")
	fs.StringVar(&f.route, "route", "", "who answers its questions, in order, e.g. memory,lookup,human=24h (default: the file's route, else human)")
	fs.StringVar(&f.taskID, "task-id", "", "the task's `ID` (letters, digits, - and _): the same id and request again returns the same task")
	fs.StringVar(&f.timeout, "timeout", "", "bound each round's dispatch: `SECONDS`, or a duration like 10m")
	fs.BoolVar(&f.allowMemory, "allow-memory", false, "let the memory answerer reuse earlier answers to the same question")
	fs.Var(&f.labels, "label", "label the task `KEY=VALUE` (repeatable), e.g. for 'agora status --label'")
	fs.BoolVar(&f.wait, "wait", false, "wait until the task ends, showing its progress on stderr and printing its result alone on stdout (a string as its text, else JSON; with --json the final task); exit 0 finished, 1 failed, 3 expired or cancelled (2 a usage error); "+
		"SIGINT or SIGTERM cancels the task and exits 130 or 143")
	fs.BoolVar(&f.detachOnSignal, "detach-on-signal", false, "with --wait: on SIGINT or SIGTERM stop waiting and leave the task running (exit 1), instead of cancelling it")
	fs.DurationVar(&f.heartbeat, "heartbeat", defaultHeartbeat, "with --wait: while a question waits for a person, say so this often (`DURATION`, at least 1s)")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		return dispatchMain(ctx, fs, f, args, environ, stdout, stderr)
	}
}

// parseDispatch reads the flags and the files they name into the request,
// without contacting anything: every mistake is found before a task
// exists.
func parseDispatch(fs *flag.FlagSet, f *dispatchFlags, pos []string) (wire.SubmitRequest, error) {
	var req wire.SubmitRequest
	var err error
	for _, name := range []string{"detach-on-signal", "heartbeat"} {
		if fs.Changed(name) && !f.wait {
			return req, usagef("--%s is about --wait, which is not given: add --wait", name)
		}
	}
	if len(pos) > 0 {
		return req, usagef("unexpected argument %q; a command goes in quotes: --command \"%s\"", pos[0], strings.Join(pos, " "))
	}
	if f.heartbeat < time.Second {
		return req, usagef("--heartbeat %s: want a duration of at least 1s, e.g. --heartbeat 30s", f.heartbeat)
	}
	given := 0
	for _, v := range []string{f.subagent, f.subagentFile, f.command} {
		if v != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return req, usagef(`want --subagent NAME, --subagent-file FILE or --command "CMD", e.g. agora dispatch --command 'echo hello' --wait`)
	case given > 1:
		return req, usagef("want one of --subagent, --subagent-file or --command, not several")
	case f.subagent != "":
		if _, _, err := wire.ParseRef(f.subagent); err != nil {
			return req, usagef("--subagent %q: want a registered sub-agent's NAME or NAME@VERSION; 'agora subagent list' shows them", f.subagent)
		}
		if f.name != "" {
			return req, usagef("--name renames an inline sub-agent; a registered one keeps its name")
		}
		req.SubagentRef = f.subagent
	case f.subagentFile != "":
		def, err := readSubagentFile(f.subagentFile)
		if err != nil {
			return req, err
		}
		req = inlineRequest(def)
	default:
		req.Subagent = schemas.Subagent{Name: "command", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", f.command}}
	}
	if f.name != "" {
		req.Subagent.Name = f.name
	}
	if f.input != "" {
		if req.Input, err = readInput(f.input); err != nil {
			return req, err
		}
	}
	if f.route != "" {
		if _, err := wire.ParseRoute(f.route); err != nil {
			return req, usagef("--route %q: %v; e.g. --route memory,lookup,human=30m", f.route, err)
		}
		req.Route = f.route
	}
	if f.timeout != "" {
		if req.TimeoutSeconds, err = parseSeconds(f.timeout); err != nil {
			return req, err
		}
	}
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return req, usagef("--label %q: want KEY=VALUE", l)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
	}
	// The server's own rule, checked before the request leaves the CLI.
	if f.taskID != "" && wire.CheckTaskID(f.taskID) != nil {
		return req, usagef("--task-id %q: want letters, digits, '-' and '_' (starting with a letter or digit, at most 96)", f.taskID)
	}
	req.TaskID, req.AllowMemory = f.taskID, f.allowMemory
	return req, nil
}

// readInput reads --input: a JSON object, inline or from @FILE.
func readInput(v string) (json.RawMessage, error) {
	data, where := []byte(v), "--input"
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, usagef("--input %s: %v; give the path of a JSON file after @", v, errors.Unwrap(err))
		}
		where = "--input " + v
	}
	var obj map[string]json.RawMessage
	if err := schemas.Decode("input", data, &obj); err != nil || obj == nil {
		why := "null"
		if ve, ok := errors.AsType[*schemas.ValidationError](err); ok {
			why = strings.Replace(ve.Detail(), "expected an object, got ", "", 1)
		} else if err != nil {
			why = err.Error()
		}
		return nil, usagef(`%s is not a JSON object (%s); pass one like --input '{"issue": 42}' or --input @input.json`, where, why)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, usagef("%s: %v", where, err)
	}
	return compact.Bytes(), nil
}

// parseSeconds reads --timeout: whole seconds, or a Go duration.
func parseSeconds(v string) (int, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 {
			return 0, usagef("--timeout %s: want at least 1 second", v)
		}
		if n > schemas.MaxTimeoutSeconds {
			return 0, usagef("--timeout %s: at most %d seconds (7 days)", v, schemas.MaxTimeoutSeconds)
		}
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, usagef("--timeout %q: want seconds (600) or a duration (10m) of at least 1s", v)
	}
	n := int(math.Ceil(d.Seconds()))
	if n > schemas.MaxTimeoutSeconds {
		return 0, usagef("--timeout %s: at most %ds (7 days)", v, schemas.MaxTimeoutSeconds)
	}
	return n, nil
}

// readSubagentFile reads and checks a sub-agent file against
// schemas/subagent.schema.json; every error names the file, the line, the
// field and the problem.
func readSubagentFile(name string) (*wire.Subagent, error) {
	data, err := registryfile.ReadFile(name)
	if err != nil {
		return nil, usagef("--subagent-file %v", err)
	}
	def, err := registryfile.ParseSubagent(name, data)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if len(def.Capabilities) > 0 || len(def.Env) > 0 {
		return nil, usagef("%s names capabilities or env bundles, which only a registered sub-agent resolves: run 'agora subagent register %s', then 'agora dispatch --subagent %s'", name, name, def.Name)
	}
	return def, nil
}

// inlineRequest is a task of def given inline: its defaults become the
// request's, as a registered sub-agent's do on the server.
func inlineRequest(def *wire.Subagent) wire.SubmitRequest {
	req := wire.SubmitRequest{Subagent: def.Spec(), Route: def.Route, TimeoutSeconds: def.TimeoutSeconds,
		Image: def.Image, Network: def.Network, Egress: def.Egress, Resources: def.Resources, Workspace: def.Workspace, AllowMemory: def.AllowMemory, Retry: def.Retry}
	if def.Limits != nil {
		req.Limits = wire.Limits{MaxRounds: def.Limits.MaxRounds, MaxWaitSeconds: def.Limits.MaxWaitSeconds}
	}
	return req
}

// dispatchMain submits a task; with --wait it follows it to its end.
func dispatchMain(ctx context.Context, fs *flag.FlagSet, f *dispatchFlags, args, environ []string, stdout, stderr io.Writer) error {
	req, err := parseDispatch(fs, f, args)
	if err != nil {
		return err
	}
	if req.Route == "" && isCI(environ) {
		// Nobody watches a CI job: the server gives it its bounded CI
		// route, not the default that waits days for a person.
		req.FromCI = true
	}
	a := f.api
	c, err := a.connect(environ)
	if err != nil {
		return err
	}
	start := time.Now()
	t, err := c.Submit(ctx, req)
	if req.FromCI && unknownField(err, "from_ci") {
		// A server older than this CLI: it has no CI route. Submit as an
		// older CLI would, and say what that means.
		fmt.Fprintf(stderr, "agora dispatch: the server at %s is older than this agora and has no CI route: the task gets its default route (%s); pass --route, e.g. --route %s\n",
			a.server, wire.DefaultRoute, wire.DefaultCIRoute)
		req.FromCI = false
		t, err = c.Submit(ctx, req)
	}
	if err != nil && ctx.Err() != nil && f.wait && req.TaskID != "" {
		// Interrupted while submitting: the task may exist already, and
		// its id is known, so the cancel reaches it as it would later.
		return stopWaiting(ctx, c, a, req.TaskID, f.detachOnSignal, stderr)
	}
	if err != nil {
		return a.explain(err, "")
	}
	if t.Pins != nil && !a.json {
		fmt.Fprintf(stderr, "%s pins %s\n", t.ID, pinsText(t.Pins))
	}
	if !f.wait {
		if a.json {
			return writeJSON(stdout, t)
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", t.ID, stateLabel(t.State), needsText(t))
		if next := nextAction(t); next != "" {
			fmt.Fprintf(stdout, "next: %s (or agora status %s)\n", next, t.ID)
		}
		return nil
	}
	p := newProgress(stderr, newUI(stderr, environ), start, time.Now)
	p.heartbeat = f.heartbeat
	opts := client.FollowOptions{Poll: waitPoll, GiveUp: waitGiveUp, OnUpdate: p.update, Tick: min(heartbeatCheck, f.heartbeat),
		OnTrouble: func(error) { p.note("the agora server does not answer; still trying") }}
	if p.ui.tty {
		opts.Tick = time.Second
	}
	final, err := c.Follow(ctx, t, opts)
	p.clear()
	if errors.Is(err, client.ErrRemoved) {
		return fmt.Errorf("task %s was removed while waiting for it", t.ID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return stopWaiting(ctx, c, a, t.ID, f.detachOnSignal, stderr)
		}
		return a.explain(err, t.ID)
	}
	// stdout carries the result alone (docs/ci.md): out=$(agora dispatch
	// … --wait). With --json, the final task, its result read in.
	result, rerr := c.TaskResult(ctx, final)
	if a.json {
		if rerr == nil && len(result) > 0 {
			final.Result = result
		}
		if err := writeJSON(stdout, final); err != nil {
			return err
		}
	} else {
		rounds := 0
		for _, r := range final.Rounds {
			rounds = max(rounds, r.N)
		}
		fmt.Fprintf(stderr, "%s %s after %d round%s in %s: %s\n", final.ID, stateLabel(final.State), rounds, pluralS(rounds),
			humanDuration(time.Since(start)), outcomeDetail(final))
		if err := writeResult(stdout, result); err != nil {
			return err
		}
	}
	if rerr != nil {
		return fmt.Errorf("task %s %s, but its result could not be read: %w", final.ID, stateLabel(final.State), rerr)
	}
	switch final.State {
	case wire.StateFinished:
		return nil
	case wire.StateFailed:
		writeOutputTail(ctx, c, final, stderr)
		return exitOutcome{code: exitFailed, msg: fmt.Sprintf("task %s failed: %s; 'agora logs %s' shows its output, 'agora respawn %s' runs it again",
			final.ID, outcomeDetail(final), final.ID, final.ID)}
	}
	return exitOutcome{code: exitEnded, msg: fmt.Sprintf("task %s %s: %s; 'agora status %s' shows its timeline", final.ID, stateLabel(final.State), outcomeDetail(final), final.ID)}
}

// unknownField says whether err is the server refusing a request body for
// an unknown field name, as a server older than the field does.
func unknownField(err error, name string) bool {
	e, ok := errors.AsType[*client.Error](err)
	return ok && e.Code == string(wire.CodeInvalid) && strings.Contains(e.Message, `unknown field "`+name+`"`)
}

// isCI says whether environ is a CI job's: CI=true (GitHub Actions,
// GitLab CI and most others set it), or another true value.
func isCI(environ []string) bool {
	ci, err := strconv.ParseBool(getenv(environ, "CI"))
	return err == nil && ci
}

// stopWaiting ends a dispatch --wait whose context was cancelled: by a
// signal (its cause, from main) or by whoever called run. By default it
// cancels the task — the caller's cancel reaches the work — with a call
// bounded by cancelTimeout that outlives the cancelled context, and exits
// 128 + the signal's number (130 SIGINT, 143 SIGTERM); with
// --detach-on-signal it leaves the task running and exits 1, as before.
func stopWaiting(ctx context.Context, c *client.Client, a *apiFlags, id string, detach bool, stderr io.Writer) error {
	sig, bySignal := signalOf(ctx)
	code, why := exitFailed, "interrupted"
	if bySignal {
		code, why = signalExitCode(sig), signalName(sig)
	}
	if detach {
		return fmt.Errorf("%s: stopped waiting; task %s goes on ('agora status %s' shows it, 'agora cancel %s' stops it)", why, id, id, id)
	}
	fmt.Fprintf(stderr, "agora dispatch: %s: cancelling task %s (--detach-on-signal would leave it running)\n", why, id)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	t, err := c.Cancel(cctx, id)
	if errors.Is(err, wire.ErrNotFound) {
		return exitOutcome{code: code, msg: fmt.Sprintf("interrupted before task %s was submitted; nothing runs", id)}
	}
	if errors.Is(err, wire.ErrWrongState) {
		// It ended between the last update and the cancel.
		if got, gerr := c.Get(cctx, id); gerr == nil && got.State.Terminal() {
			return exitOutcome{code: code, msg: fmt.Sprintf("task %s had already ended: %s (%s)", id, stateLabel(got.State), outcomeDetail(got))}
		}
	}
	if err != nil {
		return exitOutcome{code: code, msg: fmt.Sprintf("could not cancel task %s (%v); it may still run: 'agora cancel %s' stops it",
			id, clipText(a.explainCancel(err, id).Error(), 200), id)}
	}
	return exitOutcome{code: code, msg: fmt.Sprintf("task %s cancelled (%s); 'agora respawn %s' runs it again", id, outcomeDetail(t), id)}
}

// explainCancel is explain for the cancel stopWaiting sends, whose
// deadline is its own.
func (a *apiFlags) explainCancel(err error, id string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %s", a.server, cancelTimeout)
	}
	return a.explain(err, id)
}

// progress shows a waited-for task on stderr: a line for every change of
// state or round, the question once per round with the command that
// answers it, and while a question waits for a person, until when and
// what happens then — again whenever that changes (the route moved on) and
// at least every heartbeat. An answer is told with who gave it; a default
// taken, with why. On a terminal a status line is kept up to date in
// place.
type progress struct {
	w     io.Writer
	ui    ui
	start time.Time
	now   func() time.Time
	// heartbeat is how often a waiting question is told again.
	heartbeat time.Duration
	// last is the state and round of the last line written.
	last string
	// asked holds the dispatches whose question was shown, told those
	// whose answer was.
	asked, told map[string]bool
	// then is the last "what happens if nobody answers" shown, per dispatch.
	then map[string]string
	// lastWait is when a line about the waiting question was last written.
	lastWait time.Time
	// status is the current in-place line, empty when none is shown.
	status string
	task   *wire.Task
}

func newProgress(w io.Writer, u ui, start time.Time, now func() time.Time) *progress {
	return &progress{w: w, ui: u, start: start, now: now, heartbeat: defaultHeartbeat,
		asked: map[string]bool{}, told: map[string]bool{}, then: map[string]string{}}
}

func (p *progress) update(t *wire.Task) {
	p.task = t
	now := p.now()
	r := lastRound(t)
	elapsed := "0s"
	if e := now.Sub(p.start).Truncate(time.Second); e > 0 {
		elapsed = humanDuration(e)
	}
	p.tellAnswers(t)
	waiting := t.State == wire.StateNeedsInput && r != nil && r.Question != nil && r.Answer == nil
	then := ""
	if waiting {
		then = roundConsequence(t, r)
	}
	key := string(t.State) + "/" + roundText(r)
	if key != p.last {
		p.last = key
		line := fmt.Sprintf("%s %s · round %s · %s", p.ui.paint(sgrBold, t.ID), p.ui.state(t.State), roundText(r), elapsed)
		if then != "" {
			line += " · " + then
		}
		p.line(line)
	}
	switch {
	case waiting && !p.asked[r.DispatchID]:
		p.asked[r.DispatchID] = true
		q := r.Question.Question
		if len(r.Question.Options) > 0 {
			q += " (" + strings.Join(r.Question.Options, " / ") + ")"
		}
		if r.Question.Default != nil {
			q += " [default " + *r.Question.Default + "]"
		}
		p.line("  ? " + p.ui.paint(sgrYellow, q))
		if c := r.Question.Context; c != "" {
			p.line("  context: " + clipText(c, 200))
		}
		p.line("  answer with: " + p.ui.paint(sgrBold, t.Attention.Action))
		p.line("  still waiting: the answer may come from anyone with access, or from the route (" + routeText(t) + ")" + thenSuffix(then))
		p.then[r.DispatchID], p.lastWait = then, now
	case waiting && then != p.then[r.DispatchID]:
		// The route moved on to its next step, or the server said.
		p.line(fmt.Sprintf("  still waiting at route step %d of %s%s", r.Step+1, routeText(t), thenSuffix(then)))
		p.then[r.DispatchID], p.lastWait = then, now
	case waiting && now.Sub(p.lastWait) >= p.heartbeat:
		p.line(heartbeatLine(t, r, now))
		p.lastWait = now
	}
	if p.ui.tty && !t.State.Terminal() {
		status := fmt.Sprintf("… %s %s · round %s · %s", t.ID, stateLabel(t.State), roundText(r), elapsed)
		if then != "" {
			status += " · " + then
		}
		p.setStatus(status)
	}
}

// tellAnswers writes, once per round, the answer its question got: who
// gave it, or for a default taken because nobody answered, which and why.
// Rounds answered before this --wait began are told only when a default
// was taken.
func (p *progress) tellAnswers(t *wire.Task) {
	for i := range t.Rounds {
		r := &t.Rounds[i]
		if r.Question == nil || r.Answer == nil || p.told[r.DispatchID] || (!p.asked[r.DispatchID] && !r.Answer.Assumed) {
			continue
		}
		p.told[r.DispatchID] = true
		p.line("  " + answerText(r))
	}
}

// answerText is how round r's question was answered: "round 1 answered:
// `b.conf` by carol via cli", or "nobody answered round 1 by 14:05:00 UTC:
// the default `draft` was taken (human timed out: no answer within 10m0s)".
func answerText(r *wire.Round) string {
	a := r.Answer
	if !a.Assumed {
		return fmt.Sprintf("round %d answered: `%s` by %s via %s", r.N, a.Value, a.By, a.Channel)
	}
	var why []string
	for _, d := range r.Decisions {
		if d.Result == "pending" || d.Result == "answered" {
			continue // waiting, or the default's own entry
		}
		w := d.Step + " " + d.Result
		if d.Detail != "" {
			w += ": " + clipText(d.Detail, 120)
		}
		why = append(why, w)
	}
	if len(why) == 0 {
		why = []string{"the route ended"}
	}
	return fmt.Sprintf("nobody answered round %d by %s: the default `%s` was taken (%s)", r.N, clockText(a.At), a.Value, strings.Join(why, "; "))
}

// heartbeatLine says that a question still waits, for how long already,
// and until when: "still waiting for an answer to round 1 (asked 5m 0s
// ago, 5m 0s left): at 14:10:00 UTC the default `draft` is taken".
func heartbeatLine(t *wire.Task, r *wire.Round, now time.Time) string {
	line := fmt.Sprintf("  still waiting for an answer to round %d (asked %s ago", r.N, humanDuration(now.Sub(r.AskedAt).Truncate(time.Second)))
	switch at := consequenceAt(r); {
	case at.IsZero():
	case at.Sub(now) < time.Second:
		line += ", due now"
	default:
		line += ", " + humanDuration(at.Sub(now).Truncate(time.Second)) + " left"
	}
	line += ")"
	if then := roundConsequence(t, r); then != "" {
		line += ": " + then
	} else {
		line += ": the route (" + routeText(t) + ") has no deadline to tell"
	}
	return line
}

func thenSuffix(then string) string {
	if then == "" {
		return ""
	}
	return "; " + then
}

// roundConsequence is what happens to round r's open question if nobody
// answers, and when: the server's IfUnanswered, or, from a server that
// does not fill it in, the same worked out from the route and the step's
// deadline. Empty when neither says.
func roundConsequence(t *wire.Task, r *wire.Round) string {
	if iu := r.IfUnanswered; iu != nil {
		if iu.Text != "" {
			return iu.Text
		}
		return consequenceText(iu.At, iu.Action, iu.Default, iu.Next)
	}
	if r.StepDeadline.IsZero() || r.Question == nil {
		return ""
	}
	steps, err := wire.ParseRoute(routeText(t))
	if err != nil {
		return ""
	}
	switch {
	case r.Step+1 < len(steps):
		return consequenceText(r.StepDeadline, wire.IfUnansweredEscalate, "", steps[r.Step+1].Answerer)
	case r.Question.Default != nil:
		return consequenceText(r.StepDeadline, wire.IfUnansweredDefault, *r.Question.Default, "")
	}
	return consequenceText(r.StepDeadline, wire.IfUnansweredExpire, "", "")
}

// consequenceAt is when round r's open question's consequence comes.
func consequenceAt(r *wire.Round) time.Time {
	if r.IfUnanswered != nil {
		return r.IfUnanswered.At
	}
	return r.StepDeadline
}

// consequenceText words an IfUnanswered: "at 14:05:00 UTC the default
// `draft` is taken", "at 14:05:00 UTC it goes to `slack:#ops`", "at
// 14:05:00 UTC it expires".
func consequenceText(at time.Time, action, def, next string) string {
	switch action {
	case wire.IfUnansweredDefault:
		return fmt.Sprintf("at %s the default `%s` is taken", clockText(at), def)
	case wire.IfUnansweredEscalate:
		return fmt.Sprintf("at %s it goes to `%s`", clockText(at), next)
	}
	return fmt.Sprintf("at %s it expires (no default)", clockText(at))
}

// clockText is a moment as a CI log shows it: the UTC time of day.
func clockText(at time.Time) string { return at.UTC().Format("15:04:05 UTC") }

func routeText(t *wire.Task) string {
	if t.Request.Route == "" {
		return wire.DefaultRoute
	}
	return t.Request.Route
}

// note writes a line that is not about a change of the task, above the
// status line.
func (p *progress) note(msg string) {
	status := p.status
	p.line(p.ui.paint(sgrDim, msg))
	if status != "" {
		p.setStatus(status)
	}
}

// line writes a lasting line where the status line was; update draws the
// status line again after its lines.
func (p *progress) line(s string) {
	p.clear()
	fmt.Fprintln(p.w, s)
}

func (p *progress) setStatus(s string) {
	p.status = s
	fmt.Fprint(p.w, "\r\x1b[K"+p.ui.paint(sgrDim, s))
}

// clear removes the status line.
func (p *progress) clear() {
	if p.status != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.status = ""
	}
}

// pinsText is the versions a task runs: "reviewer@3f2a9c1b7d20 with
// capabilities review-skill@… and env review-env@…".
func pinsText(p *wire.Pins) string {
	s := p.Subagent
	if len(p.Capabilities) > 0 {
		s += " with capabilities " + strings.Join(p.Capabilities, ", ")
	}
	if len(p.Env) > 0 {
		s += " and env " + strings.Join(p.Env, ", ")
	}
	return s
}

// tailLines is how much of a failed round's output dispatch --wait shows.
const tailLines = 20

// writeOutputTail writes the last lines of what the failed round of t
// printed (the worker's event lines left out), so that a CI log shows why
// it failed, not only its exit code. The output is read from the server;
// when it cannot be, one line says so.
func writeOutputTail(ctx context.Context, c *client.Client, t *wire.Task, w io.Writer) {
	r := lastRound(t)
	if r == nil {
		return
	}
	lines, cut, err := c.OutputTail(ctx, t.ID, r.N, tailLines)
	if err != nil {
		fmt.Fprintf(w, "round %d's output could not be read (%v); 'agora logs %s' shows it\n", r.N, clipText(err.Error(), 120), t.ID)
		return
	}
	if len(lines) == 0 {
		fmt.Fprintf(w, "round %d printed nothing\n", r.N)
		return
	}
	from := ""
	if cut {
		from = fmt.Sprintf("its last %d lines; ", tailLines)
	}
	fmt.Fprintf(w, "round %d's output (%s'agora logs %s --round %d' shows it all):\n", r.N, from, t.ID, r.N)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "strings" }
