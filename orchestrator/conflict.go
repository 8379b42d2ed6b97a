package orchestrator

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agoradev/agora/wire"
)

// requestFields are a submit request's fields in the order a conflict
// names them; a field not here (a newer one) comes after them, by name.
var requestFields = []string{"subagent_ref", "subagent", "input", "route", "capabilities", "env", "timeout_seconds",
	"image", "network", "resources", "workspace", "allow_memory", "limits", "retry", "labels"}

// nestedFields are the object fields whose differences are named one
// level down (input.n, labels.team).
var nestedFields = map[string]bool{"subagent": true, "input": true, "resources": true, "limits": true, "retry": true, "labels": true}

// requestDifferences compares two submit requests field by field, as
// stored (registry and defaults filled in), and returns what differs, at
// most wire.MaxDifferences of it, and how many more there are.
func requestDifferences(stored, now wire.SubmitRequest) ([]wire.Difference, int) {
	stored.TaskID, now.TaskID = "", ""
	a, b := fieldsOf(stored), fieldsOf(now)
	names := slices.Clone(requestFields)
	var extra []string
	for _, m := range []map[string]json.RawMessage{a, b} {
		for k := range m {
			if !slices.Contains(names, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	sort.Strings(extra)
	var diffs []wire.Difference
	for _, name := range append(names, extra...) {
		diffs = append(diffs, differences(name, a[name], b[name], nestedFields[name])...)
	}
	if len(diffs) > wire.MaxDifferences {
		return diffs[:wire.MaxDifferences], len(diffs) - wire.MaxDifferences
	}
	return diffs, 0
}

// differences compares one field's two values (nil: absent); nested
// compares two objects key by key.
func differences(name string, a, b json.RawMessage, nested bool) []wire.Difference {
	a, b = compact(a), compact(b)
	if bytes.Equal(a, b) {
		return nil
	}
	if nested {
		ma, aok := objectOf(a)
		mb, bok := objectOf(b)
		if aok && bok {
			keys := map[string]bool{}
			for k := range ma {
				keys[k] = true
			}
			for k := range mb {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			var out []wire.Difference
			for _, k := range sorted {
				out = append(out, differences(name+"."+k, ma[k], mb[k], false)...)
			}
			return out
		}
	}
	// A flag of the request left out is false (omitempty drops it); in
	// the input, absent is absent.
	if top := !strings.Contains(name, "."); top && string(a) == "true" && b == nil {
		b = json.RawMessage("false")
	} else if top && string(b) == "true" && a == nil {
		a = json.RawMessage("false")
	}
	return []wire.Difference{{Field: name, Stored: shown(a), Now: shown(b)}}
}

// fieldsOf is a request's JSON fields; empty ones are left out by their
// omitempty, and the empty object of a nested field counts as absent.
func fieldsOf(req wire.SubmitRequest) map[string]json.RawMessage {
	data, _ := json.Marshal(req)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	for k, v := range m {
		if o, ok := objectOf(compact(v)); ok && len(o) == 0 {
			delete(m, k)
		}
	}
	return m
}

// objectOf reads a JSON object; an absent value is the empty object.
func objectOf(v json.RawMessage) (map[string]json.RawMessage, bool) {
	if len(v) == 0 {
		return map[string]json.RawMessage{}, true
	}
	if v[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(v, &m) == nil
}

func compact(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v
	}
	return buf.Bytes()
}

// shown is a value for a message: compact JSON, cut on a rune boundary.
func shown(v json.RawMessage) string {
	s := string(v)
	if len(s) <= wire.MaxDifferenceValue {
		return s
	}
	n := wire.MaxDifferenceValue - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
