package slackanswer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipMrkdwn: a cut falls on a rune and word boundary, never inside
// an entity or a link, and leaves no marker open; the result is within
// the width asked.
func TestClipMrkdwn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		w        int
		want     string
	}{
		{"short whole", "short", 10, "short"},
		{"word boundary", "alpha beta gamma delta", 15, "alpha beta…"},
		{"multi-byte", strings.Repeat("日", 20), 10, strings.Repeat("日", 5) + "…"},
		{"bold moved before", "plain words here *bold words run on* after", 30, "plain words here…"},
		{"bold closed when far back", "*" + strings.Repeat("b", 40) + " end*", 20, "*" + strings.Repeat("b", 14) + "…*"},
		{"entity kept whole", "fish &amp; chips", 10, "fish…"},
		{"link kept whole", "see <https://x.example/a|the page> now", 20, "see…"},
		{"code closed", "`" + strings.Repeat("c", 30) + "`", 12, "`" + strings.Repeat("c", 6) + "…`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := clipMrkdwn(tt.in, tt.w)
			if got != tt.want {
				t.Errorf("clipMrkdwn(%q, %d) = %q, want %q", tt.in, tt.w, got, tt.want)
			}
			if width(got) > tt.w || !utf8.ValidString(got) {
				t.Errorf("clipMrkdwn(%q, %d) = %q: width %d or invalid UTF-8", tt.in, tt.w, got, width(got))
			}
		})
	}
}

// TestSplitMrkdwn: the pieces hold all of the text, each within the width
// and with its markers paired.
func TestSplitMrkdwn(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("Le café — 日本語 &amp; more; ", 100) + "*bold " + strings.Repeat("ü", 300) + "* and " + strings.Repeat("word ", 400)
	parts, rest := splitMrkdwn(in, 500, 100)
	if rest != 0 {
		t.Fatalf("rest = %d, want 0", rest)
	}
	joined := ""
	for _, p := range parts {
		if width(p) > 500 || !utf8.ValidString(p) {
			t.Errorf("a piece of width %d (valid UTF-8: %v)", width(p), utf8.ValidString(p))
		}
		if strings.Count(p, "*")%2 != 0 {
			t.Errorf("a piece leaves bold open: %q", p)
		}
		joined += p
	}
	if readable(joined) != readable(in) {
		t.Errorf("the pieces do not hold the whole text")
	}
	if _, rest := splitMrkdwn(in, 500, 2); rest == 0 {
		t.Errorf("two pieces of 500 hold everything?")
	}
}

// TestWidth: code points outside the BMP count two (UTF-16), the larger
// reading of Slack's "characters".
func TestWidth(t *testing.T) {
	t.Parallel()
	if got := width("aé日😀"); got != 5 {
		t.Errorf("width = %d, want 5", got)
	}
	if got := clip(strings.Repeat("😀", 50), 75); width(got) > 75 {
		t.Errorf("clip of emoji: width %d", width(got))
	}
}
