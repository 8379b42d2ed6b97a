package worker

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/exec"
)

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	got := Config{Environ: []string{"A=1"}}.WithDefaults()
	want := map[string]any{
		"Workspace":      DefaultWorkspace,
		"SetupTimeout":   DefaultSetupTimeout,
		"DefaultTimeout": DefaultTimeout,
		"Grace":          DefaultGrace,
		"PublishWindow":  DefaultPublishWindow,
		"ConnectTimeout": DefaultConnectTimeout,
	}
	have := map[string]any{
		"Workspace": got.Workspace, "SetupTimeout": got.SetupTimeout, "DefaultTimeout": got.DefaultTimeout,
		"Grace": got.Grace, "PublishWindow": got.PublishWindow, "ConnectTimeout": got.ConnectTimeout,
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("Config{}.WithDefaults() = %v, want %v", have, want)
	}
	if s, ok := got.Secrets.(BuiltinSecrets); !ok || !reflect.DeepEqual(s.Environ, []string{"A=1"}) {
		t.Errorf("WithDefaults Secrets = %#v, want BuiltinSecrets over the worker's Environ", got.Secrets)
	}
	if got.Stdout != io.Discard || got.Stderr != io.Discard || got.Logger == nil {
		t.Errorf("WithDefaults Stdout, Stderr, Logger = %v, %v, %v; want io.Discard, io.Discard, a logger", got.Stdout, got.Stderr, got.Logger)
	}

	// Set knobs are kept; negative durations count as unset.
	var out bytes.Buffer
	log := slog.New(slog.DiscardHandler)
	secrets := BuiltinSecrets{Environ: []string{"OTHER=1"}}
	set := Config{Workspace: "/ws", SetupTimeout: time.Second, DefaultTimeout: 2 * time.Second, Grace: -time.Second,
		PublishWindow: 3 * time.Second, ConnectTimeout: 4 * time.Second, Secrets: secrets, Stdout: &out, Stderr: &out, Logger: log}.WithDefaults()
	if set.Workspace != "/ws" || set.SetupTimeout != time.Second || set.DefaultTimeout != 2*time.Second || set.Grace != DefaultGrace ||
		set.PublishWindow != 3*time.Second || set.ConnectTimeout != 4*time.Second ||
		!reflect.DeepEqual(set.Secrets, secrets) || set.Stdout != &out || set.Stderr != &out || set.Logger != log {
		t.Errorf("WithDefaults replaced set knobs: %+v", set)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		return Config{DispatchID: "d-1", SpecFile: "/spec.json", Adapters: []adapters.Adapter{exec.New()}}.WithDefaults()
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string // every problem named; none for a valid config
	}{
		{name: "valid with a spec file", mutate: func(*Config) {}},
		{name: "valid with storage only", mutate: func(c *Config) { c.SpecFile, c.StorageURI = "", "file:///store" }},
		{name: "no dispatch id", mutate: func(c *Config) { c.DispatchID = "" }, want: []string{"AGORA_DISPATCH_ID is required"}},
		{name: "no spec source", mutate: func(c *Config) { c.SpecFile = "" }, want: []string{"no dispatch spec: set AGORA_SPEC_FILE, or AGORA_STORAGE_URI"}},
		{name: "relative workspace", mutate: func(c *Config) { c.Workspace = "work" }, want: []string{`AGORA_WORKSPACE "work" must be an absolute path`}},
		{name: "empty workspace without defaults", mutate: func(c *Config) { c.Workspace = "" }, want: []string{`AGORA_WORKSPACE "" must be an absolute path`}},
		{name: "no adapters", mutate: func(c *Config) { c.Adapters = nil }, want: []string{"no runtime adapters configured"}},
		{name: "environment problems", mutate: func(c *Config) {
			c.EnvProblems = errors.Join(errors.New(`AGORA_SETUP_TIMEOUT_SECONDS="soon": want a whole number`), errors.New(`AGORA_GRACE_SECONDS="-1"`))
		}, want: []string{"AGORA_SETUP_TIMEOUT_SECONDS", "AGORA_GRACE_SECONDS"}},
		{name: "everything at once", mutate: func(c *Config) {
			*c = Config{Workspace: "rel", EnvProblems: errors.New("AGORA_PUBLISH_WINDOW_SECONDS=x")}
		}, want: []string{"AGORA_PUBLISH_WINDOW_SECONDS=x", "AGORA_DISPATCH_ID is required", "no dispatch spec", `AGORA_WORKSPACE "rel"`, "no runtime adapters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := valid()
			tt.mutate(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to name %q", err, w)
				}
			}
		})
	}
}
