package wire

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// ErrInvalidID: a task id breaks the id rule. It is an ErrInvalidRequest
// too; the API answers it 400 (an id in the path), never 500.
var ErrInvalidID error = invalidIDError{}

type invalidIDError struct{}

func (invalidIDError) Error() string        { return "invalid task id" }
func (invalidIDError) Is(target error) bool { return target == ErrInvalidRequest }

// TaskIDRule says what a task id may be.
const TaskIDRule = "letters, digits, '-' and '_', starting with a letter or digit, at most 96 characters"

// CheckTaskID refuses an id that is not a task id — ">", "*", "a b", "..",
// one over 96 characters — with ErrInvalidID naming the id and the rule,
// before it reaches a KV key or a subject.
func CheckTaskID(id string) error {
	if taskIDPattern.MatchString(id) {
		return nil
	}
	if len(id) > 100 {
		return fmt.Errorf("%w %q (%d bytes): want %s", ErrInvalidID, clip(id, 100), len(id), TaskIDRule)
	}
	return fmt.Errorf("%w %q: want %s", ErrInvalidID, id, TaskIDRule)
}

var taskIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,95}$`)

// clip is s cut to at most n bytes on a rune boundary, marked with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
