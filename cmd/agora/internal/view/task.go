package view

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// LastRound is the task's latest round, nil when it has none.
func LastRound(t *wire.Task) *wire.Round {
	if len(t.Rounds) == 0 {
		return nil
	}
	return &t.Rounds[len(t.Rounds)-1]
}

// RoundText is "2", or "2 (attempt 3)" for a respawned round.
func RoundText(r *wire.Round) string {
	if r == nil {
		return "-"
	}
	if r.Attempt > 1 {
		return fmt.Sprintf("%d (attempt %d)", r.N, r.Attempt)
	}
	return strconv.Itoa(r.N)
}

// NextAction is the exact command to run next for t: the orchestrator's
// when it names one (answer, respawn, continue), else following the
// round's output.
func NextAction(t *wire.Task) string {
	if t.Attention.Action != "" {
		return t.Attention.Action
	}
	if !t.State.Terminal() {
		return "agora logs " + t.ID + " -f"
	}
	return ""
}

// NeedsText is what t needs, from the orchestrator's attention, with the last
// line a running round printed.
func NeedsText(t *wire.Task) string {
	s := t.Attention.Summary
	if s == "" {
		s = StateLabel(t.State)
	}
	if t.State == wire.StateRunning && t.Attention.LastOutput != "" {
		s += ` · last output "` + Clip(t.Attention.LastOutput, 40) + `"`
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
			return LastRound(a).AskedAt.Compare(LastRound(b).AskedAt)
		}
		return b.UpdatedAt.Compare(a.UpdatedAt)
	})
}

// Attention writes the counts line (every task's), what a filter
// shows of them when one is given, and the attention table.
func (u UI) Attention(w io.Writer, tasks []*wire.Task, summary wire.Summary, filter string) {
	fmt.Fprintln(w, u.Paint(Bold, summary.Text))
	if filter != "" {
		fmt.Fprintln(w, filter)
	}
	if summary.Alert != "" {
		fmt.Fprintln(w, u.Paint(Yellow, "attention: "+summary.Alert))
	}
	if len(tasks) == 0 {
		return
	}
	sortForAttention(tasks)
	fmt.Fprintln(w)
	rows := make([][]Cell, 0, len(tasks))
	for _, t := range tasks {
		next := NextAction(t)
		nextColor := ""
		if t.Attention.Required {
			nextColor = Bold
		}
		rows = append(rows, []Cell{{t.ID, ""}, {StateLabel(t.State), StateColor(t.State)}, {RoundText(LastRound(t)), ""},
			{Clip(NeedsText(t), 80), ""}, {next, nextColor}})
	}
	u.Table(w, []string{"TASK", "STATE", "ROUND", "NEEDS", "NEXT"}, rows)
}

// ifUnansweredWhat is what IfUnanswered.Text says happens, after its time.
var ifUnansweredWhat = regexp.MustCompile("^at (?:[0-9-]+ )?[0-9]{2}:[0-9]{2} UTC (.+)$")

// IfUnansweredText says what happens to an open question if nobody
// answers, and when, from iu.At as of now (a Text computed earlier would
// be stale): "default draft at 14:05 UTC (in 4m10s)", "goes to human at
// …", "expires at …"; "-" when the server does not say.
func IfUnansweredText(iu *wire.IfUnanswered, now time.Time) string {
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
	when := "in " + HumanDuration(iu.At.Sub(now).Round(time.Second))
	if !iu.At.After(now) {
		when = HumanDuration(now.Sub(iu.At).Round(time.Second)) + " ago"
	}
	at := iu.At.UTC()
	layout := "15:04 UTC"
	if y, d := at.YearDay(), now.UTC().YearDay(); y != d || at.Year() != now.UTC().Year() {
		layout = "Jan 2 15:04 UTC"
	}
	return fmt.Sprintf("%s at %s (%s)", what, at.Format(layout), when)
}

// Questions writes the open questions, oldest first, each with what
// happens if nobody answers.
func (u UI) Questions(w io.Writer, qs []wire.QuestionView, now time.Time) {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no open questions")
		return
	}
	rows := make([][]Cell, 0, len(qs))
	for _, q := range qs {
		opts := strings.Join(q.Options, " / ")
		if q.Default != nil {
			opts += " (default " + *q.Default + ")"
		}
		rows = append(rows, []Cell{{q.TaskID, ""}, {strconv.Itoa(q.Round), ""}, {HumanDuration(time.Duration(q.AgeMS) * time.Millisecond), ""},
			{Clip(q.Question, 80), Yellow}, {strings.TrimSpace(opts), ""}, {IfUnansweredText(q.IfUnanswered, now), ""}, {q.Action, Bold}})
	}
	u.Table(w, []string{"TASK", "ROUND", "AGE", "QUESTION", "OPTIONS", "IF UNANSWERED", "ANSWER WITH"}, rows)
}

