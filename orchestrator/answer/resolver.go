package answer

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agoradev/agora/wire"
)

// Resolver turns route steps into answerers. Set its fields, then call
// Resolve; a step whose answerer is not configured resolves to an error
// saying what is missing. Safe for concurrent use once set up; Register may
// be called at any time. Do not copy a Resolver after first use.
type Resolver struct {
	// Memory backs "memory".
	Memory MemoryStore
	// RulesFile backs "lookup"; it is read on every Resolve, so edits apply
	// to the next question.
	RulesFile string
	// RulesDir, when set, confines "lookup:<path>": the path is read inside
	// this directory (relative to it, no escaping by ".." or symlinks). When
	// empty, paths are used as given.
	RulesDir string
	// Agents backs "agent:<subagent>".
	Agents AgentRunner
	// WebhookSecret signs "webhook:<url>" requests; WebhookOptions tune them.
	WebhookSecret  string
	WebhookOptions WebhookOptions
	// Notify is called by "human" (and its alias "cli"); nil notifies nobody.
	Notify func(ctx context.Context, q Question) error
	// Logger receives the agent and webhook answerers' logs; nil discards.
	Logger *slog.Logger

	mu     sync.RWMutex
	extra  map[string]func(arg string) (Answerer, error)
	checks map[string]func(arg string) error
}

// builtins are the steps Resolve knows without Register, for error messages.
var builtins = []string{"memory", "lookup", "lookup:<path>", "agent:<subagent>", "webhook:<url>", "human", "cli"}

