package view

import (
	"strings"
	"testing"
)

// TestConfirm: on a terminal the count is shown and y or yes goes on;
// anything else changes nothing; without a terminal it is a usage error
// naming --yes.
func TestConfirm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		tty  bool
		want string // "" goes on
	}{
		{"y\n", true, ""},
		{"YES\n", true, ""},
		{"n\n", true, "not confirmed; nothing changed"},
		{"", true, "not confirmed; nothing changed"},
		{"y\n", false, "no terminal on stdin to confirm on, so add --yes to cancel them"},
	} {
		var out strings.Builder
		err := Confirm(strings.NewReader(tt.in), tt.tty, &out, "3 tasks match --batch b", "cancel", 3)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("confirm(%q, tty %t) = %v, want to go on", tt.in, tt.tty, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("confirm(%q, tty %t) = %v, want %q", tt.in, tt.tty, err, tt.want)
		}
		if tt.tty && out.String() != "3 tasks match --batch b\ncancel 3 tasks? [y/N] " {
			t.Errorf("confirm on a terminal wrote %q", out.String())
		}
	}
}
