// Package demo is agora demo's script: on the embedded stack (started
// through the composition root) a registered example sub-agent asks which
// of two config files to keep, the question is answered — from --answer,
// the terminal, the web inbox or its default — and the same sub-agent
// resumes with the answer and finishes; then its timeline.
package demo

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/roles"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Options are the demo's own flags and environment.
type Options struct {
	Answer string // --answer: answer with this instead of asking
	Keep   bool   // --keep: keep the temporary data directory
	Web    bool   // --web: wait for the answer on the web inbox alone
	CI     bool   // CI=true: nobody to ask, take the default
	Debug  bool   // AGORA_LOG_LEVEL=debug: the stack logs to stderr
}

// Run shows the whole loop on the embedded stack configured by cfg (a
// temporary data directory when it names none): a sub-agent pauses with a
// question, it is answered, the same sub-agent resumes and finishes.
func Run(ctx context.Context, cfg roles.Config, o Options, stdin io.Reader, stdout, stderr io.Writer) error {
	// The demo's sub-agent is a shell script: without a static busybox the
	// image has no /bin/sh and round 1 would fail minutes from now.
	if err := checkBusybox(cfg.Busybox); err != nil {
		return err
	}
	if cfg.DataDir == "" {
		tmp, err := os.MkdirTemp("", "agora-demo-")
		if err != nil {
			return err
		}
		cfg.DataDir = tmp
		if !o.Keep {
			defer os.RemoveAll(tmp)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.Debug {
		quiet = slog.New(slog.NewTextHandler(stderr, nil))
	}
	cfg.Logger = quiet
	fmt.Fprintf(stdout, "starting the embedded stack (NATS with JetStream, orchestrator, Docker runner, API) in %s …\n", cfg.DataDir)
	st, err := roles.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = st.Stop(sctx)
	}()
	fmt.Fprintf(stdout, "  API %s · NATS %s\n\n", st.URL(), st.NATSURL())

	c := client.New(st.URL(), "")
	// Registered like any sub-agent: the registry gives it a content-addressed
	// version, and the task pins it.
	reg, err := c.RegisterSubagent(ctx, wire.Subagent{Name: "config-tidier", Runtime: schemas.RuntimeExec,
		Description: "Keeps one of two config files; asks which.",
		Command:     wire.Command{"/bin/sh", "-c", demoAgent}, Route: "human=1h"})
	if err != nil {
		return fmt.Errorf("register the example sub-agent: %w", err)
	}
	fmt.Fprintf(stdout, "registered sub-agent %s (version %d): the task pins it\n", reg.Entry.Ref(), reg.Entry.Seq)
	taskID := fmt.Sprintf("demo-%d", time.Now().Unix())
	task, err := c.Submit(ctx, wire.SubmitRequest{
		TaskID:      taskID,
		SubagentRef: reg.Entry.Ref(),
		Input:       []byte(`{"goal":"one config file"}`),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "task %s: sub-agent %s; %s\n", task.ID, task.Pins.Subagent, task.Attention.Summary)
	task, err = c.Wait(ctx, task.ID)
	if err != nil {
		return err
	}
	if task.State != wire.StateNeedsInput {
		return fmt.Errorf("round 1 ended %s (%s), expected a question", task.State, outcomeText(task))
	}
	q := task.Rounds[len(task.Rounds)-1].Question
	fmt.Fprintf(stdout, "\nthe sub-agent asks: %s\n  context: %s\n", q.Question, q.Context)
	for i, o := range q.Options {
		fmt.Fprintf(stdout, "  %d) %s\n", i+1, o)
	}
	fmt.Fprintf(stdout, "  partial_state it left for its next round: %s\n  (the next command would be: %s)\n", q.PartialState, task.Attention.Action)
	fmt.Fprintf(stdout, "  or answer on the web inbox: %s/tasks/%s\n\n", st.URL(), task.ID)

	if task, err = answerAnywhere(ctx, c, task, o, stdin, stdout); err != nil {
		return err
	}
	task, err = c.Wait(ctx, task.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\ntimeline of %s — %s\n", task.ID, task.State)
	printTimeline(stdout, task)
	if task.State != wire.StateFinished {
		return fmt.Errorf("the task ended %s: %s", task.State, outcomeText(task))
	}
	fmt.Fprintln(stdout, "\nthe same sub-agent resumed with the answer and its own notes, and finished.")
	return nil
}

// demoAgent is the example sub-agent: it asks which of two config files to
// keep, leaves its notes in partial_state, and on the next round acts on the
// answer.
//
//go:embed demo_agent.sh
var demoAgent string

// checkBusybox fails at once, naming the command that fixes it, unless
// path (default roles.DefaultBusybox) is a static busybox. A --busybox
// that is not one is a usage error.
func checkBusybox(path string) error {
	explicit := path != ""
	if !explicit {
		path = roles.DefaultBusybox
	}
	err := roles.CheckBusybox(path)
	if err == nil {
		return nil
	}
	install := "sudo apt-get install busybox-static"
	if os.Geteuid() == 0 {
		install = "apt-get install busybox-static"
	}
	what := fmt.Sprintf("%s is no static executable (%v)", path, err)
	if errors.Is(err, fs.ErrNotExist) {
		what = "there is no " + path
	}
	msg := fmt.Sprintf("the demo's sub-agent is a shell script and needs a static busybox as /bin/sh in the worker image, but %s; install Debian's with `%s` (make demo does when run as root), or pass --busybox PATH to a static busybox", what, install)
	if explicit {
		return exitcode.Usagef("--busybox: %s", msg)
	}
	return errors.New(msg)
}

// answerAnywhere takes the answer from --answer, or the terminal, or
// the question's default (answer), or the web inbox: whichever comes
// first while the terminal is asked; with --web, the inbox alone. It
// returns the task once its question is answered.
func answerAnywhere(ctx context.Context, c *client.Client, task *wire.Task, o Options, stdin io.Reader, stdout io.Writer) (*wire.Task, error) {
	round := task.Rounds[len(task.Rounds)-1]
	q := round.Question
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type typed struct {
		answer, by string
		err        error
	}
	fromTerminal := make(chan typed, 1)
	if o.Web {
		fmt.Fprintln(stdout, "waiting for the answer on the web inbox …")
	} else {
		// The terminal is read aside: a read cannot be stopped when the
		// answer comes from the web (the process ends soon after anyway).
		go func() {
			a, by, err := answer(q, o.Answer, o.CI, stdin, stdout)
			fromTerminal <- typed{a, by, err}
		}()
	}
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case got := <-fromTerminal:
			if got.err != nil {
				return nil, got.err
			}
			t, err := c.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Round: round.N, Answer: got.answer, By: got.by, Channel: "cli"})
			if errors.Is(err, wire.ErrAlreadyAnswered) {
				continue // the web was first: the next tick reads its answer
			}
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(stdout, "answered %q; %s\n", got.answer, t.Attention.Summary)
			return t, nil
		case <-tick.C:
			t, err := c.Get(ctx, task.ID)
			if err != nil {
				return nil, err
			}
			if len(t.Rounds) < round.N {
				continue
			}
			if a := t.Rounds[round.N-1].Answer; a != nil {
				fmt.Fprintf(stdout, "\nanswered %q by %s from the %s; %s\n", a.Value, a.By, a.Channel, t.Attention.Summary)
				return t, nil
			}
		}
	}
}

