package orchestrator

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// Page sizes of every list (List, Questions, and the API's registry
// lists): a limit of 0 means DefaultPageLimit; above MaxPageLimit is an
// error, never a silent clamp.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// PageOptions ask for one page of a list: at most Limit items after the
// page whose NextCursor is Cursor (empty: the first page).
type PageOptions struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// TaskPage is one page of List: the tasks, newest first, in their list
// view (see ListView), and the counts of all tasks by state.
type TaskPage struct {
	Tasks   []*Task `json:"tasks"`
	Summary Summary `json:"summary"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// QuestionPage is one page of Questions, oldest first.
type QuestionPage struct {
	Questions []QuestionView `json:"questions"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// PageError is a limit or cursor a list does not take. It is an
// ErrInvalidRequest (errors.Is); Param names the parameter.
type PageError struct {
	Param  string
	Reason string
}

func (e *PageError) Error() string { return e.Param + ": " + e.Reason }

// Is makes a PageError an ErrInvalidRequest.
func (e *PageError) Is(target error) bool { return target == ErrInvalidRequest }

// PageLimit is the number of items a page with limit asks for: the
// default for 0, an error below 0 or above MaxPageLimit.
func PageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageLimit, nil
	case limit < 0 || limit > MaxPageLimit:
		return 0, &PageError{"limit", fmt.Sprintf("%d: want 1 to %d (default %d)", limit, MaxPageLimit, DefaultPageLimit)}
	}
	return limit, nil
}

// Cursor kinds: a cursor of one list is refused by another.
const (
	cursorTasks     = 't' // List: created_at and id of the last task, newest first
	cursorQuestions = 'q' // Questions: asked_at and task id of the last question, oldest first
)

// sortKey orders tasks by creation (and questions by when they were
// asked), the id breaking ties: a cursor holds the key of the last item
// of its page, so a page starts where the last one ended whatever was
// inserted or removed meanwhile.
type sortKey struct {
	at int64 // Unix nanoseconds
	id string
}

func keyOf(at time.Time, id string) sortKey { return sortKey{at.UnixNano(), id} }

func (k sortKey) compare(o sortKey) int {
	switch {
	case k.at < o.at:
		return -1
	case k.at > o.at:
		return 1
	case k.id < o.id:
		return -1
	case k.id > o.id:
		return 1
	}
	return 0
}

// encodeCursor makes the opaque cursor of a page ending at k.
func encodeCursor(kind byte, k sortKey) string {
	b := make([]byte, 0, 9+len(k.id))
	b = append(b, kind)
	b = binary.BigEndian.AppendUint64(b, uint64(k.at))
	b = append(b, k.id...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of kind; ok is false for no cursor.
func decodeCursor(kind byte, s string) (k sortKey, ok bool, err error) {
	if s == "" {
		return sortKey{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 10 || b[0] != kind {
		return sortKey{}, false, &PageError{"cursor", fmt.Sprintf("%q is not a cursor of this list; pass the next_cursor of its previous page", clip(s, 40))}
	}
	return sortKey{int64(binary.BigEndian.Uint64(b[1:9])), string(b[9:])}, true, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ListView is t as lists show it: without the request's input and the
// rounds' partial_state, which can be large (GET one task for them). The
// JSON field names are the task's; the fields left out are simply absent.
// It changes t in place; the rounds are copied first, so a cached task's
// rounds are not touched.
func ListView(t *Task) *Task {
	t.Request.Input = nil
	stripped := false
	for i := range t.Rounds {
		if q := t.Rounds[i].Question; q != nil && len(q.PartialState) > 0 {
			if !stripped {
				t.Rounds = append([]Round(nil), t.Rounds...)
				stripped = true
			}
			cp := *q
			cp.PartialState = nil
			t.Rounds[i].Question = &cp
		}
	}
	return t
}
