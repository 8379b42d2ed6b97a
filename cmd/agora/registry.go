package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/wire"
)

// registryVerb is one of subagent, capability and env.
type registryVerb struct {
	kind  wire.Kind
	noun  string // for messages: "sub-agent"
	plain string // the verb as typed
}

var registryVerbs = map[string]registryVerb{
	"subagent":   {wire.KindSubagent, "sub-agent", "subagent"},
	"capability": {wire.KindCapability, "capability", "capability"},
	"env":        {wire.KindEnv, "env bundle", "env"},
}

// verb is agora subagent, capability or env, with its subcommands.
func (v registryVerb) verb() verb {
	usage := "usage: agora " + v.plain + " register FILE | list | show NAME[@VERSION] [--versions]\n"
	return verb{name: v.plain, short: "the " + v.noun + " registry: register FILE, list, show NAME[@VERSION]", help: usage,
		flags: group(usage, "want register FILE, list or show NAME[@VERSION]", "unknown subcommand %q; want register, list or show"),
		subs: []verb{
			{name: "register", usage: "FILE [--json] [--server URL] [--token TOKEN]", flags: v.register},
			{name: "list", aliases: []string{"ls"}, usage: "[--limit N | --cursor CURSOR | --all] [--json] [--server URL] [--token TOKEN]", flags: v.list},
			{name: "show", usage: "NAME[@VERSION] [--versions [--limit N | --cursor CURSOR | --all]] [--json] [--server URL] [--token TOKEN]", flags: v.show},
		}}
}

// register reads and checks the file here, so a mistake is found before
// anything reaches the server, then registers its content.
func (v registryVerb) register(fs *flag.FlagSet) runFunc {
	a := newAPIFlags(fs)
	return func(ctx context.Context, pos, environ []string, stdout, stderr io.Writer) error {
		if len(pos) != 1 {
			return usagef("want one FILE (YAML or JSON; 'agora schema %s' prints its schema)", v.kind)
		}
		file := pos[0]
		data, err := registryfile.ReadFile(file)
		if err != nil {
			return usagef("%v", err)
		}
		f, err := registryfile.Parse(v.kind, file, data)
		if err != nil {
			return usagef("%v", err)
		}
		var call func(*client.Client) (wire.Registered, error)
		switch {
		case f.Subagent != nil:
			call = func(c *client.Client) (wire.Registered, error) { return c.RegisterSubagent(ctx, *f.Subagent) }
		case f.Capability != nil:
			call = func(c *client.Client) (wire.Registered, error) {
				return c.RegisterCapability(ctx, f.Capability.Name, f.Capability.Description, f.Archive)
			}
		case f.Env != nil:
			call = func(c *client.Client) (wire.Registered, error) { return c.RegisterEnv(ctx, *f.Env) }
		}
		c, err := a.connect(environ)
		if err != nil {
			return err
		}
		reg, err := call(c)
		if err != nil {
			return a.explainRegistry(err)
		}
		if a.json {
			return writeJSON(stdout, reg)
		}
		e := reg.Entry
		if reg.Created {
			fmt.Fprintf(stdout, "registered %s %s (version %d)\n", v.noun, e.Ref(), e.Seq)
		} else {
			fmt.Fprintf(stdout, "%s %s is registered already (version %d); nothing changed\n", v.noun, e.Ref(), e.Seq)
		}
		return nil
	}
}

// list writes a page of the names of the kind (every one with --all).
// --json writes the entries as a JSON array, as before pages; the hint to
// the next page then goes to stderr.
func (v registryVerb) list(fs *flag.FlagSet) runFunc {
	name := "agora " + v.plain + " list"
	a := newAPIVerb(fs)
	pf := newPageFlags(a.fs, "names")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		c, _, err := a.open(args, environ, func(pos []string) error {
			if len(pos) > 0 {
				return usagef("unexpected argument %q; 'agora %s show %s' shows one", pos[0], v.plain, pos[0])
			}
			return pf.check(name)
		})
		if err != nil {
			return err
		}
		var page wire.EntryList
		if pf.all {
			page.Entries, err = c.EntriesAll(ctx, v.kind)
		} else {
			page, err = c.Entries(ctx, v.kind, pf.options())
		}
		if err != nil {
			return a.explainRegistry(err)
		}
		words := []string{"agora", v.plain, "list"}
		if a.json {
			writeMore(stderr, len(page.Entries), "names", page.NextCursor, append(words, "--json")...)
			return writeJSON(stdout, orEmpty(page.Entries))
		}
		if len(page.Entries) == 0 && pf.cursor == "" {
			fmt.Fprintf(stdout, "no %s registered; 'agora %s register FILE' adds one\n", v.noun, v.plain)
			return nil
		}
		v.table(stdout, environ, page.Entries, true)
		writeMore(stdout, len(page.Entries), "names", page.NextCursor, words...)
		return nil
	}
}

