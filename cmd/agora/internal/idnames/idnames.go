// Package idnames is agora -o name: the ids in a command's JSON output,
// one per line, whatever the command (tasks, questions, registry entries,
// parked events, contexts), so scripts can pipe one command into the next.
package idnames

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Write prints the ids in the JSON values of r one per line (-o name):
// a task's id, a question's task_id, a registry entry's NAME@VERSION, a
// parked event's seq; a list is the ids of its items.
func Write(w io.Writer, r io.Reader) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("-o name: read the JSON: %w", err)
		}
		for _, n := range names(v) {
			fmt.Fprintln(w, n)
		}
	}
}

// names is the ids of one JSON value, as Write prints them.
func names(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case json.Number:
		return []string{v.String()}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, names(e)...)
		}
		return out
	case map[string]any:
		if l, ok := v["artifacts"].([]any); ok && v["id"] == nil { // agora artifacts: their names
			return names(l)
		}
		for _, k := range []string{"id", "task_id"} {
			if s, ok := v[k].(string); ok && s != "" {
				return []string{s}
			}
		}
		if s, ok := v["name"].(string); ok && s != "" {
			if ver, ok := v["version"].(string); ok && ver != "" {
				return []string{s + "@" + ver}
			}
			return []string{s}
		}
		if n, ok := v["seq"].(json.Number); ok {
			return []string{n.String()}
		}
		if s, ok := v["version"].(string); ok && s != "" { // agora version
			return []string{s}
		}
		if m, ok := v["contexts"].(map[string]any); ok { // agora config get-contexts
			return slices.Sorted(maps.Keys(m))
		}
		for _, k := range []string{"tasks", "questions", "groups", "entries", "results", "task_ids", "items"} {
			if l, ok := v[k].([]any); ok {
				return names(l)
			}
		}
	}
	return nil
}