// Register plugs in answerers for steps named prefix ("slack" serves
// "slack:#ops" and "slack"); new is called with what follows the colon
// (empty when nothing does). A registration replaces an earlier one and
// takes precedence over the built-in answerer of the same name.
func (r *Resolver) Register(prefix string, new func(arg string) (Answerer, error)) error {
	if !wire.IsAnswererName(prefix) {
		return fmt.Errorf("register answerer %q: want lower-case letters, digits, '-' or '_'", prefix)
	}
	if new == nil {
		return fmt.Errorf("register answerer %q: nil constructor", prefix)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.extra == nil {
		r.extra = make(map[string]func(string) (Answerer, error))
	}
	r.extra[prefix] = new
	return nil
}

// RegisterCheck gives Check a way to refuse a registered step's argument
// at submit ("slack:ops" when "#ops" was meant); check must be cheap and
// touch nothing outside the process.
func (r *Resolver) RegisterCheck(prefix string, check func(arg string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checks == nil {
		r.checks = make(map[string]func(string) error)
	}
	r.checks[prefix] = check
}

// Resolve returns the answerer for one route step's answerer part (see
// wire.RouteStep.Answerer): memory, lookup, lookup:<path>, agent:<subagent>,
// webhook:<url>, human, cli, or a registered prefix.
func (r *Resolver) Resolve(step string) (Answerer, error) {
	step = strings.TrimSpace(step)
	name, arg, hasArg := strings.Cut(step, ":")
	r.mu.RLock()
	fn := r.extra[name]
	r.mu.RUnlock()
	if fn != nil {
		a, err := fn(arg)
		if err != nil {
			return nil, fmt.Errorf("answerer %s: %w", step, err)
		}
		return a, nil
	}
	noArg := func() error {
		if hasArg {
			return fmt.Errorf("answerer %q takes no argument", name)
		}
		return nil
	}
	needArg := func(what string) error {
		if strings.TrimSpace(arg) == "" {
			return fmt.Errorf("answerer %s: want %s:<%s>", step, name, what)
		}
		return nil
	}
	switch name {
	case "memory":
		if err := noArg(); err != nil {
			return nil, err
		}
		if r.Memory == nil {
			return nil, fmt.Errorf("answerer memory: no memory store configured")
		}
		return NewMemory(r.Memory), nil
	case "lookup":
		if !hasArg {
			if r.RulesFile == "" {
				return nil, fmt.Errorf("answerer lookup: no rules file configured (or name one: lookup:<path>)")
			}
			return answerer(LoadRules(r.RulesFile))
		}
		if err := needArg("path"); err != nil {
			return nil, err
		}
		return answerer(r.loadConfinedRules(arg))
	case "agent":
		if err := needArg("subagent"); err != nil {
			return nil, err
		}
		if r.Agents == nil {
			return nil, fmt.Errorf("answerer %s: no agent runner configured", step)
		}
		return NewAgent(arg, r.Agents).WithLogger(r.Logger), nil
	case "webhook":
		if err := needArg("url"); err != nil {
			return nil, err
		}
		if r.WebhookSecret == "" {
			return nil, fmt.Errorf("answerer webhook: no webhook secret configured")
		}
		opts := r.WebhookOptions
		if opts.Logger == nil {
			opts.Logger = r.Logger
		}
		return answerer(NewWebhook(arg, r.WebhookSecret, opts))
	case "human", "cli":
		if err := noArg(); err != nil {
			return nil, err
		}
		return NewHuman(r.Notify), nil
	}
	return nil, fmt.Errorf("unknown answerer %q (known: %s)", step, strings.Join(r.Known(), ", "))
}

// Check tells whether Resolve knows the answerer of step (see
// wire.RouteStep.Answerer) and whether its argument has the right shape, without
// building the answerer: what a submitted route is checked with, so a step
// that names nothing known is refused at once instead of failing at the
// task's first question. Configuration (a memory store, a rules file, a
// webhook secret) is not checked: a step without it declines when asked.
func (r *Resolver) Check(step string) error {
	step = strings.TrimSpace(step)
	name, arg, hasArg := strings.Cut(step, ":")
	r.mu.RLock()
	_, registered := r.extra[name]
	check := r.checks[name]
	r.mu.RUnlock()
	if registered {
		if check != nil {
			if err := check(arg); err != nil {
				return fmt.Errorf("answerer %s: %w", step, err)
			}
		}
		return nil
	}
	switch name {
	case "memory", "human", "cli":
		if hasArg {
			return fmt.Errorf("answerer %q takes no argument", name)
		}
		return nil
	case "lookup":
		if hasArg && strings.TrimSpace(arg) == "" {
			return fmt.Errorf("answerer %s: want lookup or lookup:<path>", step)
		}
		return nil
	case "agent", "webhook":
		if strings.TrimSpace(arg) == "" {
			what := map[string]string{"agent": "subagent", "webhook": "url"}[name]
			return fmt.Errorf("answerer %s: want %s:<%s>", step, name, what)
		}
		return nil
	}
	return fmt.Errorf("unknown answerer %q (known: %s)", step, strings.Join(r.Known(), ", "))
}

// Known lists the step forms Resolve accepts, registered ones included.
func (r *Resolver) Known() []string {
	known := slices.Clone(builtins)
	r.mu.RLock()
	for p := range r.extra {
		known = append(known, p+":<arg>")
	}
	r.mu.RUnlock()
	slices.Sort(known[len(builtins):])
	return known
}

// loadConfinedRules loads lookup:<path>, inside RulesDir when it is set.
func (r *Resolver) loadConfinedRules(path string) (*Lookup, error) {
	if r.RulesDir == "" {
		return LoadRules(path)
	}
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(r.RulesDir, path)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("lookup %s: outside the rules directory %s", path, r.RulesDir)
		}
		path = rel
	}
	root, err := os.OpenRoot(r.RulesDir)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", path, err)
	}
	defer root.Close()
	b, err := root.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", path, err)
	}
	return parseRules(path, b)
}

// answerer returns a constructor's result as an Answerer, never a typed nil.
func answerer[T Answerer](a T, err error) (Answerer, error) {
	if err != nil {
		return nil, err
	}
	return a, nil
}
