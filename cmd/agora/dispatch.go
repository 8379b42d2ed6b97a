package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/cmd/agora/internal/progress"
	"github.com/agoradev/agora/cmd/agora/internal/submitreq"
	"github.com/agoradev/agora/cmd/agora/internal/view"
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
	defaultHeartbeat = progress.DefaultHeartbeat
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

func runDispatch(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return verbExit(stderr, "agora dispatch", dispatchMain(ctx, args, environ, stdout, stderr))
}

// parseDispatch reads the flags and the files they name into the request,
// without contacting anything: every mistake is found before a task
// exists.
func parseDispatch(args []string, stdout io.Writer) (dispatchFlags, wire.SubmitRequest, error) {
	var f dispatchFlags
	var req wire.SubmitRequest
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
	fs.BoolVar(&f.wait, "wait", false, "wait until the task ends, showing its progress on stderr and printing its result alone on stdout (a string as its text, else JSON; with --json the final task); exit 0 finished, 1 failed, 3 expired or cancelled (2 a usage error); "+
		"SIGINT or SIGTERM cancels the task and exits 130 or 143")
	fs.BoolVar(&f.detachOnSignal, "detach-on-signal", false, "with --wait: on SIGINT or SIGTERM stop waiting and leave the task running (exit 1), instead of cancelling it")
	fs.DurationVar(&f.heartbeat, "heartbeat", defaultHeartbeat, "with --wait: while a question waits for a person, say so this often (`DURATION`, at least 1s)")
	pos, err := parseArgs(fs, dispatchSynopsis, args, stdout)
	if err != nil {
		return f, req, err
	}
	for _, name := range []string{"detach-on-signal", "heartbeat"} {
		if fs.Changed(name) && !f.wait {
			return f, req, usagef("--%s is about --wait, which is not given: add --wait", name)
		}
	}
	if len(pos) > 0 {
		return f, req, usagef("unexpected argument %q; a command goes in quotes: --command \"%s\"", pos[0], strings.Join(pos, " "))
	}
	if f.heartbeat < time.Second {
		return f, req, usagef("--heartbeat %s: want a duration of at least 1s, e.g. --heartbeat 30s", f.heartbeat)
	}
	req, err = submitreq.Build(submitreq.Flags{Subagent: f.subagent, SubagentFile: f.subagentFile, Command: f.command, Name: f.name,
		Input: f.input, Route: f.route, TaskID: f.taskID, Timeout: f.timeout, AllowMemory: f.allowMemory, Labels: f.labels})
	return f, req, err
}

// dispatchMain submits a task; with --wait it follows it to its end.
func dispatchMain(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	f, req, err := parseDispatch(args, stdout)
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
		fmt.Fprintf(stderr, "%s pins %s\n", t.ID, view.PinsText(t.Pins))
	}
	if !f.wait {
		return a.show(stdout, t, func() { view.Submitted(stdout, t) })
	}
	u := view.New(stderr, environ)
	p := progress.New(stderr, u, start, time.Now)
	p.Heartbeat = f.heartbeat
	opts := client.FollowOptions{Poll: waitPoll, GiveUp: waitGiveUp, OnUpdate: p.Update, Tick: min(heartbeatCheck, f.heartbeat),
		OnTrouble: func(error) { p.Note("the agora server does not answer; still trying") }}
	if u.TTY {
		opts.Tick = time.Second
	}
	final, err := c.Follow(ctx, t, opts)
	p.Clear()
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
		err = writeJSON(stdout, final)
	} else {
		view.Ended(stderr, final, time.Since(start))
		err = view.Result(stdout, result)
	}
	if err != nil {
		return err
	}
	if rerr != nil {
		return fmt.Errorf("task %s %s, but its result could not be read: %w", final.ID, view.StateLabel(final.State), rerr)
	}
	switch final.State {
	case wire.StateFinished:
		return nil
	case wire.StateFailed:
		writeOutputTail(ctx, c, final, stderr)
		return exitcode.Outcome{Code: exitFailed, Msg: fmt.Sprintf("task %s failed: %s; 'agora logs %s' shows its output, 'agora respawn %s' runs it again",
			final.ID, view.OutcomeDetail(final), final.ID, final.ID)}
	}
	return exitcode.Outcome{Code: exitEnded, Msg: fmt.Sprintf("task %s %s: %s; 'agora status %s' shows its timeline", final.ID, view.StateLabel(final.State), view.OutcomeDetail(final), final.ID)}
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
		code, why = exitcode.Signal(sig), exitcode.SignalName(sig)
	}
	if detach {
		return fmt.Errorf("%s: stopped waiting; task %s goes on ('agora status %s' shows it, 'agora cancel %s' stops it)", why, id, id, id)
	}
	fmt.Fprintf(stderr, "agora dispatch: %s: cancelling task %s (--detach-on-signal would leave it running)\n", why, id)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	t, err := c.Cancel(cctx, id)
	if errors.Is(err, wire.ErrNotFound) {
		return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("interrupted before task %s was submitted; nothing runs", id)}
	}
	if errors.Is(err, wire.ErrWrongState) {
		// It ended between the last update and the cancel.
		if got, gerr := c.Get(cctx, id); gerr == nil && got.State.Terminal() {
			return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("task %s had already ended: %s (%s)", id, view.StateLabel(got.State), view.OutcomeDetail(got))}
		}
	}
	if err != nil {
		return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("could not cancel task %s (%v); it may still run: 'agora cancel %s' stops it",
			id, view.Clip(a.explainCancel(err, id).Error(), 200), id)}
	}
	return exitcode.Outcome{Code: code, Msg: fmt.Sprintf("task %s cancelled (%s); 'agora respawn %s' runs it again", id, view.OutcomeDetail(t), id)}
}

// explainCancel is explain for the cancel stopWaiting sends, whose
// deadline is its own.
func (a *apiFlags) explainCancel(err error, id string) error {
	return explain.Cancel(a.server, a.token, err, id, cancelTimeout)
}

// tailLines is how much of a failed round's output dispatch --wait shows.
const tailLines = 20

// writeOutputTail writes the last lines of what the failed round of t
// printed (the worker's event lines left out), so that a CI log shows why
// it failed, not only its exit code. The output is read from the server;
// when it cannot be, one line says so.
func writeOutputTail(ctx context.Context, c *client.Client, t *wire.Task, w io.Writer) {
	if r := view.LastRound(t); r != nil {
		lines, cut, err := c.OutputTail(ctx, t.ID, r.N, tailLines)
		view.OutputTail(w, t.ID, r.N, tailLines, lines, cut, err)
	}
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "strings" }
