// Package submitreq is what the verbs send, built from their flags and the
// files they name and checked as the server would check it, without
// contacting anything: agora dispatch's submit request (a sub-agent file,
// @FILE input), answer --remember's rule, stats --since. Every mistake is
// a usage error found before a task exists.
package submitreq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/registryfile"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Flags are the values of dispatch's flags that make the request.
type Flags struct {
	Subagent, SubagentFile, Command string // one of them: NAME[@VERSION], FILE or CMD
	Name                            string // renames an inline sub-agent
	Input                           string // a JSON object, or @FILE
	Route, TaskID, Timeout          string
	AllowMemory                     bool
	Labels                          []string // KEY=VALUE each
}

// Build reads f, and the files it names, into the request.
func Build(f Flags) (wire.SubmitRequest, error) {
	var req wire.SubmitRequest
	var err error
	given := 0
	for _, v := range []string{f.Subagent, f.SubagentFile, f.Command} {
		if v != "" {
			given++
		}
	}
	switch {
	case given == 0:
		return req, exitcode.Usagef(`want --subagent NAME, --subagent-file FILE or --command "CMD", e.g. agora dispatch --command 'echo hello' --wait`)
	case given > 1:
		return req, exitcode.Usagef("want one of --subagent, --subagent-file or --command, not several")
	case f.Subagent != "":
		if _, _, err := wire.ParseRef(f.Subagent); err != nil {
			return req, exitcode.Usagef("--subagent %q: want a registered sub-agent's NAME or NAME@VERSION; 'agora subagent list' shows them", f.Subagent)
		}
		if f.Name != "" {
			return req, exitcode.Usagef("--name renames an inline sub-agent; a registered one keeps its name")
		}
		req.SubagentRef = f.Subagent
	case f.SubagentFile != "":
		def, err := readSubagentFile(f.SubagentFile)
		if err != nil {
			return req, err
		}
		req = inlineRequest(def)
	default:
		req.Subagent = schemas.Subagent{Name: "command", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", f.Command}}
	}
	if f.Name != "" {
		req.Subagent.Name = f.Name
	}
	if f.Input != "" {
		if req.Input, err = readInput(f.Input); err != nil {
			return req, err
		}
	}
	if f.Route != "" {
		if _, err := wire.ParseRoute(f.Route); err != nil {
			return req, exitcode.Usagef("--route %q: %v; e.g. --route memory,lookup,human=30m", f.Route, err)
		}
		req.Route = f.Route
	}
	if f.Timeout != "" {
		if req.TimeoutSeconds, err = parseSeconds(f.Timeout); err != nil {
			return req, err
		}
	}
	for _, l := range f.Labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return req, exitcode.Usagef("--label %q: want KEY=VALUE", l)
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels[k] = v
	}
	// The server's own rule, checked before the request leaves the CLI.
	if f.TaskID != "" && wire.CheckTaskID(f.TaskID) != nil {
		return req, exitcode.Usagef("--task-id %q: want letters, digits, '-' and '_' (starting with a letter or digit, at most 96)", f.TaskID)
	}
	req.TaskID, req.AllowMemory = f.TaskID, f.AllowMemory
	return req, nil
}

// readInput reads --input: a JSON object, inline or from @FILE.
func readInput(v string) (json.RawMessage, error) {
	data, where := []byte(v), "--input"
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if data, err = os.ReadFile(name); err != nil {
			return nil, exitcode.Usagef("--input %s: %v; give the path of a JSON file after @", v, errors.Unwrap(err))
		}
		where = "--input " + v
	}
	var obj map[string]json.RawMessage
	if err := schemas.Decode("input", data, &obj); err != nil || obj == nil {
		why := "null"
		if ve, ok := errors.AsType[*schemas.ValidationError](err); ok {
			why = strings.Replace(ve.Detail(), "expected an object, got ", "", 1)
		} else if err != nil {
			why = err.Error()
		}
		return nil, exitcode.Usagef(`%s is not a JSON object (%s); pass one like --input '{"issue": 42}' or --input @input.json`, where, why)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, exitcode.Usagef("%s: %v", where, err)
	}
	return compact.Bytes(), nil
}

