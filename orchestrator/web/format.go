package web

import (
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"time"

	"github.com/agoradev/agora/wire"
)

// since is how long ago t was, from now: "4m 10s".
func since(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return human(now.Sub(t))
}

// between is the time from a to b, or "" when either is unknown.
func between(a, b time.Time) string {
	if a.IsZero() || b.IsZero() {
		return ""
	}
	return human(b.Sub(a))
}

// human is the one way the pages print a duration, to the precision a
// person reads: 850ms, 12s, 1m 20s, 3h 5m, 2d 4h.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// clock prints t in UTC to the second.
func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// dayClock prints t in UTC as a person reads a deadline: "14:05 UTC" on
// now's day, "Nov 27 14:05 UTC" on another.
func dayClock(now, t time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04 UTC")
	}
	if t.Year() == now.Year() {
		return t.Format("Jan 2 15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

// relative is t from now: "in 4m 10s", "2m 5s ago", "now".
func relative(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return "in " + human(d)
	case d < 0:
		return human(-d) + " ago"
	}
	return "now"
}

// textWhat is what IfUnanswered.Text says happens, after its time.
var textWhat = regexp.MustCompile("^at (?:[0-9-]+ )?[0-9]{2}:[0-9]{2} UTC (.+)$")

// codeSpans escapes s, with `x` as <code>x</code>.
func codeSpans(s string) string {
	parts := strings.Split(s, "`")
	for i, p := range parts {
		parts[i] = template.HTMLEscapeString(p)
		if i%2 == 1 && i < len(parts)-1 {
			parts[i] = "<code>" + parts[i] + "</code>"
		} else if i%2 == 1 {
			parts[i] = "`" + parts[i]
		}
	}
	return strings.Join(parts, "")
}

// consequence says what happens to an open question if nobody answers,
// and when, computed from iu.At at the time the page is served (never
// from a Text written earlier): "at 14:05 UTC (in 4m 10s) the default
// draft is taken". The time is a <time> element the script keeps
// current while the page stays open.
func consequence(now time.Time, iu *wire.IfUnanswered) template.HTML {
	if iu == nil {
		return ""
	}
	esc := template.HTMLEscapeString
	var what string
	switch iu.Action {
	case wire.IfUnansweredDefault:
		what = "the default <code>" + esc(iu.Default) + "</code> is taken"
	case wire.IfUnansweredEscalate:
		what = "it goes to <code>" + esc(iu.Next) + "</code>"
	case wire.IfUnansweredExpire:
		// It expires, or fails when the task's total wait runs out: the
		// server's words say which.
		what = "it expires"
		if m := textWhat.FindStringSubmatch(iu.Text); m != nil {
			what = codeSpans(m[1])
		}
	default:
		return template.HTML(esc(iu.Text))
	}
	if iu.At.IsZero() {
		return template.HTML(what)
	}
	at := iu.At.UTC()
	return template.HTML(fmt.Sprintf(`at <time datetime="%s" title="%s">%s</time> (<span class="rel" data-at="%s">%s</span>) %s`,
		at.Format(time.RFC3339), esc(clock(at)), esc(dayClock(now, at)), at.Format(time.RFC3339), esc(relative(now, at)), what))
}
