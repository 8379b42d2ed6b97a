package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/cmd/agora/internal/follow"
	"github.com/agoradev/agora/cmd/agora/internal/progress"
	"github.com/agoradev/agora/cmd/agora/internal/submitreq"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

const dispatchSynopsis = `--subagent NAME[@VERSION] | --subagent-file FILE | --command "CMD" [--name NAME] [--input JSON|@FILE] [--route ROUTE]
       [--task-id ID] [--timeout SECONDS] [--allow-memory] [--label KEY=VALUE]... [--wait [--detach-on-signal] [--heartbeat DURATION]]
       [--json] [--server URL] [--token TOKEN]`

// defaultHeartbeat is how often --wait says it still waits while a
// question waits for a person (--heartbeat).
const defaultHeartbeat = progress.DefaultHeartbeat

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
	return submitreq.Build(submitreq.Flags{Subagent: f.subagent, SubagentFile: f.subagentFile, Command: f.command, Name: f.name,
		Input: f.input, Route: f.route, TaskID: f.taskID, Timeout: f.timeout, AllowMemory: f.allowMemory, Labels: f.labels})
}

// dispatchMain submits a task; with --wait it follows it to its end.
func dispatchMain(ctx context.Context, fs *flag.FlagSet, f *dispatchFlags, args, environ []string, stdout, stderr io.Writer) error {
	req, err := parseDispatch(fs, f, args)
	if err != nil {
		return err
	}
	if req.Route == "" && submitreq.FromCI(getenv(environ, "CI")) {
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
	if req.FromCI && explain.UnknownField(err, "from_ci") {
		// A server older than this CLI: it has no CI route. Submit as an
		// older CLI would, and say what that means.
		fmt.Fprintf(stderr, "agora dispatch: the server at %s is older than this agora and has no CI route: the task gets its default route (%s); pass --route, e.g. --route %s\n",
			a.server, wire.DefaultRoute, wire.DefaultCIRoute)
		req.FromCI = false
		t, err = c.Submit(ctx, req)
	}
	o := follow.Options{Server: a.server, Token: a.token, JSON: a.json, Detach: f.detachOnSignal, Heartbeat: f.heartbeat,
		UI: view.New(stderr, environ), Start: start}
	if err != nil && ctx.Err() != nil && f.wait && req.TaskID != "" {
		// Interrupted while submitting: the task may exist already, and
		// its id is known, so the cancel reaches it as it would later.
		return follow.Stop(ctx, c, o, req.TaskID, stderr)
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
	return follow.Wait(ctx, c, t, o, stdout, stderr)
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "strings" }
