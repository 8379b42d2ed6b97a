// Package cliconfig is the CLI's config file: named contexts, each an agora
// server and its token, and the one in use (current-context). It finds,
// reads and writes the file and picks the context a command runs with;
// package main turns flags and the environment into its arguments and
// prints what it returns.
package cliconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// File is the config file. The environment and the flags win over it.
type File struct {
	CurrentContext string             `yaml:"current-context,omitempty" json:"current_context,omitempty"`
	Contexts       map[string]Context `yaml:"contexts,omitempty" json:"contexts,omitempty"`
}

// Context is one named server and its token.
type Context struct {
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	Token  string `yaml:"token,omitempty" json:"token,omitempty"`
}

// ErrUsage marks an error the user fixes on the command line or in the
// file (the CLI's exit code 2): errors.Is(err, ErrUsage).
var ErrUsage = errors.New("usage")

// usageError is a message that is ErrUsage, without ErrUsage's own words.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// Path is the config file: flagValue (--config), else $AGORA_CONFIG, else
// $XDG_CONFIG_HOME/agora/config.yaml, else ~/.config/agora/config.yaml.
func Path(flagValue string, getenv func(string) string) (string, error) {
	switch {
	case flagValue != "":
		return flagValue, nil
	case getenv("AGORA_CONFIG") != "":
		return getenv("AGORA_CONFIG"), nil
	case getenv("XDG_CONFIG_HOME") != "":
		return filepath.Join(getenv("XDG_CONFIG_HOME"), "agora", "config.yaml"), nil
	case getenv("HOME") != "":
		return filepath.Join(getenv("HOME"), ".config", "agora", "config.yaml"), nil
	}
	return "", usagef("no config file: HOME is not set; pass --config FILE or set AGORA_CONFIG")
}

// Load reads the config file; a missing one is empty.
func Load(path string) (File, error) {
	var c File
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

// Save writes c to path, mode 0600 (it may hold tokens), through a file
// beside it renamed into place.
func (c File) Save(path string) error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	return nil
}

// Pick returns context name of the file at path (name "": the file's
// current-context; none: ok false). A context with a token must come from
// a file only its owner may read.
func Pick(path, name string) (ctx Context, ok bool, err error) {
	c, err := Load(path)
	if err != nil {
		return Context{}, false, err
	}
	if name == "" {
		name = c.CurrentContext
	}
	if name == "" {
		return Context{}, false, nil
	}
	ctx, ok = c.Contexts[name]
	if !ok {
		return Context{}, false, usagef("no context %q in %s; 'agora config get-contexts' lists them", name, path)
	}
	if ctx.Token != "" {
		if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
			return Context{}, false, usagef("config file %s holds a token and others may read it (mode %04o); run chmod 600 %s", path, info.Mode().Perm(), path)
		}
	}
	return ctx, true, nil
}

// Use makes name the current context.
func (c *File) Use(path, name string) error {
	if _, ok := c.Contexts[name]; !ok {
		return usagef("no context %q in %s; 'agora config set-context %s --server URL' adds it", name, path, name)
	}
	c.CurrentContext = name
	return nil
}

// Set changes context name, adding it (and making it the current one
// when there is none); a nil server or token is left as it is.
func (c *File) Set(name string, server, token *string) {
	if c.Contexts == nil {
		c.Contexts = map[string]Context{}
	}
	ctx := c.Contexts[name]
	if server != nil {
		ctx.Server = *server
	}
	if token != nil {
		ctx.Token = *token
	}
	c.Contexts[name] = ctx
	if c.CurrentContext == "" {
		c.CurrentContext = name
	}
}

// Delete removes context name; the current context, if it was that one,
// becomes none.
func (c *File) Delete(path, name string) error {
	if _, ok := c.Contexts[name]; !ok {
		return usagef("no context %q in %s", name, path)
	}
	delete(c.Contexts, name)
	if c.CurrentContext == name {
		c.CurrentContext = ""
	}
	return nil
}

// Overrides is what the config file's context adds to the environment, as
// KEY=VALUE to append (the last one wins): its server and token as
// AGORA_SERVER and AGORA_TOKEN, each only where the environment says none,
// unless the context was named on the command line (contextSet), which
// wins over the environment. The context is contextFlag, else
// $AGORA_CONTEXT, else the file's current-context; the file is Path's.
// Without a file to read and none asked for, it is nothing.
func Overrides(configFlag, contextFlag string, contextSet bool, getenv func(string) string) ([]string, error) {
	name := contextFlag
	if name == "" {
		name = getenv("AGORA_CONTEXT")
	}
	path, err := Path(configFlag, getenv)
	if err != nil {
		if name == "" && configFlag == "" {
			return nil, nil
		}
		return nil, err
	}
	ctx, ok, err := Pick(path, name)
	if err != nil || !ok {
		return nil, err
	}
	var out []string
	for _, kv := range [][2]string{{"AGORA_SERVER", ctx.Server}, {"AGORA_TOKEN", ctx.Token}} {
		if kv[1] != "" && (contextSet || getenv(kv[0]) == "") {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out, nil
}