// answer takes --answer, else the terminal, else (CI=true, or stdin
// is no terminal: a pipe, a file, /dev/null) the question's default. A
// terminal that ends (Ctrl-D) before a valid answer takes the default too.
func answer(q *schemas.NeedsInput, flagAnswer string, ci bool, stdin io.Reader, stdout io.Writer) (string, string, error) {
	if flagAnswer != "" {
		return flagAnswer, "--answer", nil
	}
	byDefault := func(why string) (string, string, error) {
		if q.Default == nil {
			return "", "", exitcode.Usagef("%s and the question has no default; pass --answer ANSWER (one of %s)", why, strings.Join(q.Options, ", "))
		}
		fmt.Fprintf(stdout, "%s: taking the question's default %q\n", why, *q.Default)
		return *q.Default, "the demo (default, no terminal)", nil
	}
	switch {
	case ci:
		return byDefault("CI=true, nobody to ask")
	case !isTerminal(stdin):
		return byDefault("stdin is not a terminal")
	}
	sc := bufio.NewScanner(stdin)
	for {
		fmt.Fprint(stdout, "your answer (number or text): ")
		if !sc.Scan() {
			fmt.Fprintln(stdout)
			return byDefault("no answer on the terminal")
		}
		a := strings.TrimSpace(sc.Text())
		if i, err := strconv.Atoi(a); err == nil && i >= 1 && i <= len(q.Options) {
			a = q.Options[i-1]
		}
		for _, o := range q.Options {
			if o == a {
				return a, "you, on the terminal", nil
			}
		}
		fmt.Fprintf(stdout, "%q is not one of %s\n", a, strings.Join(q.Options, ", "))
	}
}

// isTerminal reports whether r is a terminal. A character device is not
// enough: /dev/null is one too.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && view.IsTTY(f)
}

func outcomeText(t *wire.Task) string {
	if t.Outcome != nil {
		return t.Outcome.Reason + ": " + t.Outcome.Detail
	}
	return t.Attention.Summary
}

// printTimeline lists a task's rounds: when each ran, what it asked, who
// answered and after how long.
func printTimeline(w io.Writer, t *wire.Task) {
	for _, r := range t.Rounds {
		ran := ""
		if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
			ran = fmt.Sprintf(" in %s", r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond))
		}
		fmt.Fprintf(w, "  round %d  %-22s queued %s, %s%s\n", r.N, r.DispatchID, r.QueuedAt.Local().Format("15:04:05.000"), r.State, ran)
		if r.Question != nil {
			fmt.Fprintf(w, "           asked   %q\n", r.Question.Question)
		}
		if a := r.Answer; a != nil {
			assumed := ""
			if a.Assumed {
				assumed = " (assumed)"
			}
			fmt.Fprintf(w, "           answer  %q by %s via %s after %s%s\n", a.Value, a.By, a.Channel, (time.Duration(a.WaitMS) * time.Millisecond).Round(time.Millisecond), assumed)
		}
		if r.Failure != nil {
			fmt.Fprintf(w, "           failed  %s: %s\n", r.Failure.Reason, r.Failure.Detail)
		}
	}
}
