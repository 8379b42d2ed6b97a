package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/idnames"
)

// verb is one command of the CLI as the command tree registers it. Each
// verb keeps its own pflag set, declared in its body next to the code that
// reads it; the tree only routes to it, so help and completion ask the verb
// for that set (flagCollector) instead of keeping a copy that could drift.
type verb struct {
	name    string
	aliases []string
	short   string
	// subs are the verb's subcommands (batch submit, image build), which
	// route to run with the subcommand as the first argument.
	subs []string
	// synopsis is the usage of a verb without flags (schema, validate).
	synopsis string
	run      func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int
}

// verbs is every command, in the order agora help lists them.
func verbs() []verb {
	registryVerb := func(kind, what string) verb {
		return verb{name: kind, short: "the " + what + " registry: register FILE, list, show NAME[@VERSION]", subs: []string{"register", "list", "show"},
			run: func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
				return runRegistry(ctx, kind, args, environ, stdout, stderr)
			}}
	}
	return []verb{
		{name: "dispatch", short: "submit a task; --wait follows it to its end", run: runDispatch},
		{name: "status", short: "what every task needs and the next command; with TASK, its timeline", run: runStatus},
		{name: "questions", short: "the open questions, oldest first, with the answer command", run: runQuestions},
		{name: "answer", short: "answer a task's question (an option or its number)", run: runAnswer},
		{name: "rules", short: "remembered answers (made by answer --remember): list, show RULE, rm RULE", subs: []string{"list", "show", "rm"}, run: runRules},
		{name: "watch", short: "the tasks, live, until interrupted", run: runWatch},
		{name: "logs", short: "a round's output; -f follows a running round", run: runLogs},
		{name: "result", short: "what a finished task hands back (a string as its text, else JSON)", run: runResult},
		{name: "artifacts", short: "a task's artifacts; NAME... -d DIR downloads them, sha256 checked", run: runArtifacts},
		{name: "cancel", short: "stop a queued, running or waiting task, or all a selector picks (--batch, --label, --state)", run: runCancel},
		{name: "respawn", short: "run a failed, cancelled or expired task's last round again (one, or by selector)", run: runRespawn},
		{name: "continue", short: "a new round of a finished task, with a follow-up message", run: runContinue},
		{name: "replay", short: "run a finished task (or --batch) again from round 1 with its recorded answers; --wait exits 1 on a divergence", run: runReplay},
		{name: "fork", short: "a new task from round N of a task, answered differently (--round N --answer X)", run: runFork},
		{name: "rm", short: "remove a task and its stored output (one, or by selector)", run: runRemove},
		{name: "batch", short: "submit a task per JSONL line; a batch's status and results; cancel or retry a batch", subs: []string{"submit", "status", "results", "cancel", "retry"}, run: runBatch},
		{name: "stats", short: "questions, defaults, answer waits, rounds, cold starts, tokens and cost per sub-agent (--subagent, --batch, --since)", run: runStats},
		{name: "events", short: "lifecycle events the orchestrator parked: parked, retry SEQ, discard SEQ", run: runEvents},
		registryVerb("subagent", "sub-agent"),
		registryVerb("capability", "capability"),
		registryVerb("env", "env bundle"),
		{name: "secret", short: "the local secret store local: refs name: set NAME, list, rm NAME...", subs: []string{"set", "list", "rm"},
			run: func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
				return runSecret(args, environ, os.Stdin, stdout, stderr)
			}},
		{name: "serve", short: "everything in one process: orchestrator, API, /metrics, runner, embedded NATS", run: runServe},
		{name: "orchestrator", short: "the orchestrator and its HTTP API (and /metrics), on a NATS server", run: runOrchestrator},
		{name: "runner", short: "run dispatch requests in containers on this Docker host", run: runRunner},
		{name: "demo", short: "see the whole loop on the embedded stack", run: func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
			return runDemo(ctx, args, environ, os.Stdin, stdout, stderr)
		}},
		{name: "nats-auth", short: "make the NATS operator, account and users an external NATS cluster needs: init DIR", subs: []string{"init"}, run: runNATSAuth},
		{name: "image", short: "build the worker image through the Docker API (nothing is pulled)", subs: []string{"build"}, run: runImage},
		{name: "schema", short: "print a JSON Schema; without NAME, list them", synopsis: "[NAME]",
			run: func(_ context.Context, args, _ []string, stdout, stderr io.Writer) int {
				return runSchema(args, stdout, stderr)
			}},
		{name: "validate", short: "validate FILE (- for stdin) against schema NAME", synopsis: "NAME FILE",
			run: func(_ context.Context, args, _ []string, stdout, stderr io.Writer) int {
				return runValidate(args, os.Stdin, stdout, stderr)
			}},
		{name: "token", short: "make a strong API token: create NAME (the secret once, and its hashed line for --tokens-file)", subs: []string{"create"}, run: runToken},
		{name: "config", short: "named contexts (server, token) in the config file", subs: configSubs, run: runConfig},
		{name: "health", short: "is the server up? (GET /healthz; the image's HEALTHCHECK)", run: runHealth},
		{name: "version", short: "print the version", synopsis: "[--json]", run: runVersion},
	}
}

