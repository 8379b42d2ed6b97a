package cliconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{flag: "/f.yaml", env: map[string]string{"AGORA_CONFIG": "/e.yaml"}, want: "/f.yaml"},
		{env: map[string]string{"AGORA_CONFIG": "/e.yaml", "HOME": "/h"}, want: "/e.yaml"},
		{env: map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, want: "/x/agora/config.yaml"},
		{env: map[string]string{"HOME": "/h"}, want: "/h/.config/agora/config.yaml"},
	}
	for _, tt := range tests {
		got, err := Path(tt.flag, func(k string) string { return tt.env[k] })
		if err != nil || got != tt.want {
			t.Errorf("Path(%q, %v) = %q, %v; want %q", tt.flag, tt.env, got, err, tt.want)
		}
	}
	if _, err := Path("", func(string) string { return "" }); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "HOME is not set") {
		t.Errorf("Path without HOME = %v; want a usage error naming HOME", err)
	}
}

func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "config.yaml")
	c, err := Load(path)
	if err != nil || c.CurrentContext != "" || len(c.Contexts) != 0 {
		t.Fatalf("Load(missing) = %+v, %v; want an empty file", c, err)
	}
	server, token := "https://a.example", "s3cret"
	c.Set("prod", &server, &token)
	c.Set("local", &server, nil)
	if c.CurrentContext != "prod" {
		t.Errorf("CurrentContext = %q; want the first context set, prod", c.CurrentContext)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("saved mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}
	ctx, ok, err := Pick(path, "")
	if err != nil || !ok || ctx != (Context{Server: server, Token: token}) {
		t.Errorf("Pick(current) = %+v, %v, %v", ctx, ok, err)
	}
	if _, _, err := Pick(path, "nope"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Errorf("Pick(nope) = %v; want a usage error naming it", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Pick(path, "prod"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Pick(a token in a file others may read) = %v; want the chmod advice", err)
	}
	if ctx, ok, err := Pick(path, "local"); err != nil || !ok || ctx.Token != "" {
		t.Errorf("Pick(local, no token) = %+v, %v, %v; the mode only matters for a token", ctx, ok, err)
	}
	if err := c.Use(path, "nope"); !errors.Is(err, ErrUsage) {
		t.Errorf("Use(nope) = %v; want a usage error", err)
	}
	if err := c.Delete(path, "prod"); err != nil || c.CurrentContext != "" {
		t.Errorf("Delete(current) = %v, current %q; want none current", err, c.CurrentContext)
	}
	if err := os.WriteFile(path, []byte("contexts: [1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(bad YAML) = %v; want a usage error naming the file", err)
	}
}

// TestOverrides: the context's server and token fill what the environment
// leaves empty; a context named on the command line wins over it; no file
// and none asked for is nothing; a context named but missing is a usage
// error.
func TestOverrides(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	c := File{CurrentContext: "dev", Contexts: map[string]Context{
		"dev":  {Server: "http://dev:7070", Token: "devtok"},
		"prod": {Server: "https://prod"},
	}}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		name       string
		flag       string
		contextSet bool
		env        map[string]string
		want       []string
	}{
		{"the current context", "", false, map[string]string{}, []string{"AGORA_SERVER=http://dev:7070", "AGORA_TOKEN=devtok"}},
		{"the environment wins", "", false, map[string]string{"AGORA_SERVER": "http://env"}, []string{"AGORA_TOKEN=devtok"}},
		{"AGORA_CONTEXT picks", "", false, map[string]string{"AGORA_CONTEXT": "prod"}, []string{"AGORA_SERVER=https://prod"}},
		{"--context wins over the environment", "prod", true, map[string]string{"AGORA_SERVER": "http://env"}, []string{"AGORA_SERVER=https://prod"}},
	} {
		got, err := Overrides(path, tt.flag, tt.contextSet, env(tt.env))
		if err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: Overrides = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if got, err := Overrides("", "", false, env(map[string]string{})); err != nil || got != nil {
		t.Errorf("Overrides without HOME or --config = %q, %v; want nothing", got, err)
	}
	if _, err := Overrides(path, "staging", true, env(map[string]string{})); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `no context "staging"`) {
		t.Errorf("Overrides of a missing context = %v; want a usage error naming it", err)
	}
}
