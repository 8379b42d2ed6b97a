package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/idnames"
	"github.com/agoradev/agora/cmd/agora/internal/verbflags"
)

// runFunc is a verb's work once cobra has parsed its command line: args are
// the arguments that are not flags. Its error is the verb's exit (verbExit).
type runFunc func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error

// verb is one command of the CLI as the command tree registers it. Its
// flags are declared once, by flags on the cobra command's own flag set,
// next to the run that reads them: cobra parses them, and the help and the
// shell completion are made from the same declarations.
type verb struct {
	name    string
	aliases []string
	short   string
	// synopsis is what the overview shows after a verb without
	// subcommands (schema [NAME]).
	synopsis string
	// usage is the verb's usage after its name, for -h: its arguments and
	// flags (verbflags.PrintHelp lists the flags from their declarations).
	usage string
	// label prefixes the verb's errors when that is not its command path
	// (agora rules show says "agora rules: …").
	label string
	// flags declares the verb's flags on fs and returns its run.
	flags func(fs *flag.FlagSet) runFunc
	// subs are the verb's subcommands (batch submit, image build).
	subs []verb
	// help is a fixed text -h prints instead of the flags (a group's).
	help string
	// argHelp: -h is an argument to run, as these verbs always took it
	// (schema -h names no schema).
	argHelp bool
}

// group is the run of a verb that only holds subcommands: without one, or
// with an unknown one, it says what there is (exit 2); help prints its
// usage.
func group(usage, none, unknown string) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return func(_ context.Context, args, _ []string, stdout, _ io.Writer) error {
			switch {
			case len(args) == 0 || unknown == "":
				return usagef("%s", none)
			case args[0] == "help" && usage != "":
				fmt.Fprint(stdout, usage)
				return nil
			}
			return usagef(unknown, args[0])
		}
	}
}

