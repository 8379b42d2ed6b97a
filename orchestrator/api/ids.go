package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/wire"
)

// checkPathIDs wraps the handler of an endpoint whose path takes an id:
// the id is checked before the handler runs, so a path id that cannot be
// one (">", "*", "a b", "..", one too long) is 400 invalid naming the id
// and the rule, and never reaches the service, a KV key or a subject.
// Every endpoint is registered through it, so a new one cannot skip it.
// The orchestrator checks task ids again in its store (CheckTaskID), for
// callers that are not the API.
func (h *handler) checkPathIDs(pattern string, next http.HandlerFunc) http.HandlerFunc {
	var checks []func(*http.Request) error
	if strings.Contains(pattern, "{id}") {
		checks = append(checks, func(r *http.Request) error {
			return wire.CheckTaskID(r.PathValue("id"))
		})
	}
	if strings.Contains(pattern, "{rule}") {
		checks = append(checks, func(r *http.Request) error { return orchestrator.CheckRuleID(r.PathValue("rule")) })
	}
	if strings.Contains(pattern, "{group}") {
		checks = append(checks, func(r *http.Request) error { return checkGroupID(r.PathValue("group")) })
	}
	if strings.Contains(pattern, "{ref}") {
		kind := refKinds[strings.TrimPrefix(strings.Split(pattern, "/{")[0], "/v1/")]
		nameOnly := strings.HasSuffix(pattern, "/versions")
		checks = append(checks, func(r *http.Request) error { return checkRef(kind, r.PathValue("ref"), nameOnly) })
	}
	if len(checks) == 0 {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		for _, check := range checks {
			if err := check(r); err != nil {
				h.fail(w, r, invalid(err.Error()))
				return
			}
		}
		next(w, r)
	}
}

// refKinds names what a registry path segment holds, for messages.
var refKinds = map[string]string{"subagents": "sub-agent", "capabilities": "capability", "envs": "env"}

// checkRef checks a registry ref in a path: NAME or NAME@VERSION, or NAME
// alone where the path lists a name's versions.
func checkRef(kind, ref string, nameOnly bool) error {
	shown := quoteID(ref)
	const rule = "letters, digits, '-' and '_', starting with a letter or digit, at most 64"
	name, version, err := registry.ParseRef(ref)
	switch {
	case err != nil && nameOnly:
		return fmt.Errorf("%s name %s: not a name; want %s", kind, shown, rule)
	case err != nil:
		return fmt.Errorf("%s ref %s: not a ref; want NAME or NAME@VERSION (12 or 64 hex digits), the name %s", kind, shown, rule)
	case nameOnly && version != "":
		return fmt.Errorf("%s name %s: want the name alone (%s), not a version", kind, shown, name)
	}
	return nil
}

// checkDotSegments refuses a path with a "." or ".." segment, which the
// router would otherwise redirect to another endpoint: such a segment is
// never an id.
func checkDotSegments(path string) error {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		return nil
	}
	segments := strings.Split(rest, "/")
	for i, seg := range segments {
		if seg != "." && seg != ".." {
			continue
		}
		if i == 1 && segments[0] == "tasks" {
			return wire.CheckTaskID(seg)
		}
		return fmt.Errorf("path %q: a %q segment is never an id; ids are letters, digits, '-' and '_'", path, seg)
	}
	return nil
}

// quoteID quotes an id for a message, cut to 100 bytes with its length
// when longer.
func quoteID(id string) string {
	if len(id) <= 100 {
		return strconv.Quote(id)
	}
	return fmt.Sprintf("%q (%d bytes)", id[:100]+"…", len(id))
}
