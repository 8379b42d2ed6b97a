package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	flag "github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// cliConfig is the config file: named contexts, each a server and a token,
// and the one in use. The environment and the flags win over it.
type cliConfig struct {
	CurrentContext string                `yaml:"current-context,omitempty" json:"current_context,omitempty"`
	Contexts       map[string]cliContext `yaml:"contexts,omitempty" json:"contexts,omitempty"`
}

type cliContext struct {
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	Token  string `yaml:"token,omitempty" json:"token,omitempty"`
}

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

// configPath is the config file: --config, else $AGORA_CONFIG, else
// $XDG_CONFIG_HOME/agora/config.yaml, else ~/.config/agora/config.yaml.
func (g globalFlags) configPath(environ []string) (string, error) {
	switch {
	case g.config != "":
		return g.config, nil
	case getenv(environ, "AGORA_CONFIG") != "":
		return getenv(environ, "AGORA_CONFIG"), nil
	case getenv(environ, "XDG_CONFIG_HOME") != "":
		return filepath.Join(getenv(environ, "XDG_CONFIG_HOME"), "agora", "config.yaml"), nil
	case getenv(environ, "HOME") != "":
		return filepath.Join(getenv(environ, "HOME"), ".config", "agora", "config.yaml"), nil
	}
	return "", usagef("no config file: HOME is not set; pass --config FILE or set AGORA_CONFIG")
}

// loadConfig reads the config file; a missing one is empty.
func loadConfig(path string) (cliConfig, error) {
	var c cliConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config file: %w", err)
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, usagef("config file %s: %v", path, err)
	}
	return c, nil
}

func saveConfig(path string, c cliConfig) error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	// Written beside and renamed, 0600: it may hold tokens.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	return nil
}

// applyConfig puts the context's server and token into environ behind
// what the environment already says (a --context given on the command line
// wins over the environment), so the verbs read them as AGORA_SERVER and
// AGORA_TOKEN and their own flags still win.
func (g globalFlags) applyConfig(environ []string) ([]string, error) {
	name := g.context
	if name == "" {
		name = getenv(environ, "AGORA_CONTEXT")
	}
	path, err := g.configPath(environ)
	if err != nil {
		if name == "" && g.config == "" {
			return environ, nil // no file to read and none asked for
		}
		return nil, err
	}
	c, err := loadConfig(path)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = c.CurrentContext
	}
	if name == "" {
		return environ, nil
	}
	ctx, ok := c.Contexts[name]
	if !ok {
		return nil, usagef("no context %q in %s; 'agora config get-contexts' lists them", name, path)
	}
	if ctx.Token != "" {
		if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
			return nil, usagef("config file %s holds a token and others may read it (mode %04o); run chmod 600 %s", path, info.Mode().Perm(), path)
		}
	}
	out := slices.Clone(environ)
	for k, v := range map[string]string{"AGORA_SERVER": ctx.Server, "AGORA_TOKEN": ctx.Token} {
		if v != "" && (g.contextSet || getenv(environ, k) == "") {
			out = append(out, k+"="+v) // getenv takes the last one
		}
	}
	return out, nil
}

// runConfig is agora config: the contexts in the config file.
func runConfig(_ context.Context, args, environ []string, stdout, stderr io.Writer) int {
	var g globalFlags // --config is in environ as AGORA_CONFIG by now
	if len(args) == 0 {
		return exitCode(stderr, "agora config", usagef("want a subcommand: %s; run 'agora config -h'", strings.Join(configSubs, ", ")))
	}
	name := "agora config " + args[0]
	return exitCode(stderr, name, configMain(g, name, args, environ, stdout))
}

func configMain(g globalFlags, name string, args, environ []string, stdout io.Writer) error {
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, configUsage)
		return nil
	}
	if !slices.Contains(configSubs, args[0]) {
		return usagef("unknown subcommand %q; want %s", args[0], strings.Join(configSubs, ", "))
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	server := fs.String("server", "", "the context's agora server `URL`")
	token := fs.String("token", "", "the context's API bearer `TOKEN` (the file is kept mode 0600)")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	synopsis := map[string]string{"use-context": "NAME", "set-context": "NAME", "delete-context": "NAME"}[args[0]]
	pos, err := parseArgs(fs, synopsis, args[1:], stdout)
	if err != nil {
		return err
	}
	if (synopsis == "") != (len(pos) == 0) || len(pos) > 1 {
		return usagef("want %s; run '%s -h'", strings.TrimSpace(args[0]+" "+synopsis), name)
	}
	if args[0] != "set-context" && (*server != "" || *token != "") {
		return usagef("--server and --token are for set-context")
	}
	path, err := g.configPath(environ)
	if err != nil {
		return err
	}
	c, err := loadConfig(path)
	if err != nil {
		return err
	}
	switch args[0] {
	case "get-contexts":
		if *asJSON {
			return writeJSON(stdout, c)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tTOKEN")
		for _, n := range slices.Sorted(maps.Keys(c.Contexts)) {
			cur, tok := "", ""
			if n == c.CurrentContext {
				cur = "*"
			}
			if c.Contexts[n].Token != "" {
				tok = "(set)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cur, n, c.Contexts[n].Server, tok)
		}
		return tw.Flush()
	case "current-context":
		if c.CurrentContext == "" {
			return usagef("no current context in %s; 'agora config use-context NAME' sets one", path)
		}
		fmt.Fprintln(stdout, c.CurrentContext)
		return nil
	case "use-context":
		if _, ok := c.Contexts[pos[0]]; !ok {
			return usagef("no context %q in %s; 'agora config set-context %s --server URL' adds it", pos[0], path, pos[0])
		}
		c.CurrentContext = pos[0]
	case "set-context":
		if c.Contexts == nil {
			c.Contexts = map[string]cliContext{}
		}
		ctx := c.Contexts[pos[0]]
		if fs.Changed("server") {
			a := &apiFlags{server: *server}
			if _, err := a.connect(nil); err != nil { // the same check as every verb's --server
				return err
			}
			ctx.Server = a.server
		}
		if fs.Changed("token") {
			ctx.Token = *token
		}
		c.Contexts[pos[0]] = ctx
		if c.CurrentContext == "" {
			c.CurrentContext = pos[0]
		}
	case "delete-context":
		if _, ok := c.Contexts[pos[0]]; !ok {
			return usagef("no context %q in %s", pos[0], path)
		}
		delete(c.Contexts, pos[0])
		if c.CurrentContext == pos[0] {
			c.CurrentContext = ""
		}
	}
	if err := saveConfig(path, c); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", path, args[0])
	return nil
}
