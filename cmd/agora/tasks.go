package main

// The task verbs that read or change a task's state — status, questions,
// answer, cancel, respawn, continue, rm — and what every verb that talks
// to the agora server shares: --server, --token and --json, positional
// arguments among the flags, and the server's errors turned into one line
// that says what to do.

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
	"github.com/agoradev/agora/cmd/agora/internal/submitreq"
	"github.com/agoradev/agora/cmd/agora/internal/verbflags"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// defaultServer is where the CLI looks for the API without --server or
// $AGORA_SERVER (explain.DefaultServer).
const defaultServer = explain.DefaultServer

// apiFlags are the flags of every verb that talks to the server.
type apiFlags struct {
	server, token string
	json          bool
}

func newAPIFlags(fs *flag.FlagSet) *apiFlags {
	a := &apiFlags{}
	fs.StringVar(&a.server, "server", "", "the agora server's `URL` (default $AGORA_SERVER, else the config file's context, else "+defaultServer+")")
	fs.StringVar(&a.token, "token", "", "the API bearer `TOKEN` (default $AGORA_TOKEN, else the context's)")
	fs.BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	return a
}

// apiVerb is what every verb that talks to the server starts from: its
// flag set, which holds --server, --token and --json beside the verb's
// own flags (declared on fs too).
type apiVerb struct {
	*apiFlags
	fs *flag.FlagSet
}

func newAPIVerb(fs *flag.FlagSet) *apiVerb {
	return &apiVerb{apiFlags: newAPIFlags(fs), fs: fs}
}

// open is the one preamble of those verbs once their flags are parsed: it
// lets check refuse the arguments (pos) or a combination of flags with a
// usage error before anything is sent, and returns a client of the server
// with those arguments.
func (v *apiVerb) open(pos, environ []string, check func(pos []string) error) (*client.Client, []string, error) {
	if check != nil {
		if err := check(pos); err != nil {
			return nil, nil, err
		}
	}
	c, err := v.connect(environ)
	if err != nil {
		return nil, nil, err
	}
	return c, pos, nil
}

// connect settles the server and token (flag, else environment, else
// default) and returns a client of that server.
func (a *apiFlags) connect(environ []string) (*client.Client, error) {
	server, err := explain.Server(a.server, getenv(environ, "AGORA_SERVER"))
	if err != nil {
		return nil, err
	}
	a.server = server
	if a.token == "" {
		a.token = getenv(environ, "AGORA_TOKEN")
	}
	return client.New(a.server, a.token), nil
}

// wantOne is a check for open: exactly one argument, else usage.
func wantOne(usage string) func([]string) error {
	return func(pos []string) error {
		if len(pos) != 1 {
			return exitcode.UsageError{Msg: usage}
		}
		return nil
	}
}

// who is the person an answer or a follow-up is recorded as: --by, else
// (when a token is given) the token's name, which the server records, else
// $USER.
func (a *apiFlags) who(by string, environ []string) string {
	if by == "" && a.token == "" {
		return getenv(environ, "USER")
	}
	return by
}