// verbs is every command, in the order agora help lists them; the ones
// that read stdin read it from stdin.
func verbs(stdin io.Reader) []verb {
	return []verb{
		{name: "dispatch", short: "submit a task; --wait follows it to its end", usage: dispatchSynopsis, flags: dispatchVerb},
		{name: "status", short: "what every task needs and the next command; with TASK, its timeline", usage: statusSynopsis, flags: statusVerb},
		{name: "questions", short: "the open questions, oldest first, with the answer command", usage: questionsSynopsis, flags: questionsVerb},
		{name: "answer", short: "answer a task's question (an option or its number)", usage: answerSynopsis, flags: answerVerb},
		{name: "rules", short: "remembered answers (made by answer --remember): list, show RULE, rm RULE", usage: rulesSynopses[""], flags: rulesVerb(""), subs: []verb{
			{name: "list", usage: rulesSynopses["list"], label: "agora rules", flags: rulesVerb("list")},
			{name: "show", usage: rulesSynopses["show"], label: "agora rules", flags: rulesVerb("show")},
			{name: "rm", usage: rulesSynopses["rm"], label: "agora rules", flags: rulesVerb("rm")},
		}},
		{name: "watch", short: "the tasks, live, until interrupted", usage: watchSynopsis, flags: watchVerb},
		{name: "logs", short: "a round's output; -f follows a running round", usage: logsSynopsis, flags: logsVerb},
		{name: "result", short: "what a finished task hands back (a string as its text, else JSON)", usage: resultSynopsis, flags: resultVerb},
		{name: "artifacts", short: "a task's artifacts; NAME... -d DIR downloads them, sha256 checked", usage: artifactsSynopsis, flags: artifactsVerb},
		{name: "cancel", short: "stop a queued, running or waiting task, or all a selector picks (--batch, --label, --state)", usage: bulkSynopsis, flags: cancelVerb},
		{name: "respawn", short: "run a failed, cancelled or expired task's last round again (one, or by selector)", usage: bulkSynopsis, flags: respawnVerb},
		{name: "continue", short: "a new round of a finished task, with a follow-up message", usage: continueSynopsis, flags: continueVerb},
		{name: "replay", short: "run a finished task (or --batch) again from round 1 with its recorded answers; --wait exits 1 on a divergence", usage: replaySynopsis, flags: replayVerb},
		{name: "fork", short: "a new task from round N of a task, answered differently (--round N --answer X)", usage: forkSynopsis, flags: forkVerb},
		{name: "rm", short: "remove a task and its stored output (one, or by selector)", usage: bulkSynopsis, flags: removeVerb},
		{name: "batch", short: "submit a task per JSONL line; a batch's status and results; cancel or retry a batch", help: batchUsage,
			flags: group(batchUsage, "want a subcommand, submit FILE.jsonl, status ID, results ID, cancel ID or retry ID; 'agora batch -h' explains them",
				"unknown subcommand %q; want submit, status, results, cancel or retry"),
			subs: []verb{
				{name: "submit", usage: batchSubmitSynopsis, flags: batchSubmitVerb},
				{name: "status", usage: batchStatusSynopsis, flags: batchStatusVerb},
				{name: "results", usage: batchResultsSynopsis, flags: batchResultsVerb},
				{name: "cancel", usage: batchBulkSynopsis, flags: batchBulkVerb("agora batch cancel", bulkCancel)},
				{name: "retry", usage: batchRetrySynopsis, flags: batchBulkVerb("agora batch retry", bulkRespawn)},
			}},
		{name: "stats", short: "questions, defaults, answer waits, rounds, cold starts, tokens and cost per sub-agent (--subagent, --batch, --since)", usage: statsSynopsis, flags: statsVerb},
		{name: "events", short: "lifecycle events the orchestrator parked: parked, retry SEQ, discard SEQ", usage: eventsSynopsis, flags: eventsVerb},
		registryVerbs["subagent"].verb(),
		registryVerbs["capability"].verb(),
		registryVerbs["env"].verb(),
		{name: "secret", short: "the local secret store local: refs name: set NAME, list, rm NAME...", help: secretUsage,
			flags: group(secretUsage, "want set NAME, list or rm NAME; run 'agora secret -h' for more", "unknown subcommand %q; want set, list or rm"),
			subs: []verb{
				{name: "set", usage: secretSetSynopsis, flags: secretSetVerb(stdin)},
				{name: "list", aliases: []string{"ls"}, usage: secretListSynopsis, flags: secretListVerb},
				{name: "rm", aliases: []string{"delete"}, usage: secretRemoveSynopsis, flags: secretRemoveVerb},
			}},
		{name: "serve", short: "everything in one process: orchestrator, API, /metrics, runner, embedded NATS", flags: serveVerb},
		{name: "orchestrator", short: "the orchestrator and its HTTP API (and /metrics), on a NATS server", usage: "--nats URL", flags: orchestratorVerb},
		{name: "runner", short: "run dispatch requests in containers on this Docker host", usage: "--nats URL", flags: runnerVerb},
		{name: "demo", short: "see the whole loop on the embedded stack", flags: demoVerb(stdin)},
		{name: "nats-auth", short: "make the NATS operator, account and users an external NATS cluster needs: init DIR", help: natsAuthUsage,
			flags: group(natsAuthUsage, "want a subcommand: init DIR; run 'agora nats-auth init -h' for its flags", "unknown subcommand %q; the one there is: init"),
			subs:  []verb{{name: "init", usage: natsAuthInitSynopsis, flags: natsAuthInitVerb}}},
		{name: "image", short: "build the worker image through the Docker API (nothing is pulled)", help: imageUsage,
			flags: group(imageUsage, "want a subcommand: build; run 'agora image build -h' for its flags", "unknown subcommand %q; the one there is: build"),
			subs:  []verb{{name: "build", usage: imageBuildSynopsis, flags: imageBuildVerb}}},
		{name: "schema", short: "print a JSON Schema; without NAME, list them", synopsis: "[NAME]", argHelp: true,
			flags: func(*flag.FlagSet) runFunc {
				return func(_ context.Context, args, _ []string, stdout, stderr io.Writer) error {
					return exitWith(runSchema(args, stdout, stderr))
				}
			}},
		{name: "validate", short: "validate FILE (- for stdin) against schema NAME", synopsis: "NAME FILE", argHelp: true,
			flags: func(*flag.FlagSet) runFunc {
				return func(_ context.Context, args, _ []string, stdout, stderr io.Writer) error {
					return exitWith(runValidate(args, stdin, stdout, stderr))
				}
			}},
		{name: "token", short: "make a strong API token: create NAME (the secret once, and its hashed line for --tokens-file)", argHelp: true,
			flags: group("", "want 'create NAME': usage: "+tokenSynopsis, ""),
			subs:  []verb{{name: "create", usage: tokenSynopsis, flags: tokenCreateVerb}}},
		{name: "config", short: "named contexts (server, token) in the config file", help: configUsage,
			flags: group(configUsage, fmt.Sprintf("want a subcommand: %s; run 'agora config -h'", strings.Join(configSubs, ", ")),
				"unknown subcommand %q; want "+strings.Join(configSubs, ", ")),
			subs: configVerbs()},
		{name: "health", short: "is the server up? (GET /healthz; the image's HEALTHCHECK)", flags: healthVerb},
		{name: "version", short: "print the version", synopsis: "[--json]", argHelp: true, flags: versionVerb},
	}
}

