package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/cmd/agora/internal/cliconfig"
	"github.com/agoradev/agora/cmd/agora/internal/view"
)

var configSubs = []string{"get-contexts", "current-context", "use-context", "set-context", "delete-context"}

const configUsage = `usage: agora config get-contexts | current-context | use-context NAME |
                    set-context NAME [--server URL] [--token TOKEN] | delete-context NAME

Named contexts, each an agora server and its token, in the config file
($AGORA_CONFIG, else ~/.config/agora/config.yaml; --config FILE), e.g.

  current-context: prod
  contexts:
    prod: {server: https://agora.example.com, token: s3cret}
    local: {server: http://127.0.0.1:7070}

The verbs that call the server take the server and the token from, in order:
--server/--token, $AGORA_SERVER/$AGORA_TOKEN, the context (--context NAME,
else $AGORA_CONTEXT, else current-context), the default http://127.0.0.1:7070.
A file holding a token must be readable by its owner only (chmod 600).
`

// applyConfig puts the context's server and token into environ behind
// what the environment already says (cliconfig.Overrides), so the verbs
// read them as AGORA_SERVER and AGORA_TOKEN and their own flags still win.
// config and context are --config and --context (contextSet: given).
func applyConfig(config, context string, contextSet bool, environ []string) ([]string, error) {
	extra, err := cliconfig.Overrides(config, context, contextSet, func(k string) string { return getenv(environ, k) })
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(environ), extra...), nil
}

// configVerbs are agora config's subcommands: the contexts in the config
// file. They share one set of flags.
func configVerbs() []verb {
	var subs []verb
	for _, sub := range configSubs {
		synopsis := map[string]string{"use-context": "NAME", "set-context": "NAME", "delete-context": "NAME"}[sub]
		subs = append(subs, verb{name: sub, usage: synopsis, flags: func(fs *flag.FlagSet) runFunc { return configVerb(fs, sub, synopsis) }})
	}
	return subs
}

func configVerb(fs *flag.FlagSet, sub, synopsis string) runFunc {
	name := "agora config " + sub
	server := fs.String("server", "", "the context's agora server `URL`")
	token := fs.String("token", "", "the context's API bearer `TOKEN` (the file is kept mode 0600)")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	return func(_ context.Context, pos, environ []string, stdout, _ io.Writer) error {
		if (synopsis == "") != (len(pos) == 0) || len(pos) > 1 {
			return usagef("want %s; run '%s -h'", strings.TrimSpace(sub+" "+synopsis), name)
		}
		if sub != "set-context" && (*server != "" || *token != "") {
			return usagef("--server and --token are for set-context")
		}
		// --config is in environ as AGORA_CONFIG by now
		path, err := cliconfig.Path("", func(k string) string { return getenv(environ, k) })
		if err != nil {
			return err
		}
		c, err := cliconfig.Load(path)
		if err != nil {
			return err
		}
		switch sub {
		case "get-contexts":
			if *asJSON {
				return writeJSON(stdout, c)
			}
			return view.Contexts(stdout, c)
		case "current-context":
			if c.CurrentContext == "" {
				return usagef("no current context in %s; 'agora config use-context NAME' sets one", path)
			}
			fmt.Fprintln(stdout, c.CurrentContext)
			return nil
		case "use-context":
			err = c.Use(path, pos[0])
		case "set-context":
			var srv, tok *string
			if fs.Changed("server") {
				a := &apiFlags{server: *server}
				if _, err := a.connect(nil); err != nil { // the same check as every verb's --server
					return err
				}
				srv = &a.server
			}
			if fs.Changed("token") {
				tok = token
			}
			c.Set(pos[0], srv, tok)
		case "delete-context":
			err = c.Delete(path, pos[0])
		}
		if err != nil {
			return err
		}
		if err := c.Save(path); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", path, sub)
		return nil
	}
}