// explain turns an error of the client into one line that says what to
// do; taskID names the task the call was about, if any.
func (a *apiFlags) explain(err error, taskID string) error {
	return explain.Error(a.server, a.token, err, taskID)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error { return view.JSON(w, v) }

// show writes v as JSON with --json, else calls text, which writes it
// for people.
func (a *apiFlags) show(w io.Writer, v any, text func()) error {
	if a.json {
		return writeJSON(w, v)
	}
	text()
	return nil
}

// verbExit turns main's error into the exit code: 0, 1 for a failure, 2
// for a usage error, or the code of an exitcode.Outcome.
func verbExit(stderr io.Writer, name string, err error) int { return exitcode.Verb(stderr, name, err) }

// ---- paging

// pageFlags are --limit, --cursor and --all of the verbs that list: by
// default one page, the server's default size.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

func newPageFlags(fs *flag.FlagSet, items string) *pageFlags {
	p := &pageFlags{}
	fs.IntVar(&p.limit, "limit", 0, fmt.Sprintf("show at most `N` %s (default %d, at most %d)", items, wire.DefaultPageLimit, wire.MaxPageLimit))
	fs.StringVar(&p.cursor, "cursor", "", "show the page after the one that printed this `CURSOR` (its next_cursor)")
	fs.BoolVar(&p.all, "all", false, "show every one of the "+items+", following every page")
	return p
}

func (p *pageFlags) check(name string) error {
	switch {
	case p.limit < 0 || p.limit > wire.MaxPageLimit:
		return usagef("--limit %d: want 1 to %d; --all shows every one", p.limit, wire.MaxPageLimit)
	case p.all && (p.limit != 0 || p.cursor != ""):
		return usagef("--all follows every page; drop --limit and --cursor (run '%s -h' for the flags)", name)
	}
	return nil
}

// limitText is --limit's value as typed, "" when not given.
func (p *pageFlags) limitText() string {
	if p.limit == 0 {
		return ""
	}
	return strconv.Itoa(p.limit)
}

func (p *pageFlags) options() wire.PageOptions {
	return wire.PageOptions{Limit: p.limit, Cursor: p.cursor}
}

// ---- status

const statusSynopsis = "[TASK] [--state STATE] [--label KEY=VALUE] [--limit N | --cursor CURSOR | --all] [--json] [--server URL] [--token TOKEN]"

// statusVerb without TASK is the attention view: the counts and a page of
// the tasks, newest first, each with what it needs and the exact next
// command, what waits for a person first. With TASK it is the task's
// timeline.
func statusVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	state, names := new(string), make([]string, len(wire.States))
	for i, s := range wire.States {
		names[i] = string(s)
	}
	a.fs.Var(verbflags.NewEnum(state, "want one of "+strings.Join(names, ", "), names...), "state", "only tasks in `STATE` (running, queued, needs_input, finished, failed, cancelled, expired)")
	label := a.fs.String("label", "", "only tasks labelled `KEY=VALUE`")
	pf := newPageFlags(a.fs, "tasks")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, func(pos []string) error {
			if len(pos) > 1 {
				return usagef("want at most one TASK, got %d; run 'agora status -h' for the flags", len(pos))
			}
			return pf.check("agora status")
		})
		if err != nil {
			return err
		}
		if len(pos) == 1 {
			t, err := c.Get(ctx, pos[0])
			if err != nil {
				return a.explain(err, pos[0])
			}
			return a.show(stdout, t, func() { view.New(stdout, environ).Timeline(stdout, t, time.Now()) })
		}
		opts := wire.ListOptions{State: wire.State(*state), Label: *label, Limit: pf.limit, Cursor: pf.cursor}
		var page wire.TaskPage
		if pf.all {
			page.Tasks, page.Summary, err = c.ListAll(ctx, opts)
		} else {
			page, err = c.List(ctx, opts)
		}
		if err != nil {
			return a.explain(err, "")
		}
		if a.json {
			if page.Tasks == nil {
				page.Tasks = []*wire.Task{}
			}
			return writeJSON(stdout, page)
		}
		view.New(stdout, environ).Attention(stdout, page.Tasks, page.Summary, view.FilterText(*state, *label, page))
		view.More(stdout, len(page.Tasks), "tasks", page.NextCursor, view.Words("agora status", "--state", *state, "--label", *label, "--limit", pf.limitText())...)
		return nil
	}
}

// ---- questions

const questionsSynopsis = "[--group] [--limit N | --cursor CURSOR | --all] [--json] [--server URL] [--token TOKEN]"

