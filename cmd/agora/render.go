package main

// How the task verbs write for people: tables, timelines, durations, and
// color — only on a terminal, and never with NO_COLOR set
// (https://no-color.org) or TERM=dumb. With --json they write the API's
// own JSON instead, and nothing here is used.

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// ui is how one stream is written for people.
type ui struct {
	// tty: the stream is a terminal (redraw in place, live status lines).
	tty bool
	// color: ANSI colors are wanted.
	color bool
}

// newUI looks at w and the environment.
func newUI(w io.Writer, environ []string) ui {
	tty := isTTY(w)
	return ui{tty: tty, color: tty && getenv(environ, "NO_COLOR") == "" && getenv(environ, "TERM") != "dumb"}
}

// ANSI SGR codes.
const (
	sgrBold    = "1"
	sgrDim     = "2"
	sgrRed     = "31"
	sgrGreen   = "32"
	sgrYellow  = "33;1"
	sgrBlue    = "34"
	sgrMagenta = "35"
	sgrCyan    = "36"
)

// paint wraps s in the SGR code when color is on.
func (u ui) paint(code, s string) string {
	if !u.color || code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// stateColor is the color of a state's label.
func stateColor(s wire.State) string {
	switch s {
	case wire.StateNeedsInput:
		return sgrYellow
	case wire.StateRunning:
		return sgrCyan
	case wire.StateQueued:
		return sgrBlue
	case wire.StateFinished:
		return sgrGreen
	case wire.StateFailed:
		return sgrRed
	case wire.StateCancelled, wire.StateExpired:
		return sgrMagenta
	}
	return ""
}

// stateLabel is "needs input" for needs_input.
func stateLabel(s wire.State) string { return strings.ReplaceAll(string(s), "_", " ") }

// state is a state's colored label.
func (u ui) state(s wire.State) string { return u.paint(stateColor(s), stateLabel(s)) }

// cell is one table cell: its text and its color.
type cell struct {
	text  string
	color string
}

// writeTable writes rows under header, columns padded to their widest
// cell (colors do not count), the last column unpadded.
func (u ui) writeTable(w io.Writer, header []string, rows [][]cell) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	line := func(cells []cell) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(u.paint(c.color, c.text))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	hc := make([]cell, len(header))
	for i, h := range header {
		hc[i] = cell{h, sgrDim}
	}
	line(hc)
	for _, r := range rows {
		line(r)
	}
}