func runVersion(_ context.Context, args, _ []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && args[0] == "--json":
		_ = writeJSON(stdout, map[string]string{"version": version, "go": runtime.Version()})
	case len(args) > 0:
		return exitCode(stderr, "agora version", usagef("unexpected argument %q; the only flag is --json", args[0]))
	default:
		fmt.Fprintln(stdout, "agora", version)
	}
	return exitOK
}

// run is main without the process: tests call it directly. environ is the
// environment as os.Environ gives it. It returns the exit code (exitOK,
// exitFailed, exitUsage, exitEnded).
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	all := verbs()
	if len(args) == 0 {
		fmt.Fprint(stderr, overview(all))
		return exitUsage
	}
	var g globalFlags
	if !strings.HasPrefix(args[0], "__complete") { // the shell's words, as typed
		var err error
		if g, args, err = takeGlobalFlags(args); err != nil {
			return exitCode(stderr, "agora", err)
		}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1) {
		fmt.Fprint(stdout, overview(all))
		return exitOK
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	name := args[0]
	if name == "help" {
		name = args[1]
	}
	if name != "completion" && name != "__complete" && name != "__completeNoDesc" && !slices.ContainsFunc(all, func(v verb) bool {
		return v.name == name || slices.Contains(v.aliases, name)
	}) {
		fmt.Fprintf(stderr, "agora: unknown command %q; run 'agora help' for the list\n", name)
		return exitUsage
	}
	if name == "completion" {
		shells := []string{"bash", "zsh", "fish", "powershell"}
		switch {
		case len(args) == 2 && (args[1] == "-h" || args[1] == "--help") || args[0] == "help":
			fmt.Fprint(stdout, "usage: agora completion bash|zsh|fish|powershell\n\nprint the shell completion script, e.g. source <(agora completion bash)\n")
			return exitOK
		case len(args) != 2 || !slices.Contains(shells, args[1]):
			return exitCode(stderr, "agora completion", usagef("want one shell: bash, zsh, fish or powershell, e.g. source <(agora completion bash)"))
		}
	}
	code := exitOK
	root := commandTree(ctx, all, &code, g, environ, stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		return exitCode(stderr, "agora", usagef("%v", err))
	}
	return code
}