// exitWith is the exit code of a verb that prints its own errors.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return exitcode.Outcome{Code: code}
}

func versionVerb(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(_ context.Context, args, _ []string, stdout, _ io.Writer) error {
		switch {
		case len(args) > 0:
			return usagef("unexpected argument %q; the only flag is --json", args[0])
		case *asJSON:
			return writeJSON(stdout, map[string]string{"version": version, "go": runtime.Version()})
		}
		fmt.Fprintln(stdout, "agora", version)
		return nil
	}
}

// run is main without the process: tests call it directly. environ is the
// environment as os.Environ gives it. It returns the exit code (exitOK,
// exitFailed, exitUsage, exitEnded).
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, environ, os.Stdin, stdout, stderr)
}

// runWith is run with stdin.
func runWith(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(ctx, verbs(stdin), args, environ, stdout, stderr)
}

// execute parses args with the tree over all and runs the verb they name.
func execute(ctx context.Context, all []verb, args, environ []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, overview(all))
		return exitUsage
	}
	t := &tree{ctx: ctx, all: all, environ: environ, stdout: stdout, stderr: stderr}
	root := t.build(all)
	if strings.HasPrefix(args[0], "__complete") { // the shell's words, as typed
		completeEnums(root)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if _, err := root.ExecuteC(); err != nil {
			return exitCode(stderr, "agora", err)
		}
		fmt.Fprint(stdout, unquoteCompletions(out.String()))
		return exitOK
	}
	if args[0] == "--version" {
		args = slices.Concat([]string{"version"}, args[1:])
	}
	root.SetArgs(normalize(root, args))
	c, err := root.ExecuteC()
	if err == nil {
		return t.code
	}
	label := "agora"
	if c != nil && c != root && c.Name() != "help" {
		label = t.name(c)
	}
	if fe, ok := errors.AsType[flagError](err); ok {
		if fe.global {
			label = "agora"
		}
		err = fe.err
	}
	return exitCode(stderr, label, err)
}

// tree is one run's command tree: the cobra commands over verbs, the
// global flags' values, and where the verb that ran leaves its exit code.
type tree struct {
	ctx            context.Context
	all            []verb
	environ        []string
	stdout, stderr io.Writer
	code           int

	output, context, config string
	root                    *cobra.Command
	// declared is each verb's command: the verb and the run its flags
	// declaration returned.
	declared map[*cobra.Command]declared
}

// declared is a verb on its command, with its run.
type declared struct {
	verb
	run runFunc
}

// build is the cobra tree over all: every verb's flags declared on its
// command, the global ones on the root, the help from the declarations.
func (t *tree) build(all []verb) *cobra.Command {
	root := &cobra.Command{Use: "agora", SilenceErrors: true, SilenceUsage: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q; run 'agora help' for the list", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { // only flags: agora --server X
			fmt.Fprint(t.stdout, overview(all))
			return nil
		},
	}
	t.root, t.declared = root, map[*cobra.Command]declared{}
	root.SetOut(t.stdout)
	root.SetErr(t.stderr)
	root.SetContext(t.ctx)
	// Persistent: every command takes them, in any position.
	pf := root.PersistentFlags()
	pf.StringVar(&t.context, "context", "", "the config file's context")
	pf.StringVar(&t.config, "config", "", "the config file")
	pf.VarP(verbflags.NewEnum(&t.output, "want json, name or table", "json", "name", "table"), "output", "o", "json, name or table")
	// The root's own: given before the command they are the verb's, which
	// parses them (agora --server X status); declared here so cobra knows
	// which of them take a value while it looks for the command.
	root.Flags().String("server", "", "the agora server's URL")
	root.Flags().String("token", "", "the API bearer token")
	root.Flags().Bool("json", false, "print JSON")
	root.Flags().BoolP("help", "h", false, "print this help")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if _, ok := errors.AsType[*flag.NotExistError](err); ok {
			return flagError{global: true, err: usagef("unknown flag %s before the command; the flags before it are --server, --token, --context, --config, -o and --json", notExistName(err))}
		}
		return flagError{global: true, err: usagef("%s", verbflags.ErrorText(err))}
	})
	for _, v := range all {
		root.AddCommand(t.command(v, "agora "+v.name))
	}
	root.SetHelpCommand(&cobra.Command{Use: "help", Short: "a command's usage and flags",
		RunE: func(_ *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || c == nil {
				return err
			}
			if c == root && len(rest) > 0 {
				return usagef("unknown command %q; run 'agora help' for the list", rest[0])
			}
			t.help(c)
			return nil
		}})
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { t.help(c) })
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" { // a shell it writes no script for
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(*cobra.Command, []string) error {
				return usagef("want one shell: bash, zsh, fish or powershell, e.g. source <(agora completion bash)")
			}
		}
	}
	return root
}

