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
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
)

const dispatchSynopsis = `--subagent NAME[@VERSION] | --subagent-file FILE | --command "CMD" [--name NAME] [--input JSON|@FILE] [--route ROUTE]
       [--task-id ID] [--timeout SECONDS] [--allow-memory] [--label KEY=VALUE]... [--wait]
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
)

type dispatchFlags struct {
	subagent, subagentFile, command, name, input, route, taskID, timeout string
	allowMemory, wait                                                    bool
	labels                                                               multiFlag
	api                                                                  *apiFlags
}

func runDispatch(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return verbExit(stderr, "agora dispatch", dispatchMain(ctx, args, environ, stdout, stderr))
}

// parseDispatch reads the flags and the files they name into the request,
// without contacting anything: every mistake is found before a task
// exists.
func parseDispatch(args []string, stdout io.Writer) (dispatchFlags, orchestrator.SubmitRequest, error) {
	var f dispatchFlags
	var req orchestrator.SubmitRequest
	fs := flag.NewFlagSet("agora dispatch", flag.ContinueOnError)
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
	fs.BoolVar(&f.wait, "wait", false, "wait until the task ends, showing its progress on stderr and printing its result alone on stdout (a string as its text, else JSON; with --json the final task); exit 0 finished, 1 failed, 3 expired or cancelled (2 a usage error)")
	pos, err := parseVerb(fs, dispatchSynopsis, args, stdout)
	if err != nil {
		return f, req, err
	}
	if len(pos) > 0 {
		return f, req, usagef("unexpected argument %q; a command goes in quotes: --command \"%s\"", pos[0], strings.Join(pos, " "))
	}
	given := 0
	for _, v := range []string{f.subagent, f.subagentFile, f.command} {
		if v != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return f, req, usagef(`want --subagent NAME, --subagent-file FILE or --command "CMD", e.g. agora dispatch --command 'echo hello' --wait`)
	case given > 1:
		return f, req, usagef("want one of --subagent, --subagent-file or --command, not several")
	case f.subagent != "":
		if _, _, err := registry.ParseRef(f.subagent); err != nil {
			return f, req, usagef("--subagent %q: want a registered sub-agent's NAME or NAME@VERSION; 'agora subagent list' shows them", f.subagent)
		}
		if f.name != "" {
			return f, req, usagef("--name renames an inline sub-agent; a registered one keeps its name")
		}
		req.SubagentRef = f.subagent
	case f.subagentFile != "":
		def, err := readSubagentFile(f.subagentFile)
		if err != nil {
			return f, req, err
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
			return f, req, err
		}
	}
	if f.route != "" {
		if _, err := answer.ParseRoute(f.route); err != nil {
			return f, req, usagef("--route %q: %v; e.g. --route memory,lookup,human=30m", f.route, err)
		}
		req.Route = f.route
	}
	if f.timeout != "" {
		if req.TimeoutSeconds, err = parseSeconds(f.timeout); err != nil {
			return f, req, err
		}
	}
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return f, req, usagef("--label %q: want KEY=VALUE", l)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
	}
	// The server's own rule, checked before the request leaves the CLI.
	if f.taskID != "" && orchestrator.CheckTaskID(f.taskID) != nil {
		return f, req, usagef("--task-id %q: want letters, digits, '-' and '_' (starting with a letter or digit, at most 96)", f.taskID)
	}
	req.TaskID, req.AllowMemory = f.taskID, f.allowMemory
	return f, req, nil
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
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		why := "null"
		if err != nil {
			why = err.Error()
		}
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			why = "not an object"
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
func readSubagentFile(name string) (*registry.Subagent, error) {
	data, err := registry.ReadFile(name)
	if err != nil {
		return nil, usagef("--subagent-file %v", err)
	}
	def, err := registry.ParseSubagent(name, data)
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
func inlineRequest(def *registry.Subagent) orchestrator.SubmitRequest {
	req := orchestrator.SubmitRequest{Subagent: def.Spec(), Route: def.Route, TimeoutSeconds: def.TimeoutSeconds,
		Image: def.Image, Network: def.Network, Egress: def.Egress, Resources: def.Resources, Workspace: def.Workspace, AllowMemory: def.AllowMemory, Retry: def.Retry}
	if def.Limits != nil {
		req.Limits = orchestrator.Limits{MaxRounds: def.Limits.MaxRounds, MaxWaitSeconds: def.Limits.MaxWaitSeconds}
	}
	return req
}

// dispatchMain submits a task; with --wait it follows it to its end.
func dispatchMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, req, err := parseDispatch(args, stdout)
	if err != nil {
		return err
	}
	a := f.api
	c, err := a.connect(environ)
	if err != nil {
		return err
	}
	start := time.Now()
	t, err := c.Submit(ctx, req)
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
	p := &progress{w: stderr, ui: newUI(stderr, environ), start: start, asked: map[string]bool{}}
	opts := client.FollowOptions{Poll: waitPoll, GiveUp: waitGiveUp, OnUpdate: p.update,
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
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("stopped waiting; task %s goes on ('agora status %s' shows it, 'agora cancel %s' stops it)", t.ID, t.ID, t.ID)
		}
		return a.explain(err, t.ID)
	}
	// stdout carries the result alone (docs/ci.md): out=$(agora dispatch
	// … --wait). With --json, the final task, its result read in.
	result, rerr := taskResult(ctx, c, final)
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
	case orchestrator.StateFinished:
		return nil
	case orchestrator.StateFailed:
		writeOutputTail(ctx, c, final, stderr)
		return exitOutcome{code: exitFailed, msg: fmt.Sprintf("task %s failed: %s; 'agora logs %s' shows its output, 'agora respawn %s' runs it again",
			final.ID, outcomeDetail(final), final.ID, final.ID)}
	}
	return exitOutcome{code: exitEnded, msg: fmt.Sprintf("task %s %s: %s; 'agora status %s' shows its timeline", final.ID, stateLabel(final.State), outcomeDetail(final), final.ID)}
}

// progress shows a waited-for task on stderr: a line for every change of
// state or round, the question once per round with the command that
// answers it, and on a terminal a status line kept up to date in place.
type progress struct {
	w     io.Writer
	ui    ui
	start time.Time
	// last is the state and round of the last line written.
	last string
	// asked holds the dispatches whose question was shown.
	asked map[string]bool
	// status is the current in-place line, empty when none is shown.
	status string
	task   *orchestrator.Task
}

func (p *progress) update(t *orchestrator.Task) {
	p.task = t
	r := lastRound(t)
	elapsed := "0s"
	if e := time.Since(p.start).Truncate(time.Second); e > 0 {
		elapsed = humanDuration(e)
	}
	key := string(t.State) + "/" + roundText(r)
	if key != p.last {
		p.last = key
		p.line(fmt.Sprintf("%s %s · round %s · %s", p.ui.paint(sgrBold, t.ID), p.ui.state(t.State), roundText(r), elapsed))
	}
	if t.State == orchestrator.StateNeedsInput && r != nil && r.Question != nil && !p.asked[r.DispatchID] {
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
		p.line("  still waiting: the answer may come from anyone with access, or from the route (" + routeText(t) + ")")
	}
	if p.ui.tty && !t.State.Terminal() {
		p.setStatus(fmt.Sprintf("… %s %s · round %s · %s", t.ID, stateLabel(t.State), roundText(r), elapsed))
	}
}

func routeText(t *orchestrator.Task) string {
	if t.Request.Route == "" {
		return orchestrator.DefaultRoute
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
func pinsText(p *registry.Pins) string {
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
func writeOutputTail(ctx context.Context, c *client.Client, t *orchestrator.Task, w io.Writer) {
	r := lastRound(t)
	if r == nil {
		return
	}
	tail := &tailBuffer{max: 64 << 10}
	filter := &subagentLines{w: tail}
	err := c.Logs(ctx, t.ID, r.N, false, filter)
	if err == nil {
		err = filter.Flush()
	}
	if err != nil {
		fmt.Fprintf(w, "round %d's output could not be read (%v); 'agora logs %s' shows it\n", r.N, clipText(err.Error(), 120), t.ID)
		return
	}
	lines := strings.Split(strings.TrimRight(string(tail.data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		fmt.Fprintf(w, "round %d printed nothing\n", r.N)
		return
	}
	from := ""
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
		from = fmt.Sprintf("its last %d lines; ", tailLines)
	}
	fmt.Fprintf(w, "round %d's output (%s'agora logs %s --round %d' shows it all):\n", r.N, from, t.ID, r.N)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// tailBuffer keeps about the last max bytes written to it.
type tailBuffer struct {
	data []byte
	max  int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.data = append(b.data, p...)
	if len(b.data) > 2*b.max {
		b.data = append(b.data[:0:0], b.data[len(b.data)-b.max:]...)
	}
	return len(p), nil
}