// Timeline writes one task: what it is, where it stands, what to do
// next, and each round — when it was queued, how long it ran, what it
// asked, what each route step did, who answered what after how long.
func (u UI) Timeline(w io.Writer, t *wire.Task, now time.Time) {
	fmt.Fprintf(w, "%s %s · sub-agent %s · %s\n", u.Paint(Dim, "task"), u.Paint(Bold, t.ID), t.Request.Subagent.Name, u.State(t.State))
	if t.Pins != nil {
		fmt.Fprintf(w, "pinned: %s\n", PinsText(t.Pins))
	}
	links(w, t)
	if t.Outcome != nil {
		fmt.Fprintf(w, "outcome: %s\n", t.Outcome.Detail)
	} else if t.Attention.Summary != "" {
		fmt.Fprintf(w, "now: %s\n", NeedsText(t))
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
		rounds, PluralS(rounds), HumanDuration(end.Sub(t.CreatedAt)))
	if t.Owner != "" {
		line += " · owner " + t.Owner
	}
	if t.WaitedMS > 0 {
		line += " · " + HumanDuration(time.Duration(t.WaitedMS)*time.Millisecond) + " waiting for answers"
	}
	fmt.Fprintln(w, line)
	if next := NextAction(t); next != "" {
		fmt.Fprintf(w, "next: %s\n", u.Paint(Bold, next))
	}
	fmt.Fprintln(w)
	for i := range t.Rounds {
		waiting := i == len(t.Rounds)-1 && t.State == wire.StateNeedsInput
		u.round(w, &t.Rounds[i], now, waiting)
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

// round writes one round; waiting says its question is still open.
func (u UI) round(w io.Writer, r *wire.Round, now time.Time, waiting bool) {
	var times []string
	switch {
	case r.StartedAt.IsZero() && r.State == wire.StateQueued && !r.Enqueued && r.RetryAt.After(now):
		times = append(times, "retried at "+r.RetryAt.Local().Format("15:04:05")+" (in "+HumanDuration(r.RetryAt.Sub(now))+")")
	case r.StartedAt.IsZero() && r.State == wire.StateQueued:
		times = append(times, "queued for "+HumanDuration(now.Sub(r.QueuedAt)))
	case r.StartedAt.IsZero():
		times = append(times, "never started")
	default:
		times = append(times, "queued "+HumanDuration(r.StartedAt.Sub(r.QueuedAt)))
		if r.EndedAt.IsZero() {
			times = append(times, "running for "+HumanDuration(now.Sub(r.StartedAt)))
		} else {
			times = append(times, "ran "+HumanDuration(r.EndedAt.Sub(r.StartedAt)))
		}
	}
	if r.ExitCode != nil {
		times = append(times, "exit "+strconv.Itoa(*r.ExitCode))
	}
	label := "round " + RoundText(r)
	fmt.Fprintf(w, "%s  %s  %s\n", u.Paint(Bold, label), u.State(r.State), strings.Join(times, " · "))
	field := func(name, value string) {
		fmt.Fprintf(w, "  %-9s %s\n", u.Paint(Dim, name), value)
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
		field("asked", u.Paint(Yellow, text))
		if q.Context != "" {
			field("context", Clip(q.Context, 200))
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
			field("answer", fmt.Sprintf("%s — nobody answered; the default was taken after %s", a.Value, HumanDuration(time.Duration(a.WaitMS)*time.Millisecond)))
		default:
			field("answer", fmt.Sprintf("%s — by %s via %s, %s after the question", a.Value, whoText(a.By, a.Via), a.Channel, HumanDuration(time.Duration(a.WaitMS)*time.Millisecond)))
		}
	} else if waiting && !r.AskedAt.IsZero() {
		field("waiting", "for an answer for "+HumanDuration(now.Sub(r.AskedAt)))
	}
	if text := UsageText(r.Usage); text != "" {
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

// UsageText is a round's usage on one line: model · turns · cost · tokens
// (in, of which from the prompt cache, out); "" when it reported nothing.
func UsageText(us *schemas.Usage) string {
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

// PinsText is the versions a task runs: "reviewer@3f2a9c1b7d20 with
// capabilities review-skill@… and env review-env@…".
func PinsText(p *wire.Pins) string {
	s := p.Subagent
	if len(p.Capabilities) > 0 {
		s += " with capabilities " + strings.Join(p.Capabilities, ", ")
	}
	if len(p.Env) > 0 {
		s += " and env " + strings.Join(p.Env, ", ")
	}
	return s
}

// OutcomeDetail is how t ended, or its state.
func OutcomeDetail(t *wire.Task) string {
	if t.Outcome != nil {
		return t.Outcome.Detail
	}
	return StateLabel(t.State)
}

// FilterText says what status --state/--label shows of the tasks the
// counts line counts: "showing failed: 3 of 12 tasks". With --label the
// server counts no matches, so the line counts the ones listed, "at
// least" when more pages follow.
func FilterText(state, label string, page wire.TaskPage) string {
	if state == "" && label == "" {
		return ""
	}
	total := 0
	for _, n := range page.Summary.Counts {
		total += n
	}
	var what []string
	if state != "" {
		what = append(what, StateLabel(wire.State(state)))
	}
	if label != "" {
		what = append(what, "labelled "+label)
	}
	shown := strconv.Itoa(len(page.Tasks))
	switch {
	case label == "":
		shown = strconv.Itoa(page.Summary.Counts[wire.State(state)])
	case page.NextCursor != "":
		shown = "at least " + shown
	}
	return fmt.Sprintf("showing %s: %s of %d task%s", strings.Join(what, ", "), shown, total, PluralS(total))
}

// More tells how to see what one page left out: the same command
// with --cursor for the next page, or --all. args are the command's words
// and the filters it was given.
func More(w io.Writer, shown int, items, next string, args ...string) {
	if next == "" {
		return
	}
	cmd := strings.Join(append(args, "--cursor", next), " ")
	fmt.Fprintf(w, "\n%d %s shown; more: '%s' (next page), or --all (every one), --limit N (per page)\n", shown, items, cmd)
}

// Words is the command cmd and the flags of pairs (flag, value) whose
// value is not empty, each value one shell word.
func Words(cmd string, pairs ...string) []string {
	words := []string{cmd}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			words = append(words, pairs[i], ShellWord(pairs[i+1]))
		}
	}
	return words
}

// ShellWord is s as one word of a shell command line.
func ShellWord(s string) string {
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == '=' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// links writes, in a task's timeline, the task it was made from, what
// its replay found, and the replays and forks made from it.
func links(w io.Writer, t *wire.Task) {
	if o := t.Origin; o != nil {
		fmt.Fprintf(w, "%s of %s", o.Kind, o.TaskID)
		if o.Kind == wire.LinkFork {
			fmt.Fprintf(w, " from round %d, answered %q", o.Round, o.Answer)
		}
		fmt.Fprintf(w, " by %s\n", o.By)
	}
	if rp := t.Replay; rp != nil {
		fmt.Fprintf(w, "replay: %s · %d of %d recorded answers used", OrDash(rp.Verdict), rp.Matched, len(rp.Recorded))
		if len(rp.Divergences) == 0 {
			fmt.Fprint(w, " · no divergence")
		}
		fmt.Fprintln(w)
		for _, d := range rp.Divergences {
			fmt.Fprintf(w, "  divergence, round %d, %s: %s\n", d.Round, d.Kind, d.Detail)
		}
	}
	if len(t.Derived) > 0 {
		parts := make([]string, len(t.Derived))
		for i, l := range t.Derived {
			parts[i] = l.TaskID + " (" + l.Kind
			if l.Round > 0 {
				parts[i] += fmt.Sprintf(" from round %d", l.Round)
			}
			parts[i] += ")"
		}
		fmt.Fprintf(w, "replays and forks: %s\n", strings.Join(parts, ", "))
	}
}

// Answered says which round of t an answer landed on, by whom, what t
// needs now, and the rule the answer made, if any.
func Answered(w io.Writer, t *wire.Task) {
	var answered *wire.Round
	for i := len(t.Rounds) - 1; i >= 0; i-- {
		if r := &t.Rounds[i]; r.Answer != nil && r.Question != nil {
			answered = r
			break
		}
	}
	if answered == nil {
		fmt.Fprintf(w, "%s answered; %s\n", t.ID, NeedsText(t))
		return
	}
	fmt.Fprintf(w, "%s round %d answered: %s (by %s); %s\n", t.ID, answered.N, answered.Answer.Value, answered.Answer.By, NeedsText(t))
	if id := answered.Answer.Remembered; id != "" {
		fmt.Fprintf(w, "remembered as rule %s: 'agora rules show %s'\n", id, id)
	}
}

// Submitted says where a task just submitted stands and what to run next.
func Submitted(w io.Writer, t *wire.Task) {
	fmt.Fprintf(w, "%s %s: %s\n", t.ID, StateLabel(t.State), NeedsText(t))
	if next := NextAction(t); next != "" {
		fmt.Fprintf(w, "next: %s (or agora status %s)\n", next, t.ID)
	}
}

// Ended says how a task waited for ended, after how many rounds and how
// long.
func Ended(w io.Writer, t *wire.Task, took time.Duration) {
	rounds := 0
	for _, r := range t.Rounds {
		rounds = max(rounds, r.N)
	}
	fmt.Fprintf(w, "%s %s after %d round%s in %s: %s\n", t.ID, StateLabel(t.State), rounds, PluralS(rounds), HumanDuration(took), OutcomeDetail(t))
}

// OutputTail writes the last lines of what round n of task printed (at
// most tail; cut says there were more), or why they could not be read.
func OutputTail(w io.Writer, task string, n, tail int, lines []string, cut bool, err error) {
	if err != nil {
		fmt.Fprintf(w, "round %d's output could not be read (%v); 'agora logs %s' shows it\n", n, Clip(err.Error(), 120), task)
		return
	}
	if len(lines) == 0 {
		fmt.Fprintf(w, "round %d printed nothing\n", n)
		return
	}
	from := ""
	if cut {
		from = fmt.Sprintf("its last %d lines; ", tail)
	}
	fmt.Fprintf(w, "round %d's output (%s'agora logs %s --round %d' shows it all):\n", n, from, task, n)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