// flagError is a mistake in the flags, reported by the command that parsed
// them, or by agora itself when it is one of the global flags.
type flagError struct {
	global bool
	err    error
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// notExistName is an unknown flag as it was typed.
func notExistName(err error) string {
	e, _ := errors.AsType[*flag.NotExistError](err)
	if n := e.GetSpecifiedName(); n != "" {
		return "--" + n
	}
	return "-" + e.GetSpecifiedShortnames()
}

// command is v's cobra command (with its subcommands) at path.
func (t *tree) command(v verb, path string) *cobra.Command {
	c := &cobra.Command{Use: v.name, Aliases: v.aliases, Short: v.short}
	d := declared{verb: v}
	if v.flags != nil {
		d.run = v.flags(c.Flags())
	}
	c.Flags().BoolP("help", "h", false, "print this help")
	t.declared[c] = d
	c.RunE = func(c *cobra.Command, args []string) error {
		t.code = t.run(c, args)
		return nil
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if t.global(err) {
			return flagError{global: true, err: usagef("%s", verbflags.ErrorText(err))}
		}
		if _, ok := errors.AsType[*verbflags.EnumError](err); ok { // it names what the flag takes
			return usagef("%s", verbflags.ErrorText(err))
		}
		return usagef("%s; run '%s -h' for the flags", verbflags.ErrorText(err), path)
	})
	for _, sub := range v.subs {
		c.AddCommand(t.command(sub, path+" "+sub.name))
	}
	return c
}

// global is whether err is about one of the root's persistent flags.
func (t *tree) global(err error) bool {
	var f *flag.Flag
	if e, ok := errors.AsType[*flag.InvalidValueError](err); ok {
		f = e.GetFlag()
	} else if e, ok := errors.AsType[*flag.ValueRequiredError](err); ok {
		f = e.GetFlag()
	}
	return f != nil && t.root.PersistentFlags().Lookup(f.Name) == f
}

// name is c's command path as it was typed (an alias stays an alias).
func (t *tree) name(c *cobra.Command) string {
	if c.Parent() == nil || c.CalledAs() == "" {
		return c.CommandPath()
	}
	return c.Parent().CommandPath() + " " + c.CalledAs()
}

// help prints c's help: the overview for agora itself, a group's fixed
// text, else the usage and the flags from their declarations.
func (t *tree) help(c *cobra.Command) {
	switch {
	case c == t.root:
		fmt.Fprint(t.stdout, overview(t.all))
	case c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion":
		fmt.Fprint(t.stdout, "usage: agora completion bash|zsh|fish|powershell\n\nprint the shell completion script, e.g. source <(agora completion bash)\n")
	case t.declared[c].argHelp:
		t.code = t.run(c, []string{"-h"})
	case t.declared[c].help != "":
		fmt.Fprint(t.stdout, t.declared[c].help)
	default:
		fs := flag.NewFlagSet(c.CommandPath(), flag.ContinueOnError)
		fs.AddFlagSet(c.LocalFlags())
		verbflags.PrintHelp(t.stdout, fs, t.declared[c].usage)
	}
}

// run runs a verb's command with the global flags applied: --config and
// the config file's context filled in behind the environment, and -o
// turned into --json (and, for name, the ids taken from it).
func (t *tree) run(c *cobra.Command, args []string) int {
	run, label := t.declared[c].run, t.name(c)
	if l := t.declared[c].label; l != "" {
		label = l
	}
	environ := t.environ
	if t.config != "" {
		environ = append(slices.Clone(environ), "AGORA_CONFIG="+t.config)
	}
	if c.LocalFlags().Lookup("server") != nil && !strings.HasPrefix(c.CommandPath(), "agora config") {
		var err error
		if environ, err = applyConfig(t.config, t.context, t.root.PersistentFlags().Changed("context"), environ); err != nil {
			return exitCode(t.stderr, label, err)
		}
	}
	if t.output == "" || t.output == "table" {
		return verbExit(t.stderr, label, run(t.ctx, args, environ, t.stdout, t.stderr))
	}
	if c.LocalFlags().Lookup("json") == nil {
		return exitCode(t.stderr, label, usagef("-o %s: %s prints no JSON; drop -o", t.output, label))
	}
	if err := c.Flags().Set("json", "true"); err != nil {
		return exitCode(t.stderr, label, err)
	}
	if t.output == "json" {
		return verbExit(t.stderr, label, run(t.ctx, args, environ, t.stdout, t.stderr))
	}
	var out bytes.Buffer
	code := verbExit(t.stderr, label, run(t.ctx, args, environ, &out, t.stderr))
	if err := idnames.Write(t.stdout, &out); err != nil {
		return exitCode(t.stderr, label, err)
	}
	return code
}