// questionsVerb lists a page of the open questions, oldest first.
func questionsVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	group := a.fs.Bool("group", false, "one row per identical question (normalised text and option set) of one batch, with the count and the tasks (reads every open question)")
	pf := newPageFlags(a.fs, "questions")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, _, err := a.open(args, environ, func(pos []string) error {
			if len(pos) > 0 {
				return usagef("unexpected argument %q; 'agora status TASK' shows one task", pos[0])
			}
			if err := pf.check("agora questions"); err != nil {
				return err
			}
			if *group && (pf.limit != 0 || pf.cursor != "") {
				return usagef("--group groups every open question; drop --limit and --cursor")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if *group {
			return questionsGroupedMain(ctx, c, a.apiFlags, environ, stdout)
		}
		var page wire.QuestionPage
		if pf.all {
			page.Questions, err = c.QuestionsAll(ctx)
		} else {
			page, err = c.Questions(ctx, pf.options())
		}
		if err != nil {
			return a.explain(err, "")
		}
		if a.json {
			if page.Questions == nil {
				page.Questions = []wire.QuestionView{}
			}
			return writeJSON(stdout, page)
		}
		view.New(stdout, environ).Questions(stdout, page.Questions, time.Now())
		view.More(stdout, len(page.Questions), "questions", page.NextCursor, view.Words("agora questions", "--limit", pf.limitText())...)
		return nil
	}
}

// ---- answer

const answerSynopsis = "TASK ANSWER [--round N | --all-like] [--by NAME] [--remember [--remember-scope SCOPE] [--remember-for 30d]] [--json] [--server URL] [--token TOKEN]"

// answerVerb answers a task's open question, by an option's value or its
// 1-based index. Who answers is --by, else the token's name when a token
// is given, else $USER.
func answerVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	round := a.fs.Int("round", 0, "answer only if round `N`'s question is the open one (so an answer meant for round 1 never lands on round 2)")
	by := a.fs.String("by", "", "who answers, recorded in the timeline (default: the token's name, else $USER)")
	allLike := a.fs.Bool("all-like", false, "also answer every open question identical to TASK's (same batch, text and options); exit 1 if any fails")
	remember := a.fs.Bool("remember", false, "also make the answer a rule that answers the next questions like it at once ('agora rules' lists them)")
	rememberScope := a.fs.String("remember-scope", "", "the rule's scope: subagent (default), label:KEY=VALUE or owner")
	rememberFor := a.fs.String("remember-for", "", "how long the rule lasts, e.g. 12h or 7d (default 30d, at most 180d)")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, func(pos []string) error {
			switch {
			case len(pos) != 2:
				return usagef("want TASK ANSWER, e.g. agora answer t-42 B ('agora questions' lists the open ones)")
			case *round < 0:
				return usagef("--round %d: want a round number (1, 2, …)", *round)
			case *allLike && *round != 0:
				return usagef("--all-like answers each task's open round; drop --round")
			case strings.TrimSpace(pos[1]) == "":
				return usagef("the ANSWER is empty; give one of the question's options (or its number), or a free-text answer")
			}
			return nil
		})
		if err != nil {
			return err
		}
		rem, err := submitreq.Remember(*remember, *rememberScope, *rememberFor)
		if err != nil {
			return err
		}
		if *allLike && rem != nil {
			return usagef("--remember makes a rule of one answer; drop --all-like (the rule answers the others' next questions)")
		}
		who := a.who(*by, environ)
		if *allLike {
			return answerAllLikeMain(ctx, c, a.apiFlags, pos[0], pos[1], who, stdout)
		}
		t, err := c.Answer(ctx, wire.AnswerRequest{TaskID: pos[0], Round: *round, Answer: pos[1], By: who, Channel: "cli", Remember: rem})
		if errors.Is(err, wire.ErrNoQuestion) {
			return fmt.Errorf("%v; 'agora questions' lists the open ones", a.explain(err, pos[0]))
		}
		if err != nil {
			return a.explain(err, pos[0])
		}
		return a.show(stdout, t, func() { view.Answered(stdout, t) })
	}
}

// ---- cancel, respawn, continue, rm

// bulkSynopsis is a verb that takes one TASK or a selector.
const bulkSynopsis = "TASK | --batch ID | --label KEY=VALUE | --state STATE [--yes] [--json] [--server URL] [--token TOKEN]"

// cancelVerb cancels a task. A task that has already ended is no error
// (exit 0, and the line says how it ended), so a CI job's cleanup step can
// always run it; an unknown task still is.
func cancelVerb(fs *flag.FlagSet) runFunc {
	ended := false // the task had ended before the cancel
	return taskOpVerb(fs, "agora cancel", bulkCancel,
		func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) {
			t, err := c.Cancel(ctx, id)
			if errors.Is(err, wire.ErrWrongState) {
				if got, gerr := c.Get(ctx, id); gerr == nil && got.State.Terminal() {
					ended = true
					return got, nil
				}
			}
			return t, err
		},
		func(t *wire.Task) string {
			if ended {
				return fmt.Sprintf("%s had already ended: %s (%s); nothing to cancel", t.ID, view.StateLabel(t.State), view.OutcomeDetail(t))
			}
			return fmt.Sprintf("%s cancelled (%s); 'agora respawn %s' runs it again", t.ID, view.OutcomeDetail(t), t.ID)
		})
}