// commandTree is the cobra tree over verbs: it routes, answers agora help
// VERB and writes the completion scripts. Flag parsing is left to each
// verb (DisableFlagParsing), which owns its pflag set.
func commandTree(ctx context.Context, all []verb, code *int, g globalFlags, environ []string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{Use: "agora", SilenceErrors: true, SilenceUsage: true}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Declared for the completion of the words before the command only:
	// run has taken these flags out of the arguments already.
	pf := root.PersistentFlags()
	pf.String("server", "", "the agora server's URL")
	pf.String("token", "", "the API bearer token")
	pf.String("context", "", "the config file's context")
	pf.String("config", "", "the config file")
	pf.StringP("output", "o", "", "json, name or table")
	pf.Bool("json", false, "print JSON")
	for _, v := range all {
		cmd := &cobra.Command{Use: v.name, Aliases: v.aliases, Short: v.short, DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error {
				*code = g.run(ctx, v, args, environ, stdout, stderr)
				return nil
			},
			ValidArgsFunction: completeFlags(ctx, v, nil, environ),
		}
		for _, sub := range v.subs {
			cmd.AddCommand(&cobra.Command{Use: sub, Short: v.name + " " + sub, DisableFlagParsing: true,
				RunE: func(_ *cobra.Command, args []string) error {
					*code = g.run(ctx, v, append([]string{sub}, args...), environ, stdout, stderr)
					return nil
				},
				ValidArgsFunction: completeFlags(ctx, v, []string{sub}, environ),
			})
		}
		root.AddCommand(cmd)
	}
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(stdout, overview(all))
			return
		}
		// agora help VERB [SUB] is agora VERB [SUB] -h.
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "agora "))
		for _, v := range all {
			if v.name == path[0] || slices.Contains(v.aliases, path[0]) {
				*code = g.run(ctx, v, append(path[1:], "-h"), environ, stdout, stderr)
			}
		}
	})
	return root
}

// completeFlags completes a verb's flags from its own flag set; anything
// else is left to the shell (file names).
func completeFlags(ctx context.Context, v verb, sub, environ []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && (args[len(args)-1] == "-o" || args[len(args)-1] == "--output") {
			return []cobra.Completion{"json", "name", "table"}, cobra.ShellCompDirectiveNoFileComp
		}
		if !strings.HasPrefix(toComplete, "-") {
			return nil, cobra.ShellCompDirectiveDefault
		}
		fs := v.flags(ctx, sub, environ)
		if fs == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		fs.VisitAll(func(f *flag.Flag) {
			_, usage := flag.UnquoteUsage(f)
			out = append(out, cobra.CompletionWithDesc("--"+f.Name, usage))
		})
		if fs.Lookup("json") != nil {
			out = append(out, cobra.CompletionWithDesc("--output", "json, name or table"))
		}
		out = slices.DeleteFunc(out, func(c cobra.Completion) bool { return !strings.HasPrefix(c, toComplete) })
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// flags is the verb's flag set as it declares it (nil for a verb without
// one), found by asking the verb for its help with a flagCollector.
func (v verb) flags(ctx context.Context, sub, environ []string) *flag.FlagSet {
	c := &flagCollector{Writer: io.Discard}
	v.run(ctx, append(slices.Clone(sub), "--help"), environ, c, io.Discard)
	return c.fs
}

// overview is agora help: the commands from the tree, the global flags and
// the exit codes.
func overview(all []verb) string {
	var b strings.Builder
	b.WriteString("usage: agora <command> [arguments] [flags]\n\ncommands:\n")
	for _, v := range all {
		name := v.name
		if subs := strings.Join(v.subs, "|"); len(subs) > 24 {
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

// globalFlags are the flags every command takes in any position.
type globalFlags struct {
	output      string // "", json, name or table
	context     string
	config      string
	contextSet  bool
	serverToken []string // --server and --token given before the command
}

// takeGlobalFlags takes --context, --config and -o/--output from anywhere
// before a "--", and --server, --token and --json from before the command
// (after it, the command's own flag set reads them), and returns the rest.
func takeGlobalFlags(args []string) (globalFlags, []string, error) {
	var g globalFlags
	var rest []string
	commandSeen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		dashed := strings.HasPrefix(a, "-") && len(a) > 1
		if dashed && strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--") && len(a) > 2 && !hasValue {
			name, value, hasValue = "o", a[2:], true // -ojson
		}
		takes := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				what := map[string]string{"o": "json, name or table", "output": "json, name or table", "context": "a context NAME from 'agora config get-contexts'",
					"config": "the config FILE", "server": "the agora server's URL", "token": "the API TOKEN"}[name]
				return "", usagef("flag needs an argument: %s takes %s", a, what)
			}
			i++
			return args[i], nil
		}
		var err error
		switch {
		case dashed && (name == "o" || name == "output"):
			g.output, err = takes()
		case dashed && name == "context":
			g.context, err = takes()
			g.contextSet = true
		case dashed && name == "config":
			g.config, err = takes()
		case dashed && !commandSeen && (name == "server" || name == "token"):
			v, e := takes()
			err = e
			g.serverToken = append(g.serverToken, "--"+name, v)
		case dashed && !commandSeen && name == "json":
			g.serverToken = append(g.serverToken, a)
		case dashed && !commandSeen && a != "-h" && a != "--help" && a != "--version":
			return g, nil, usagef("unknown flag %s before the command; the flags before it are --server, --token, --context, --config, -o and --json", a)
		default:
			commandSeen = commandSeen || !dashed
			rest = append(rest, a)
		}
		if err != nil {
			return g, nil, err
		}
	}
	switch g.output {
	case "", "json", "name", "table":
	default:
		return g, nil, usagef("-o %q: want json, name or table", g.output)
	}
	return g, rest, nil
}

