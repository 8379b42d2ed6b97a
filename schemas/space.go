package schemas

import (
	"strings"
	"unicode"
)

// IsSpace reports whether r is white space as the contract defines it
// (docs/contract.md, "How the schemas are read"): Unicode's White_Space
// property, which unicode.IsSpace and strings.TrimSpace follow, or
// ECMA-262's \s, which JSON Schema's patterns use and which adds U+FEFF
// (the byte-order mark). NonBlankPattern is the class of every other
// character.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || r == '\ufeff'
}

// TrimSpace returns s without the white space (IsSpace) around it. Every
// place agora trims a question, an option or an answer uses it, so what
// the sentinel's schema calls blank is blank there too.
func TrimSpace(s string) string {
	return strings.TrimFunc(s, IsSpace)
}

// Blank reports whether s holds nothing but white space (IsSpace): what
// the sentinel's schema refuses as a question.
func Blank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !IsSpace(r) }) < 0
}