// parseSeconds reads --timeout: whole seconds, or a Go duration.
func parseSeconds(v string) (int, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 {
			return 0, exitcode.Usagef("--timeout %s: want at least 1 second", v)
		}
		if n > schemas.MaxTimeoutSeconds {
			return 0, exitcode.Usagef("--timeout %s: at most %d seconds (7 days)", v, schemas.MaxTimeoutSeconds)
		}
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, exitcode.Usagef("--timeout %q: want seconds (600) or a duration (10m) of at least 1s", v)
	}
	n := int(math.Ceil(d.Seconds()))
	if n > schemas.MaxTimeoutSeconds {
		return 0, exitcode.Usagef("--timeout %s: at most %ds (7 days)", v, schemas.MaxTimeoutSeconds)
	}
	return n, nil
}

// readSubagentFile reads and checks a sub-agent file against
// schemas/subagent.schema.json; every error names the file, the line, the
// field and the problem.
func readSubagentFile(name string) (*wire.Subagent, error) {
	data, err := registryfile.ReadFile(name)
	if err != nil {
		return nil, exitcode.Usagef("--subagent-file %v", err)
	}
	def, err := registryfile.ParseSubagent(name, data)
	if err != nil {
		return nil, exitcode.Usagef("%v", err)
	}
	if len(def.Capabilities) > 0 || len(def.Env) > 0 {
		return nil, exitcode.Usagef("%s names capabilities or env bundles, which only a registered sub-agent resolves: run 'agora subagent register %s', then 'agora dispatch --subagent %s'", name, name, def.Name)
	}
	return def, nil
}

// inlineRequest is a task of def given inline: its defaults become the
// request's, as a registered sub-agent's do on the server.
func inlineRequest(def *wire.Subagent) wire.SubmitRequest {
	req := wire.SubmitRequest{Subagent: def.Spec(), Route: def.Route, TimeoutSeconds: def.TimeoutSeconds,
		Image: def.Image, Network: def.Network, Egress: def.Egress, Resources: def.Resources, Workspace: def.Workspace, AllowMemory: def.AllowMemory, Retry: def.Retry}
	if def.Limits != nil {
		req.Limits = wire.Limits{MaxRounds: def.Limits.MaxRounds, MaxWaitSeconds: def.Limits.MaxWaitSeconds}
	}
	return req
}

// Remember is the Remember of 'agora answer --remember': nil without
// --remember; scope and for given without it are a usage error.
func Remember(remember bool, scope, forTime string) (*wire.Remember, error) {
	if !remember {
		if scope != "" || forTime != "" {
			return nil, exitcode.Usagef("--remember-scope and --remember-for go with --remember")
		}
		return nil, nil
	}
	rem := &wire.Remember{Scope: scope}
	if forTime != "" {
		d, err := parseDays(forTime)
		if err != nil || d < time.Second || d > wire.MaxRuleTTL {
			return nil, exitcode.Usagef("--remember-for %q: want a duration like 12h or 7d, at most %dd (default %dd)",
				forTime, int(wire.MaxRuleTTL/(24*time.Hour)), int(wire.DefaultRuleTTL/(24*time.Hour)))
		}
		rem.ExpiresInSeconds = int64(d / time.Second)
	}
	return rem, nil
}

// parseDays reads a Go duration or whole days ("7d").
func parseDays(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// Since reads --since: a period back from now (7d, 36h, 90m) or an
// RFC 3339 time.
func Since(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, exitcode.Usagef("--since %q: want a period back from now (7d, 36h, 90m) or an RFC 3339 time (2026-11-19T00:00:00Z)", s)
}

// FromCI says whether $CI, ci, is a CI job's: true (GitHub Actions, GitLab
// CI and most others set CI=true), or another true value; the request then
// asks for the server's bounded CI route.
func FromCI(ci string) bool {
	on, err := strconv.ParseBool(ci)
	return err == nil && on
}