// orEmpty makes a nil list an empty one, so JSON says [] and not null.
func orEmpty(entries []*wire.Entry) []*wire.Entry {
	if entries == nil {
		return []*wire.Entry{}
	}
	return entries
}

func (v registryVerb) show(fs *flag.FlagSet) runFunc {
	name := "agora " + v.plain + " show"
	a := newAPIVerb(fs)
	versions := a.fs.Bool("versions", false, "list the versions, oldest first (a page; --all for every one)")
	pf := newPageFlags(a.fs, "versions")
	return func(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
		var ref, refName string
		c, _, err := a.open(args, environ, func(pos []string) error {
			if len(pos) != 1 {
				return usagef("want one NAME or NAME@VERSION; 'agora %s list' shows the names", v.plain)
			}
			ref = pos[0]
			var version string
			var err error
			if refName, version, err = wire.ParseRef(ref); err != nil {
				return usagef("%q: want NAME or NAME@VERSION (12 hex digits); 'agora %s list' shows them", ref, v.plain)
			}
			switch {
			case *versions && version != "":
				return usagef("--versions lists every version of a name; give NAME, not NAME@VERSION")
			case !*versions && (pf.all || pf.limit != 0 || pf.cursor != ""):
				if err := pf.check(name); err != nil {
					return err
				}
				return usagef("--limit, --cursor and --all page the list of --versions")
			}
			return pf.check(name)
		})
		if err != nil {
			return err
		}
		if *versions {
			var page wire.EntryList
			if pf.all {
				page.Entries, err = c.VersionsAll(ctx, v.kind, refName)
			} else {
				page, err = c.Versions(ctx, v.kind, refName, pf.options())
			}
			if err != nil {
				return a.explainRegistry(err)
			}
			words := []string{"agora", v.plain, "show", refName, "--versions"}
			if a.json {
				writeMore(stderr, len(page.Entries), "versions", page.NextCursor, append(words, "--json")...)
				return writeJSON(stdout, orEmpty(page.Entries))
			}
			v.table(stdout, environ, page.Entries, false)
			writeMore(stdout, len(page.Entries), "versions", page.NextCursor, words...)
			return nil
		}
		e, err := c.Entry(ctx, v.kind, ref)
		if err != nil {
			return a.explainRegistry(err)
		}
		if a.json {
			return writeJSON(stdout, e)
		}
		v.detail(stdout, environ, e)
		return nil
	}
}

// table writes entries, one per row.
func (v registryVerb) table(w io.Writer, environ []string, entries []*wire.Entry, latest bool) {
	u := newUI(w, environ)
	header := []string{"NAME", "VERSION", "SEQ", "REGISTERED"}
	switch v.kind {
	case wire.KindSubagent:
		header = append(header, "RUNTIME", "USES")
	case wire.KindCapability:
		header = append(header, "FILES", "SIZE")
	case wire.KindEnv:
		header = append(header, "VALUES", "SECRETS")
	}
	header = append(header, "DESCRIPTION")
	var rows [][]cell
	for _, e := range entries {
		seq := fmt.Sprint(e.Seq)
		if latest {
			seq += " (latest)"
		}
		row := []cell{{e.Name, sgrBold}, {e.Version, ""}, {seq, ""}, {e.CreatedAt.Local().Format(time.DateTime), sgrDim}}
		switch v.kind {
		case wire.KindSubagent:
			uses := "-"
			if s := e.Subagent; s != nil {
				if all := append(append([]string{}, s.Capabilities...), s.Env...); len(all) > 0 {
					uses = strings.Join(all, ", ")
				}
				row = append(row, cell{string(s.Runtime), ""}, cell{uses, ""})
			} else {
				row = append(row, cell{"?", ""}, cell{uses, ""})
			}
		case wire.KindCapability:
			row = append(row, cell{fmt.Sprint(e.Files), ""}, cell{humanBytes(e.Size), ""})
		case wire.KindEnv:
			nv, ns := 0, 0
			if e.Env != nil {
				nv, ns = len(e.Env.Values), len(e.Env.Secrets)
			}
			row = append(row, cell{fmt.Sprint(nv), ""}, cell{fmt.Sprint(ns), ""})
		}
		rows = append(rows, append(row, cell{clipText(e.Description, 60), ""}))
	}
	u.writeTable(w, header, rows)
}