func respawnVerb(fs *flag.FlagSet) runFunc {
	return taskOpVerb(fs, "agora respawn", bulkRespawn,
		func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) { return c.Respawn(ctx, id) },
		func(t *wire.Task) string {
			return fmt.Sprintf("%s respawned: round %s queued; follow it with 'agora logs %s -f'", t.ID, view.RoundText(view.LastRound(t)), t.ID)
		})
}

// removeVerb deletes a task and its stored output (cancelling it first if
// it has not ended), or every task a selector picks.
func removeVerb(fs *flag.FlagSet) runFunc {
	return taskOpVerb(fs, "agora rm", bulkRemove,
		func(ctx context.Context, c *client.Client, id string) (*wire.Task, error) {
			return &wire.Task{ID: id}, c.Remove(ctx, id)
		},
		func(t *wire.Task) string { return "removed " + t.ID + " and its stored output" })
}

// oneOrBulk is a task verb's selectors, declared on a's flags. With a
// selector its run does the bulk operation (bulked true); otherwise it
// returns the TASK arguments for the one-task form.
func (a *apiVerb) oneOrBulk(bulk bulkOp) func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) (_ []string, bulked bool, _ error) {
	sf := newSelectorFlags(a.fs, bulk.verb)
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) ([]string, bool, error) {
		sel, err := sf.selector()
		if err != nil {
			return nil, false, err
		}
		if sel.Empty() {
			return pos, false, nil
		}
		if len(pos) > 0 {
			return nil, true, usagef("give one TASK or a selector (--batch, --label, --state), not both")
		}
		c, err := a.connect(environ)
		if err != nil {
			return nil, true, err
		}
		return nil, true, bulkMain(ctx, c, a.apiFlags, bulk, sel, sf.yes, stdout, stderr)
	}
}

// taskOpVerb is a verb that takes one TASK and changes it, or every task
// a selector picks (bulk).
func taskOpVerb(fs *flag.FlagSet, name string, bulk bulkOp,
	op func(context.Context, *client.Client, string) (*wire.Task, error), done func(*wire.Task) string) runFunc {
	a := newAPIVerb(fs)
	oneOrBulk := a.oneOrBulk(bulk)
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		pos, bulked, err := oneOrBulk(ctx, args, environ, stdout, stderr)
		if bulked || err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("want one TASK, e.g. %s t-42, or a selector, e.g. %s --batch nightly ('agora status' lists the tasks)", name, name)
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		t, err := op(ctx, c, pos[0])
		if err != nil {
			return a.explainOp(ctx, c, err, pos[0])
		}
		var out any = t
		if bulk.verb == bulkRemove.verb { // the task is gone: say so
			out = wire.Change{TaskID: t.ID, Removed: true}
		}
		return a.show(stdout, out, func() { fmt.Fprintln(stdout, done(t)) })
	}
}

// explainOp is explain plus, for an operation the task's state does not
// allow, the command that fits its state.
func (a *apiFlags) explainOp(ctx context.Context, c *client.Client, err error, taskID string) error {
	return explain.Op(ctx, c, a.server, a.token, err, taskID)
}

const continueSynopsis = "TASK MESSAGE [--by NAME] [--json] [--server URL] [--token TOKEN]"

// continueVerb gives a finished task a follow-up message: a new round.
func continueVerb(fs *flag.FlagSet) runFunc {
	a := newAPIVerb(fs)
	by := a.fs.String("by", "", "who continues, recorded in the timeline (default: the token's name, else $USER)")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, pos, err := a.open(args, environ, func(pos []string) error {
			if len(pos) != 2 || strings.TrimSpace(pos[1]) == "" {
				return usagef(`want TASK MESSAGE, e.g. agora continue t-42 "Now label the duplicates too."`)
			}
			return nil
		})
		if err != nil {
			return err
		}
		t, err := c.Continue(ctx, pos[0], pos[1], a.who(*by, environ))
		if err != nil {
			return a.explainOp(ctx, c, err, pos[0])
		}
		return a.show(stdout, t, func() {
			fmt.Fprintf(stdout, "%s continued: round %s queued with the message; follow it with 'agora logs %s -f'\n", t.ID, view.RoundText(view.LastRound(t)), t.ID)
		})
	}
}