// humanDuration is d for people: 850ms, 12s, 4m05s, 2h03m, 3d04h.
func humanDuration(d time.Duration) string {
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

// clipText shortens s to n runes with an ellipsis, on one line.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// lastRound is the task's latest round, nil when it has none.
func lastRound(t *wire.Task) *wire.Round {
	if len(t.Rounds) == 0 {
		return nil
	}
	return &t.Rounds[len(t.Rounds)-1]
}

// roundText is "2", or "2 (attempt 3)" for a respawned round.
func roundText(r *wire.Round) string {
	if r == nil {
		return "-"
	}
	if r.Attempt > 1 {
		return fmt.Sprintf("%d (attempt %d)", r.N, r.Attempt)
	}
	return strconv.Itoa(r.N)
}

// nextAction is the exact command to run next for t: the orchestrator's
// when it names one (answer, respawn, continue), else following the
// round's output.
func nextAction(t *wire.Task) string {
	if t.Attention.Action != "" {
		return t.Attention.Action
	}
	if !t.State.Terminal() {
		return "agora logs " + t.ID + " -f"
	}
	return ""
}

// needsText is what t needs, from the orchestrator's attention, with the last
// line a running round printed.
func needsText(t *wire.Task) string {
	s := t.Attention.Summary
	if s == "" {
		s = stateLabel(t.State)
	}
	if t.State == wire.StateRunning && t.Attention.LastOutput != "" {
		s += ` · last output "` + clipText(t.Attention.LastOutput, 40) + `"`
	}
	return s
}

// attentionRank orders the attention view: what waits for a person first,
// then what ended badly, then what moves, then what ended well.
func attentionRank(s wire.State) int {
	return slices.Index([]wire.State{wire.StateNeedsInput, wire.StateFailed, wire.StateExpired,
		wire.StateRunning, wire.StateQueued, wire.StateCancelled, wire.StateFinished}, s)
}

// sortForAttention sorts tasks by attentionRank; questions oldest first,
// the rest most recently changed first.
func sortForAttention(tasks []*wire.Task) {
	slices.SortStableFunc(tasks, func(a, b *wire.Task) int {
		if c := cmp.Compare(attentionRank(a.State), attentionRank(b.State)); c != 0 {
			return c
		}
		if a.State == wire.StateNeedsInput {
			return lastRound(a).AskedAt.Compare(lastRound(b).AskedAt)
		}
		return b.UpdatedAt.Compare(a.UpdatedAt)
	})
}

// writeAttention writes the counts line (every task's), what a filter
// shows of them when one is given, and the attention table.
func (u ui) writeAttention(w io.Writer, tasks []*wire.Task, summary wire.Summary, filter string) {
	fmt.Fprintln(w, u.paint(sgrBold, summary.Text))
	if filter != "" {
		fmt.Fprintln(w, filter)
	}
	if summary.Alert != "" {
		fmt.Fprintln(w, u.paint(sgrYellow, "attention: "+summary.Alert))
	}
	if len(tasks) == 0 {
		return
	}
	sortForAttention(tasks)
	fmt.Fprintln(w)
	rows := make([][]cell, 0, len(tasks))
	for _, t := range tasks {
		next := nextAction(t)
		nextColor := ""
		if t.Attention.Required {
			nextColor = sgrBold
		}
		rows = append(rows, []cell{{t.ID, ""}, {stateLabel(t.State), stateColor(t.State)}, {roundText(lastRound(t)), ""},
			{clipText(needsText(t), 80), ""}, {next, nextColor}})
	}
	u.writeTable(w, []string{"TASK", "STATE", "ROUND", "NEEDS", "NEXT"}, rows)
}

// ifUnansweredWhat is what IfUnanswered.Text says happens, after its time.
var ifUnansweredWhat = regexp.MustCompile("^at (?:[0-9-]+ )?[0-9]{2}:[0-9]{2} UTC (.+)$")

// ifUnansweredText says what happens to an open question if nobody
// answers, and when, from iu.At as of now (a Text computed earlier would
// be stale): "default draft at 14:05 UTC (in 4m10s)", "goes to human at
// …", "expires at …"; "-" when the server does not say.
func ifUnansweredText(iu *wire.IfUnanswered, now time.Time) string {
	if iu == nil {
		return "-"
	}
	var what string
	switch iu.Action {
	case wire.IfUnansweredDefault:
		what = "default " + iu.Default
	case wire.IfUnansweredEscalate:
		what = "goes to " + iu.Next
	case wire.IfUnansweredExpire:
		// It expires, or fails when the task's total wait runs out: the
		// server's words say which.
		what = "expires"
		if m := ifUnansweredWhat.FindStringSubmatch(iu.Text); m != nil {
			what = strings.TrimPrefix(strings.ReplaceAll(m[1], "`", ""), "it ")
		}
	default:
		return iu.Text
	}
	if iu.At.IsZero() {
		return what
	}
	when := "in " + humanDuration(iu.At.Sub(now).Round(time.Second))
	if !iu.At.After(now) {
		when = humanDuration(now.Sub(iu.At).Round(time.Second)) + " ago"
	}
	at := iu.At.UTC()
	layout := "15:04 UTC"
	if y, d := at.YearDay(), now.UTC().YearDay(); y != d || at.Year() != now.UTC().Year() {
		layout = "Jan 2 15:04 UTC"
	}
	return fmt.Sprintf("%s at %s (%s)", what, at.Format(layout), when)
}

// writeQuestions writes the open questions, oldest first, each with what
// happens if nobody answers.
func (u ui) writeQuestions(w io.Writer, qs []wire.QuestionView, now time.Time) {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no open questions")
		return
	}
	rows := make([][]cell, 0, len(qs))
	for _, q := range qs {
		opts := strings.Join(q.Options, " / ")
		if q.Default != nil {
			opts += " (default " + *q.Default + ")"
		}
		rows = append(rows, []cell{{q.TaskID, ""}, {strconv.Itoa(q.Round), ""}, {humanDuration(time.Duration(q.AgeMS) * time.Millisecond), ""},
			{clipText(q.Question, 80), sgrYellow}, {strings.TrimSpace(opts), ""}, {ifUnansweredText(q.IfUnanswered, now), ""}, {q.Action, sgrBold}})
	}
	u.writeTable(w, []string{"TASK", "ROUND", "AGE", "QUESTION", "OPTIONS", "IF UNANSWERED", "ANSWER WITH"}, rows)
}