// detail writes one entry in full. Env values are shown; secrets are refs,
// never values, so they are shown too.
func (v registryVerb) detail(w io.Writer, environ []string, e *wire.Entry) {
	u := newUI(w, environ)
	fmt.Fprintf(w, "%s %s · version %d · registered %s\n", v.noun, u.paint(sgrBold, e.Ref()), e.Seq, e.CreatedAt.Local().Format(time.DateTime))
	fmt.Fprintf(w, "digest: %s\n", e.Digest)
	if e.Description != "" {
		fmt.Fprintf(w, "description: %s\n", e.Description)
	}
	switch {
	case e.Subagent != nil:
		s := e.Subagent
		fmt.Fprintf(w, "runtime: %s\n", s.Runtime)
		if len(s.Command) > 0 {
			fmt.Fprintf(w, "command: %s\n", strings.Join(s.Command, " "))
		}
		for _, kv := range [][2]string{{"model", s.Model}, {"route", s.Route}, {"image", s.Image}, {"network", s.Network}, {"workspace", s.Workspace}} {
			if kv[1] != "" {
				fmt.Fprintf(w, "%s: %s\n", kv[0], kv[1])
			}
		}
		if len(s.Egress) > 0 {
			fmt.Fprintf(w, "egress: %s\n", strings.Join(s.Egress, ", "))
		}
		if s.Prompt != "" {
			fmt.Fprintf(w, "prompt: %s\n", clipText(s.Prompt, 200))
		}
		if len(s.Capabilities) > 0 {
			fmt.Fprintf(w, "capabilities: %s\n", strings.Join(s.Capabilities, ", "))
		}
		if len(s.Env) > 0 {
			fmt.Fprintf(w, "env: %s\n", strings.Join(s.Env, ", "))
		}
		if s.TimeoutSeconds > 0 {
			fmt.Fprintf(w, "timeout: %s per round\n", humanDuration(time.Duration(s.TimeoutSeconds)*time.Second))
		}
		if s.Limits != nil {
			fmt.Fprintf(w, "limits: max_rounds %d, max_wait_seconds %d\n", s.Limits.MaxRounds, s.Limits.MaxWaitSeconds)
		}
		if s.Retry != nil {
			fmt.Fprintf(w, "retry: %s\n", retryText(s.Retry))
		}
		fmt.Fprintf(w, "dispatch: %s\n", u.paint(sgrBold, "agora dispatch --subagent "+e.Ref()))
	case e.Env != nil:
		for _, k := range slices.Sorted(maps.Keys(e.Env.Values)) {
			fmt.Fprintf(w, "value  %s=%s\n", k, e.Env.Values[k])
		}
		for _, k := range slices.Sorted(maps.Keys(e.Env.Secrets)) {
			fmt.Fprintf(w, "secret %s from %s\n", k, e.Env.Secrets[k])
		}
	default:
		fmt.Fprintf(w, "files: %d · %s\n", e.Files, humanBytes(e.Size))
	}
}

// explainRegistry is explain, with the registry's not-found in its words.
func (a *apiFlags) explainRegistry(err error) error {
	if e, ok := errors.AsType[*client.Error](err); ok && e.Code == string(wire.CodeNotFound) {
		return errors.New(e.Message)
	}
	return a.explain(err, "")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// retryText is a retry policy in a line: "3 attempts on worker-lost,
// timeout; waits 10s, then ×2, at most 5m0s".
func retryText(p *wire.RetryPolicy) string {
	reasons := make([]string, len(p.On))
	for i, r := range p.On {
		reasons[i] = string(r)
	}
	mult, most := wire.DefaultBackoffMultiplier, wire.DefaultBackoffMaxSeconds
	if b := p.Backoff; b != nil {
		if b.Multiplier > 0 {
			mult = b.Multiplier
		}
		if b.MaxSeconds > 0 {
			most = b.MaxSeconds
		}
	}
	return fmt.Sprintf("%d attempts on %s; waits %s, then ×%g, at most %s", p.Attempts, strings.Join(reasons, ", "),
		p.Delay(2), mult, time.Duration(most)*time.Second)
}