// run runs v with the global flags applied: the config file's context
// filled in behind the environment, --server and --token moved behind the
// command, and -o turned into --json (and, for name, the ids taken from it).
func (g globalFlags) run(ctx context.Context, v verb, args, environ []string, stdout, stderr io.Writer) int {
	if c, ok := stdout.(*flagCollector); ok { // completion asks for the flags
		return v.run(ctx, args, environ, c, stderr)
	}
	if g.config != "" {
		environ = append(slices.Clone(environ), "AGORA_CONFIG="+g.config)
	}
	fs := v.flags(ctx, leadingSub(v, args), environ)
	label := "agora " + strings.TrimSpace(v.name+" "+strings.Join(leadingSub(v, args), " "))
	if fs != nil && fs.Lookup("server") != nil && v.name != "config" {
		var err error
		if environ, err = g.applyConfig(environ); err != nil {
			return exitCode(stderr, label, err)
		}
	}
	args = insertBeforeDash(args, g.serverToken...)
	if g.output == "" || g.output == "table" {
		return v.run(ctx, args, environ, stdout, stderr)
	}
	hasJSON := fs != nil && fs.Lookup("json") != nil || strings.Contains(v.synopsis, "--json")
	if !hasJSON {
		return exitCode(stderr, label, usagef("-o %s: %s prints no JSON; drop -o", g.output, label))
	}
	args = insertBeforeDash(args, "--json")
	if g.output == "json" {
		return v.run(ctx, args, environ, stdout, stderr)
	}
	var out bytes.Buffer
	code := v.run(ctx, args, environ, &out, stderr)
	if err := idnames.Write(stdout, &out); err != nil {
		return exitCode(stderr, label, err)
	}
	return code
}

// leadingSub is the subcommand args start with, if v has one.
func leadingSub(v verb, args []string) []string {
	if len(args) > 0 && slices.Contains(v.subs, args[0]) {
		return args[:1]
	}
	return nil
}

// insertBeforeDash appends flags to args before a "--", so they stay flags.
func insertBeforeDash(args []string, flags ...string) []string {
	if len(flags) == 0 {
		return args
	}
	i := slices.Index(args, "--")
	if i < 0 {
		return append(slices.Clone(args), flags...)
	}
	return slices.Concat(args[:i], flags, args[i:])
}
