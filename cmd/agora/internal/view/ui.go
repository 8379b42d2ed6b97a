// Package view is how the CLI writes for people: tables, timelines,
// durations and color — only on a terminal, and never with NO_COLOR set
// (https://no-color.org) or TERM=dumb — for tasks, questions, registry
// entries, rules, parked events, stats, replays, batch and bulk summaries,
// results and agora watch's live table. Each function takes the API's wire
// types and an io.Writer; with --json the verbs write the API's own JSON
// instead, and nothing here is used.
package view

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agoradev/agora/wire"
	"golang.org/x/term"
)

// UI is how one stream is written for people.
type UI struct {
	// TTY: the stream is a terminal (redraw in place, live status lines).
	TTY bool
	// Color: ANSI colors are wanted.
	Color bool
}

// New looks at w and the environment (os.Environ form).
func New(w io.Writer, environ []string) UI {
	tty := IsTTY(w)
	return UI{TTY: tty, Color: tty && getenv(environ, "NO_COLOR") == "" && getenv(environ, "TERM") != "dumb"}
}

// ANSI SGR codes.
const (
	Bold    = "1"
	Dim     = "2"
	Red     = "31"
	Green   = "32"
	Yellow  = "33;1"
	Blue    = "34"
	Magenta = "35"
	Cyan    = "36"
)

// Paint wraps s in the SGR code when color is on.
func (u UI) Paint(code, s string) string {
	if !u.Color || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// StateColor is the color of a state's label.
func StateColor(s wire.State) string {
	switch s {
	case wire.StateNeedsInput:
		return Yellow
	case wire.StateRunning:
		return Cyan
	case wire.StateQueued:
		return Blue
	case wire.StateFinished:
		return Green
	case wire.StateFailed:
		return Red
	case wire.StateCancelled, wire.StateExpired:
		return Magenta
	}
	return ""
}

// StateLabel is "needs input" for needs_input.
func StateLabel(s wire.State) string { return strings.ReplaceAll(string(s), "_", " ") }

// State is a state's colored label.
func (u UI) State(s wire.State) string { return u.Paint(StateColor(s), StateLabel(s)) }

// Cell is one table Cell: its text and its color.
type Cell struct {
	Text  string
	Color string
}

// Table writes rows under header, columns padded to their widest
// Cell (colors do not count), the last column unpadded.
func (u UI) Table(w io.Writer, header []string, rows [][]Cell) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c.Text))
		}
	}
	line := func(cells []Cell) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(u.Paint(c.Color, c.Text))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.Text)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	hc := make([]Cell, len(header))
	for i, h := range header {
		hc[i] = Cell{h, Dim}
	}
	line(hc)
	for _, r := range rows {
		line(r)
	}
}

// HumanDuration is d for people: 850ms, 12s, 4m05s, 2h03m, 3d04h.
func HumanDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

// Clip shortens s to n runes with an ellipsis, on one line.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// PluralS is "s" unless n is 1.
func PluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// IsTTY reports whether w is a terminal (not merely a character device
// such as /dev/null).
func IsTTY(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// getenv looks key up in environ (os.Environ form); the last one wins.
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
