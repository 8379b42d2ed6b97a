package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RouteStep is one step of a task's route (SubmitRequest.Route, written
// as ParseRoute reads it): an answerer and how long it may take.
type RouteStep struct {
	// Answerer is the step as the answer package's Resolver reads it: "memory",
	// "agent:triage", "webhook:https://…".
	Answerer string `json:"answerer"`
	// Timeout bounds the step: how long Ask may run and, for a pending
	// answer, how long to wait before the next step takes over.
	Timeout time.Duration `json:"timeout"`
}

// Default routes of a task that names none.
const (
	// DefaultRoute: a person answers, through the API, CLI, web page or
	// Slack.
	DefaultRoute = "human"
	// DefaultCIRoute is the route of a task submitted from CI
	// (SubmitRequest.FromCI) without one, unless the orchestrator's
	// Config.CIRoute says otherwise: a person has 10 minutes, then the
	// question's default is taken, or the task expires.
	DefaultCIRoute = "human=10m"
)

// Default step timeouts.
const (
	// DefaultAutomaticTimeout bounds memory and lookup (and other automatic
	// answerers that answer at once or decline).
	DefaultAutomaticTimeout = 30 * time.Second
	// DefaultAgentTimeout bounds agent:<subagent>: a whole dispatch of
	// another sub-agent, container start included.
	DefaultAgentTimeout = 10 * time.Minute
	// DefaultWaitTimeout bounds steps that wait for someone: human, cli,
	// webhook and plugged-in ones such as slack.
	DefaultWaitTimeout = 24 * time.Hour
)

// DefaultStepTimeout is the timeout of a step written without one.
func DefaultStepTimeout(answerer string) time.Duration {
	switch name, _, _ := strings.Cut(answerer, ":"); name {
	case "memory", "lookup":
		return DefaultAutomaticTimeout
	case "agent":
		return DefaultAgentTimeout
	}
	return DefaultWaitTimeout
}

// String renders the step as ParseRoute reads it: "agent:triage=2m".
func (s RouteStep) String() string {
	return s.Answerer + "=" + formatDuration(s.Timeout)
}

// ParseRoute reads a route: steps separated by commas, each an answerer
// optionally followed by "=" and a timeout ("30s", "2m", "24h", "7d", or
// any Go duration), e.g. "memory,lookup,agent:triage=2m,human=24h". A step
// without a timeout gets DefaultStepTimeout. In a webhook step an "=" followed
// by something that is not a duration belongs to the URL, so
// "webhook:https://h/x?a=b=1h" is that URL with a 1h timeout (slack steps
// alike: "slack:#ops?allow=U1=2h"). Arguments
// cannot contain commas.
func ParseRoute(spec string) ([]RouteStep, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("route is empty")
	}
	parts := strings.Split(spec, ",")
	steps := make([]RouteStep, 0, len(parts))
	for i, p := range parts {
		s, err := parseStep(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("route step %d %q: %w", i+1, strings.TrimSpace(p), err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func parseStep(p string) (RouteStep, error) {
	if p == "" {
		return RouteStep{}, fmt.Errorf("empty step")
	}
	answerer, timeout := p, time.Duration(0)
	if i := strings.LastIndex(p, "="); i >= 0 {
		d, err := parseDuration(p[i+1:])
		switch {
		case err == nil:
			answerer, timeout = strings.TrimSpace(p[:i]), d
		case !strings.HasPrefix(p, "webhook:") && !strings.HasPrefix(p, "slack:"):
			// A URL's or a slack step's query may hold "=".
			return RouteStep{}, fmt.Errorf("timeout: %w", err)
		}
	}
	name, arg, hasArg := strings.Cut(answerer, ":")
	if !IsAnswererName(name) {
		return RouteStep{}, fmt.Errorf("answerer name %q: want lower-case letters, digits, '-' or '_'", name)
	}
	if hasArg && strings.TrimSpace(arg) == "" {
		return RouteStep{}, fmt.Errorf("empty argument after %q", name+":")
	}
	if timeout == 0 {
		timeout = DefaultStepTimeout(answerer)
	}
	return RouteStep{Answerer: answerer, Timeout: timeout}, nil
}

// FormatRoute renders steps as ParseRoute reads them.
func FormatRoute(steps []RouteStep) string {
	s := make([]string, len(steps))
	for i, st := range steps {
		s[i] = st.String()
	}
	return strings.Join(s, ",")
}

// IsAnswererName reports whether s is an answerer's name as a route
// writes it (the part before any ":"): lower-case letters, digits, '-' and
// '_', starting with a letter.
func IsAnswererName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// parseDuration reads a positive Go duration, or whole days as "7d".
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok && allDigits(days) {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("%q: too many days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration like 30s, 2m, 24h or 7d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be positive", s)
	}
	return d, nil
}

// formatDuration writes d compactly: "30s", "2m", "24h", "1h30m0s".
func formatDuration(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d > 0 && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
