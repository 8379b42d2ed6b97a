package wire

import (
	"fmt"
	"strings"
)

// Difference is one field in which a submit request differs from the
// request stored under the same task id.
type Difference struct {
	// Field is the request's JSON field, dotted one level into an object
	// (route, input.n, labels.team, subagent.command, limits.max_rounds).
	Field string `json:"field"`
	// Stored and Now are the two values as compact JSON, each cut to
	// MaxDifferenceValue bytes ("…" marks a cut); empty when absent.
	Stored string `json:"stored"`
	Now    string `json:"now"`
}

// MaxDifferenceValue bounds Difference.Stored and Difference.Now.
const MaxDifferenceValue = 80

// MaxDifferences bounds ConflictError.Differences; More counts the rest.
const MaxDifferences = 8

// ConflictError is ErrConflict (errors.Is) with what differs: a submit
// whose task id is taken by a different request. The API carries the
// differences in the error body's "differences" field; the client gives
// them back in client.Error.Differences.
type ConflictError struct {
	TaskID string
	// Differences are the fields that differ, in the request's field
	// order; empty when the caller may not see the stored request (another
	// owner's task) or when only the request as written differs (a default
	// given explicitly that the stored request left out).
	Differences []Difference
	// More counts the differences past MaxDifferences.
	More int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("task %s: %v%s (submit it under another id, or remove the task first)", e.TaskID, ErrConflict, DescribeDifferences(e.Differences, e.More))
}

// Unwrap makes a ConflictError an ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// DescribeDifferences is `: route differs: stored "human", now
// "memory,human"; input.n differs: …`, or "" for none.
func DescribeDifferences(diffs []Difference, more int) string {
	if len(diffs) == 0 {
		return ""
	}
	parts := make([]string, 0, len(diffs)+1)
	for _, d := range diffs {
		parts = append(parts, DescribeDifference(d))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more field%s", more, plural(more)))
	}
	return ": " + strings.Join(parts, "; ")
}

// DescribeDifference is `route differs: stored "human", now "memory,human"`.
func DescribeDifference(d Difference) string {
	return fmt.Sprintf("%s differs: stored %s, now %s", d.Field, orNone(d.Stored), orNone(d.Now))
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
