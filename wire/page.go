package wire

import "fmt"

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
		return 0, &PageError{Param: "limit", Reason: fmt.Sprintf("%d: want 1 to %d (default %d)", limit, MaxPageLimit, DefaultPageLimit)}
	}
	return limit, nil
}