// writeTimeline writes one task: what it is, where it stands, what to do
// next, and each round — when it was queued, how long it ran, what it
// asked, what each route step did, who answered what after how long.
func (u ui) writeTimeline(w io.Writer, t *wire.Task, now time.Time) {
	fmt.Fprintf(w, "%s %s · sub-agent %s · %s\n", u.paint(sgrDim, "task"), u.paint(sgrBold, t.ID), t.Request.Subagent.Name, u.state(t.State))
	if t.Pins != nil {
		fmt.Fprintf(w, "pinned: %s\n", pinsText(t.Pins))
	}
	writeLinks(w, t) // replay.go
	if t.Outcome != nil {
		fmt.Fprintf(w, "outcome: %s\n", t.Outcome.Detail)
	} else if t.Attention.Summary != "" {
		fmt.Fprintf(w, "now: %s\n", needsText(t))
	}
	end := now
	if t.State.Terminal() {
		end = t.UpdatedAt
	}
	rounds := 0
	for _, r := range t.Rounds {
		rounds = max(rounds, r.N)
	}
	line := fmt.Sprintf("created %s · %d round%s · %s in all", t.CreatedAt.Local().Format("2006-01-02 15:04:05 MST"),
		rounds, pluralS(rounds), humanDuration(end.Sub(t.CreatedAt)))
	if t.Owner != "" {
		line += " · owner " + t.Owner
	}
	if t.WaitedMS > 0 {
		line += " · " + humanDuration(time.Duration(t.WaitedMS)*time.Millisecond) + " waiting for answers"
	}
	fmt.Fprintln(w, line)
	if next := nextAction(t); next != "" {
		fmt.Fprintf(w, "next: %s\n", u.paint(sgrBold, next))
	}
	fmt.Fprintln(w)
	for i := range t.Rounds {
		waiting := i == len(t.Rounds)-1 && t.State == wire.StateNeedsInput
		u.writeRound(w, &t.Rounds[i], now, waiting)
	}
	// The actions the rounds do not show: cancel, respawn and retry.
	for _, e := range t.History {
		if e.Action != wire.ActionCancel && e.Action != wire.ActionRespawn && e.Action != wire.ActionRetry {
			continue
		}
		fmt.Fprintf(w, "%s %s by %s", e.At.Local().Format("15:04:05"), e.Action, whoText(e.By, e.Via))
		if e.Detail != "" {
			fmt.Fprintf(w, " (%s)", e.Detail)
		}
		fmt.Fprintln(w)
	}
}

