package slackanswer

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Slack's documented limits the messages are built within (the fake,
// slackfake, enforces the same and cites Slack's pages; docs/slack.md
// has the table).
const (
	limitBlocks      = 50   // blocks per message
	limitText        = 3000 // a text object (section text, context element)
	limitButtonText  = 75   // a button's text
	limitOptionText  = 75   // a select option's text
	limitActions     = 25   // elements of an actions block
	limitSelect      = 100  // options of a static_select
	limitPlaceholder = 150  // a select's placeholder
)

// Budgets agora keeps under the limits.
const (
	// maxButtons is how many options are buttons (with "On it", well
	// within the 25 elements of an actions block); more take a menu (static_select), which reads
	// better than a wall of buttons.
	maxButtons = 5
	// textBudget is what a section's text holds, under limitText with room
	// for the markup around it.
	textBudget = limitText - 100
	// maxListBlocks bounds the sections of the numbered list of options in
	// the message; maxThreadParts the messages that carry the whole
	// question (and list) in the thread, partBlocks the sections of each.
	maxListBlocks  = 20
	maxThreadParts = 4
	partBlocks     = 10
	// fallbackBudget bounds a message's top-level text.
	fallbackBudget = 3000
	// maxListed bounds the tasks named in a group's message (waiting, and
	// how each was answered).
	maxListed = 20
)

// width is a string's length as Slack may count it: in UTF-16 code units,
// which is never less than its characters (code points), the unit Slack's
// documentation names. Holding the limits in the larger unit holds them
// in either.
func width(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// fitIndex is the largest byte index i, on a rune boundary, such that
// width(s[:i]) <= w.
func fitIndex(s string, w int) int {
	n := 0
	for i, r := range s {
		n += utf16.RuneLen(r)
		if n > w {
			return i
		}
	}
	return len(s)
}

// wordBack moves a cut at i back to the last space within the last
// quarter before it, so that a word is not split; i when there is none.
func wordBack(s string, i int) int {
	lo := i - i/4
	for j := i; j > lo; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		if unicode.IsSpace(r) {
			return j - size
		}
		j -= size
	}
	return i
}

// clip cuts plain text to at most w (in width) on a rune and, where one is
// near, a word boundary, ending it with "…"; short text is returned whole.
func clip(s string, w int) string {
	if width(s) <= w {
		return s
	}
	i := wordBack(s, fitIndex(s, w-1))
	return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
}

// markers are mrkdwn's paired markers: bold, italic, strike, code.
const markers = "*_~`"

// safeCut is where mrkdwn text s may be cut at or before byte i: on a
// rune and word boundary, not inside an entity (&amp;) or a <…|…> link or
// mention, and with every marker (*, _, ~, `) paired in s[:cut] so no
// bold or code is left open. closers are markers to append when pairing
// them would cut off more than half of it.
func safeCut(s string, i int) (cut int, closers string) {
	i = wordBack(s, i)
	// Not inside an entity: &amp; &lt; &gt; are at most 5 bytes.
	if a := strings.LastIndexByte(s[max(0, i-5):i], '&'); a >= 0 {
		a += max(0, i-5)
		if !strings.Contains(s[a:i], ";") {
			i = a
		}
	}
	// Not inside a link, a mention or a date.
	if lt := strings.LastIndexByte(s[:i], '<'); lt >= 0 && lt > strings.LastIndexByte(s[:i], '>') {
		i = lt
	}
	for range 8 {
		moved := false
		for _, mk := range markers {
			if strings.Count(s[:i], string(mk))%2 == 1 {
				j := strings.LastIndexByte(s[:i], byte(mk))
				if j < i/2 {
					continue // pairing it costs too much: closed below
				}
				i, moved = j, true
			}
		}
		if !moved {
			break
		}
	}
	i = len(strings.TrimRightFunc(s[:i], unicode.IsSpace))
	for k := len(markers) - 1; k >= 0; k-- {
		if strings.Count(s[:i], markers[k:k+1])%2 == 1 {
			closers += markers[k : k+1]
		}
	}
	return i, closers
}

// clipMrkdwn cuts mrkdwn text to at most w, readably (safeCut), ending it
// with "…" and the closers of what the cut left open; cut reports whether
// anything was left out.
func clipMrkdwn(s string, w int) (out string, cut bool) {
	if width(s) <= w {
		return s, false
	}
	i, closers := safeCut(s, fitIndex(s, w-1-len(markers)))
	return s[:i] + "…" + closers, true
}

// splitMrkdwn cuts mrkdwn text into pieces of at most w each, every one
// cut readably (safeCut), at most n pieces; rest is the width left out.
func splitMrkdwn(s string, w, n int) (parts []string, rest int) {
	for s != "" && len(parts) < n {
		if width(s) <= w {
			return append(parts, s), 0
		}
		i, closers := safeCut(s, fitIndex(s, w-len(markers)))
		if i == 0 { // nothing fits whole: cut on the rune boundary
			i, closers = fitIndex(s, w), ""
		}
		parts = append(parts, s[:i]+closers)
		// What a closer closed here opens the next piece again.
		s = strings.TrimLeftFunc(reverse(closers)+s[i:], unicode.IsSpace)
	}
	return parts, width(s)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
