package answer

import (
	"slices"

	"github.com/agoradev/agora/schemas"
)

// SameQuestion reports whether question text with options is the same
// question as q, under the normalisation memory keys on: the texts equal
// once trimmed, case-folded, internal white space collapsed and trailing
// punctuation dropped, and the options the same set once trimmed (order
// and duplicates ignored). Remembered rules match questions with it.
func SameQuestion(text string, options []string, q Question) bool {
	return normalizeQuestion(text) == normalizeQuestion(q.Question) &&
		slices.Equal(optionSet(options), optionSet(q.Options))
}

// optionSet is options trimmed, sorted and without duplicates.
func optionSet(options []string) []string {
	opts := make([]string, 0, len(options))
	for _, o := range options {
		opts = append(opts, schemas.TrimSpace(o))
	}
	slices.Sort(opts)
	return slices.Compact(opts)
}