// normalize rewrites the one-dash long flags Go's flag package took
// (-json, -server URL) to pflag's spelling, with the flags of the command
// args name: the root's first, to find that command.
func normalize(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(verbflags.Normalize(allFlags(root), args))
	if err != nil || c == nil {
		c = root
	}
	return verbflags.Normalize(allFlags(c), args)
}

// allFlags is every flag c parses: its own and the inherited ones.
func allFlags(c *cobra.Command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name(), flag.ContinueOnError)
	fs.AddFlagSet(c.LocalFlags())
	fs.AddFlagSet(c.InheritedFlags())
	return fs
}

// unquoteCompletions takes the `NAME` markup out of the flags'
// descriptions cobra completes with, as their help does (flag.UnquoteUsage).
func unquoteCompletions(out string) string {
	lines := strings.SplitAfter(out, "\n")
	for i, l := range lines {
		name, desc, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		if a := strings.IndexByte(desc, '`'); a >= 0 {
			if b := strings.IndexByte(desc[a+1:], '`'); b >= 0 {
				desc = desc[:a] + desc[a+1:a+1+b] + desc[a+2+b:]
			}
		}
		lines[i] = name + "\t" + desc
	}
	return strings.Join(lines, "")
}

// completeEnums lets the shell complete every Enum flag with its words.
// Only a completion registers them (cobra keeps them process-wide).
func completeEnums(c *cobra.Command) {
	register := func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			if e, ok := f.Value.(*verbflags.Enum); ok {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(e.Values(), cobra.ShellCompDirectiveNoFileComp))
			}
		})
	}
	register(c.LocalNonPersistentFlags())
	register(c.PersistentFlags())
	for _, sub := range c.Commands() {
		completeEnums(sub)
	}
}

// overview is agora help: the commands from the tree, the global flags and
// the exit codes.
func overview(all []verb) string {
	var b strings.Builder
	b.WriteString("usage: agora <command> [arguments] [flags]\n\ncommands:\n")
	for _, v := range all {
		name := v.name
		var subs []string
		for _, s := range v.subs {
			subs = append(subs, s.name)
		}
		if subs := strings.Join(subs, "|"); len(subs) > 24 {
			name += " SUBCOMMAND"
		} else if subs != "" {
			name += " " + subs
		} else if v.synopsis != "" {
			name += " " + v.synopsis
		}
		fmt.Fprintf(&b, "  %-34s %s\n", name, v.short)
	}
	b.WriteString(`  completion bash|zsh|fish           print the shell completion script, e.g.
                                     source <(agora completion bash)

flags, in any position:
  --server URL       the agora server (default $AGORA_SERVER, else the config
                     file's context, else http://127.0.0.1:7070)
  --token TOKEN      the API token (default $AGORA_TOKEN, else the context's)
  --context NAME     use the config file's context NAME (default $AGORA_CONTEXT,
                     else its current-context)
  --config FILE      the config file (default $AGORA_CONFIG, else
                     ~/.config/agora/config.yaml)
  -o, --output json|name|table
                     JSON (as --json), the ids one per line, or the table
  -h, --help         a command's usage and flags

exit codes (every command):
  0  done (dispatch --wait: the task finished)
  1  the work failed (dispatch --wait: the task failed), or the server could not
     be reached or refused the request for another reason than its input
  2  a usage error or bad input, found by the CLI or refused by the server
     (HTTP 400/422 "invalid"): nothing was changed
  3  the task expired or was cancelled (dispatch --wait)
  130, 143  interrupted by SIGINT or SIGTERM (dispatch --wait: the task was
     cancelled, unless --detach-on-signal)

Run 'agora <command> -h' (or 'agora help <command>') for a command's flags.
`)
	return b.String()
}
