package claudecode

import (
	"strings"
	"testing"
)

func TestValidSessionID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"3f2b8c1e-7d4a-4e9b-9c1a-0b5e6f7a8d9c", true},
		{"a", true},
		{strings.Repeat("a", maxSessionIDLen), true},
		{strings.Repeat("a", maxSessionIDLen+1), false},
		{"", false},
		{"-a", false},
		{"_a", false},
		{"../../etc", false},
		{"a/b", false},
		{"a.b", false},
		{"a\nb", false},
		{"ａ", false}, // a fullwidth letter: ASCII only
	} {
		if got := validSessionID(tc.id); got != tc.want {
			t.Errorf("validSessionID(%q) = %t, want %t", tc.id, got, tc.want)
		}
	}
}