// whoText is by, and the token that vouched for it.
func whoText(by, via string) string {
	if via != "" {
		return by + " (through " + via + ")"
	}
	return by
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeRound writes one round; waiting says its question is still open.
func (u ui) writeRound(w io.Writer, r *wire.Round, now time.Time, waiting bool) {
	var times []string
	switch {
	case r.StartedAt.IsZero() && r.State == wire.StateQueued && !r.Enqueued && r.RetryAt.After(now):
		times = append(times, "retried at "+r.RetryAt.Local().Format("15:04:05")+" (in "+humanDuration(r.RetryAt.Sub(now))+")")
	case r.StartedAt.IsZero() && r.State == wire.StateQueued:
		times = append(times, "queued for "+humanDuration(now.Sub(r.QueuedAt)))
	case r.StartedAt.IsZero():
		times = append(times, "never started")
	default:
		times = append(times, "queued "+humanDuration(r.StartedAt.Sub(r.QueuedAt)))
		if r.EndedAt.IsZero() {
			times = append(times, "running for "+humanDuration(now.Sub(r.StartedAt)))
		} else {
			times = append(times, "ran "+humanDuration(r.EndedAt.Sub(r.StartedAt)))
		}
	}
	if r.ExitCode != nil {
		times = append(times, "exit "+strconv.Itoa(*r.ExitCode))
	}
	label := "round " + roundText(r)
	fmt.Fprintf(w, "%s  %s  %s\n", u.paint(sgrBold, label), u.state(r.State), strings.Join(times, " · "))
	field := func(name, value string) {
		fmt.Fprintf(w, "  %-9s %s\n", u.paint(sgrDim, name), value)
	}
	if r.FollowUp != "" {
		field("follow-up", strconv.Quote(r.FollowUp))
	}
	if r.Failure != nil {
		field("failed", string(r.Failure.Reason)+": "+r.Failure.Detail)
	}
	if q := r.Question; q != nil {
		text := q.Question
		if len(q.Options) > 0 {
			text += " (" + strings.Join(q.Options, " / ") + ")"
		}
		if q.Default != nil {
			text += " [default " + *q.Default + "]"
		}
		field("asked", u.paint(sgrYellow, text))
		if q.Context != "" {
			field("context", clipText(q.Context, 200))
		}
	}
	if len(r.Decisions) > 0 {
		steps := make([]string, 0, len(r.Decisions))
		for _, d := range r.Decisions {
			s := d.Step + " " + d.Result
			if d.Detail != "" {
				s += " (" + d.Detail + ")"
			}
			steps = append(steps, s)
		}
		field("route", strings.Join(steps, " · "))
	}
	if a := r.Answer; a != nil {
		switch {
		case a.Channel == "continue":
			field("continued", fmt.Sprintf("%q — by %s", a.Value, whoText(a.By, a.Via)))
		case a.Assumed:
			field("answer", fmt.Sprintf("%s — nobody answered; the default was taken after %s", a.Value, humanDuration(time.Duration(a.WaitMS)*time.Millisecond)))
		default:
			field("answer", fmt.Sprintf("%s — by %s via %s, %s after the question", a.Value, whoText(a.By, a.Via), a.Channel, humanDuration(time.Duration(a.WaitMS)*time.Millisecond)))
		}
	} else if waiting && !r.AskedAt.IsZero() {
		field("waiting", "for an answer for "+humanDuration(now.Sub(r.AskedAt)))
	}
	if text := usageText(r.Usage); text != "" {
		field("usage", text)
	}
	if us := r.Usage; us != nil && us.SessionID != "" {
		how := "new conversation"
		if us.Resumed {
			how = "resumed the previous round's conversation"
		}
		field("session", us.SessionID+" — "+how)
	}
}

// usageText is a round's usage on one line: model · turns · cost · tokens
// (in, of which from the prompt cache, out); "" when it reported nothing.
func usageText(us *schemas.Usage) string {
	if us == nil {
		return ""
	}
	var parts []string
	if us.Model != "" {
		parts = append(parts, us.Model)
	}
	if us.Turns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", us.Turns))
	}
	if us.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", us.CostUSD))
	}
	// Claude Code's input_tokens leave out what was written to and read
	// from the prompt cache; the line counts them in.
	if in := us.InputTokens + us.CacheCreationInputTokens + us.CacheReadInputTokens; in > 0 || us.OutputTokens > 0 {
		tokens := fmt.Sprintf("%d tokens in", in)
		if us.CacheReadInputTokens > 0 {
			tokens += fmt.Sprintf(" (%d from cache)", us.CacheReadInputTokens)
		}
		parts = append(parts, tokens+fmt.Sprintf(", %d out", us.OutputTokens))
	}
	return strings.Join(parts, " · ")
}
