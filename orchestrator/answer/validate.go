package answer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agoradev/agora/schemas"
)

// ValidateAnswer checks an answer to q and returns its canonical form.
//
// With options, the answer (trimmed) must name one of them: by value, exactly
// and then case-insensitively, or by its 1-based index ("2" for the second
// option). The canonical option is returned, spelled as in q.Options. Indices
// are not accepted when an option is itself a number, so "3" can never mean
// two different things. Without options any non-blank answer is accepted,
// trimmed of surrounding white space.
func ValidateAnswer(q Question, answer string) (string, error) {
	a := schemas.TrimSpace(answer)
	if len(q.Options) == 0 {
		if a == "" {
			return "", fmt.Errorf("answer is empty")
		}
		return a, nil
	}
	if opt, ok := matchOption(q.Options, a); ok {
		return opt, nil
	}
	if indexable(q.Options) {
		if i, err := strconv.Atoi(a); err == nil && i >= 1 && i <= len(q.Options) && isDigits(a) {
			return q.Options[i-1], nil
		}
	}
	return "", fmt.Errorf("answer %q is not one of: %s", a, describeOptions(q.Options))
}

// matchOption finds a among options: an exact match first, then the only
// case-insensitive one. Ambiguous case-insensitive matches do not match.
func matchOption(options []string, a string) (string, bool) {
	for _, o := range options {
		if o == a {
			return o, true
		}
	}
	found, n := "", 0
	for _, o := range options {
		if strings.EqualFold(o, a) && o != found {
			found, n = o, n+1
		}
	}
	return found, n == 1
}

// indexable reports whether answers may name options by 1-based index: only
// when no option is itself a number.
func indexable(options []string) bool {
	for _, o := range options {
		if isDigits(schemas.TrimSpace(o)) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
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

// describeOptions renders options for an error: "A, B (or 1-2)".
func describeOptions(options []string) string {
	s := strings.Join(options, ", ")
	if !indexable(options) {
		return s
	}
	if len(options) == 1 {
		return s + " (or 1)"
	}
	return fmt.Sprintf("%s (or 1-%d)", s, len(options))
}

// containsExact reports whether a is one of options, spelled exactly.
func containsExact(options []string, a string) bool {
	for _, o := range options {
		if o == a {
			return true
		}
	}
	return false
}
