package main

import (
	"context"
	"fmt"
	"io"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/explain"
	"github.com/agoradev/agora/cmd/agora/internal/view"
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
		return a.show(stdout, reg, func() { view.Registered(stdout, v.noun, reg) })
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
			view.More(stderr, len(page.Entries), "names", page.NextCursor, append(words, "--json")...)
			return writeJSON(stdout, view.OrEmpty(page.Entries))
		}
		if len(page.Entries) == 0 && pf.cursor == "" {
			fmt.Fprintf(stdout, "no %s registered; 'agora %s register FILE' adds one\n", v.noun, v.plain)
			return nil
		}
		view.New(stdout, environ).Entries(stdout, v.kind, page.Entries, true)
		view.More(stdout, len(page.Entries), "names", page.NextCursor, words...)
		return nil
	}
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
				view.More(stderr, len(page.Entries), "versions", page.NextCursor, append(words, "--json")...)
				return writeJSON(stdout, view.OrEmpty(page.Entries))
			}
			view.New(stdout, environ).Entries(stdout, v.kind, page.Entries, false)
			view.More(stdout, len(page.Entries), "versions", page.NextCursor, words...)
			return nil
		}
		e, err := c.Entry(ctx, v.kind, ref)
		if err != nil {
			return a.explainRegistry(err)
		}
		return a.show(stdout, e, func() { view.New(stdout, environ).Entry(stdout, v.noun, e) })
	}
}

// explainRegistry is explain for the registry verbs.
func (a *apiFlags) explainRegistry(err error) error { return explain.Registry(a.server, a.token, err) }
