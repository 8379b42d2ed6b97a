package wire

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/agoradev/agora/schemas"
)

// Kind is what a registry entry holds.
type Kind string

// Kinds of entries.
const (
	KindSubagent   Kind = "subagent"
	KindCapability Kind = "capability"
	KindEnv        Kind = "env"
)

// Kinds in display order.
var Kinds = []Kind{KindSubagent, KindCapability, KindEnv}

// MaxCapabilityBytes caps a capability's tar, as the API takes it: it is
// copied into every dispatch's workspace, so it is meant for skills,
// scripts and config, not data sets.
const MaxCapabilityBytes = 32 << 20

// refPattern is NAME or NAME@VERSION: a name of letters, digits, '-' and
// '_', and a version of 12 (or all 64) hex digits of the content hash.
var refPattern = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:@([0-9a-f]{12}(?:[0-9a-f]{52})?))?$`)

// ParseRef splits a registry reference, NAME or NAME@VERSION, as the CLI,
// the API and a task's request write it.
func ParseRef(ref string) (name, version string, err error) {
	m := refPattern.FindStringSubmatch(ref)
	if m == nil {
		return "", "", fmt.Errorf("%q: want NAME or NAME@VERSION (12 hex digits)", ref)
	}
	return m[1], m[2], nil
}

// Subagent is a sub-agent definition: what runs, and the defaults of a task
// of it. Its file format is schemas/subagent.schema.json.
type Subagent struct {
	Name           string          `json:"name"`
	Description    string          `json:"description,omitempty"`
	Runtime        schemas.Runtime `json:"runtime"`
	Command        Command         `json:"command,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	Model          string          `json:"model,omitempty"`
	Capabilities   []string        `json:"capabilities,omitempty"`
	Env            []string        `json:"env,omitempty"`
	Route          string          `json:"route,omitempty"`
	AllowMemory    bool            `json:"allow_memory,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
	Limits         *SubagentLimits `json:"limits,omitempty"`
	Image          string          `json:"image,omitempty"`
	Network        string          `json:"network,omitempty"`
	// Egress is the only hosts the sub-agent may reach (network egress,
	// implied when network is empty): [*.]NAME[:PORT] entries.
	Egress    []string           `json:"egress,omitempty"`
	Resources *schemas.Resources `json:"resources,omitempty"`
	Workspace string             `json:"workspace,omitempty"`
	// Outputs are globs of the workspace files a finished round hands
	// back as artifacts (docs/contract.md, "The result").
	Outputs []string `json:"outputs,omitempty"`
	// Retry is a task's retry policy when its request gives none.
	Retry *RetryPolicy `json:"retry,omitempty"`
}

// SubagentLimits are a task's limits as a sub-agent file gives them.
type SubagentLimits struct {
	MaxRounds      int `json:"max_rounds,omitempty"`
	MaxWaitSeconds int `json:"max_wait_seconds,omitempty"`
}

// Spec is the part of the definition the worker gets.
func (s *Subagent) Spec() schemas.Subagent {
	return schemas.Subagent{Name: s.Name, Runtime: s.Runtime, Command: s.Command, Prompt: s.Prompt, Model: s.Model, Outputs: s.Outputs}
}

// Command is a command line: a list of arguments, or one string run with
// /bin/sh -c.
type Command []string

// UnmarshalJSON accepts a string or a list of strings.
func (c *Command) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*c = Command{"/bin/sh", "-c", s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return err
	}
	*c = list
	return nil
}

// Env is an env bundle: plain values and secret refs (never secret values).
// Its format is schemas/env.schema.json; the worker reads the stored bundle
// {"values": …, "secrets": …}.
type Env struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Values      map[string]string `json:"values,omitempty"`
	Secrets     map[string]string `json:"secrets,omitempty"`
}

// Entry is one immutable version of a registered item.
type Entry struct {
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
	// Version is the first 12 hex digits of Digest: what NAME@VERSION names.
	Version string `json:"version"`
	// Digest is the sha256 of the content: the canonical JSON of a sub-agent
	// definition, the tar of a capability, the JSON bundle of an env.
	Digest string `json:"digest"`
	// Seq counts the versions of this name in registration order (1, 2, …).
	Seq         int       `json:"seq"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Subagent is the definition of a sub-agent entry.
	Subagent *Subagent `json:"subagent,omitempty"`
	// Env is the values and secret refs of an env entry.
	Env *Env `json:"env,omitempty"`
	// Bundle is where a capability or env bundle is stored.
	Bundle *schemas.BundleRef `json:"bundle,omitempty"`
	// Size in bytes and number of files of a capability's tar.
	Size  int64 `json:"size,omitempty"`
	Files int   `json:"files,omitempty"`
}

// Ref is NAME@VERSION.
func (e *Entry) Ref() string { return e.Name + "@" + e.Version }

// Registered is the answer to a registration.
type Registered struct {
	Entry *Entry `json:"entry"`
	// Created is false when identical content was already registered.
	Created bool `json:"created"`
}

// Pins are the versions a task resolved when it was submitted; every round
// runs exactly these.
type Pins struct {
	Subagent     string   `json:"subagent"`
	Capabilities []string `json:"capabilities,omitempty"`
	Env          []string `json:"env,omitempty"`
}
