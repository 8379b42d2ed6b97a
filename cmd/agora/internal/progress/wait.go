// Package progress is how the CLI shows work in progress on stderr:
// dispatch --wait's lines (each change of state or round, the question
// with the command that answers it, a heartbeat while it waits for a
// person, who answered), on a terminal a status line kept in place; batch
// submit's bar; and the bulk verbs' counter.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// DefaultHeartbeat is how often dispatch --wait says it still waits while
// a question waits for a person (--heartbeat).
const DefaultHeartbeat = time.Minute

// Wait shows a waited-for task on stderr: a line for every change of
// state or round, the question once per round with the command that
// answers it, and while a question waits for a person, until when and
// what happens then — again whenever that changes (the route moved on) and
// at least every heartbeat. An answer is told with who gave it; a default
// taken, with why. On a terminal a status line is kept up to date in
// place.
type Wait struct {
	w     io.Writer
	ui    view.UI
	start time.Time
	now   func() time.Time
	// Heartbeat is how often a waiting question is told again.
	Heartbeat time.Duration
	// last is the state and round of the last line written.
	last string
	// asked holds the dispatches whose question was shown, told those
	// whose answer was.
	asked, told map[string]bool
	// then is the last "what happens if nobody answers" shown, per dispatch.
	then map[string]string
	// lastWait is when a line about the waiting question was last written.
	lastWait time.Time
	// status is the current in-place line, empty when none is shown.
	status string
	task   *wire.Task
}

// New is the progress of a task waited for since start, written to w as u
// says, now telling the time.
func New(w io.Writer, u view.UI, start time.Time, now func() time.Time) *Wait {
	return &Wait{w: w, ui: u, start: start, now: now, Heartbeat: DefaultHeartbeat,
		asked: map[string]bool{}, told: map[string]bool{}, then: map[string]string{}}
}

// Update shows t as it is now: the lines its change calls for, and the
// status line.
func (p *Wait) Update(t *wire.Task) {
	p.task = t
	now := p.now()
	r := view.LastRound(t)
	elapsed := "0s"
	if e := now.Sub(p.start).Truncate(time.Second); e > 0 {
		elapsed = view.HumanDuration(e)
	}
	p.tellAnswers(t)
	waiting := t.State == wire.StateNeedsInput && r != nil && r.Question != nil && r.Answer == nil
	then := ""
	if waiting {
		then = roundConsequence(t, r)
	}
	key := string(t.State) + "/" + view.RoundText(r)
	if key != p.last {
		p.last = key
		line := fmt.Sprintf("%s %s · round %s · %s", p.ui.Paint(view.Bold, t.ID), p.ui.State(t.State), view.RoundText(r), elapsed)
		if then != "" {
			line += " · " + then
		}
		p.line(line)
	}
	switch {
	case waiting && !p.asked[r.DispatchID]:
		p.asked[r.DispatchID] = true
		q := r.Question.Question
		if len(r.Question.Options) > 0 {
			q += " (" + strings.Join(r.Question.Options, " / ") + ")"
		}
		if r.Question.Default != nil {
			q += " [default " + *r.Question.Default + "]"
		}
		p.line("  ? " + p.ui.Paint(view.Yellow, q))
		if c := r.Question.Context; c != "" {
			p.line("  context: " + view.Clip(c, 200))
		}
		p.line("  answer with: " + p.ui.Paint(view.Bold, t.Attention.Action))
		p.line("  still waiting: the answer may come from anyone with access, or from the route (" + routeText(t) + ")" + thenSuffix(then))
		p.then[r.DispatchID], p.lastWait = then, now
	case waiting && then != p.then[r.DispatchID]:
		// The route moved on to its next step, or the server said.
		p.line(fmt.Sprintf("  still waiting at route step %d of %s%s", r.Step+1, routeText(t), thenSuffix(then)))
		p.then[r.DispatchID], p.lastWait = then, now
	case waiting && now.Sub(p.lastWait) >= p.Heartbeat:
		p.line(heartbeatLine(t, r, now))
		p.lastWait = now
	}
	if p.ui.TTY && !t.State.Terminal() {
		status := fmt.Sprintf("… %s %s · round %s · %s", t.ID, view.StateLabel(t.State), view.RoundText(r), elapsed)
		if then != "" {
			status += " · " + then
		}
		p.setStatus(status)
	}
}

// tellAnswers writes, once per round, the answer its question got: who
// gave it, or for a default taken because nobody answered, which and why.
// Rounds answered before this --wait began are told only when a default
// was taken.
func (p *Wait) tellAnswers(t *wire.Task) {
	for i := range t.Rounds {
		r := &t.Rounds[i]
		if r.Question == nil || r.Answer == nil || p.told[r.DispatchID] || (!p.asked[r.DispatchID] && !r.Answer.Assumed) {
			continue
		}
		p.told[r.DispatchID] = true
		p.line("  " + answerText(r))
	}
}

// answerText is how round r's question was answered: "round 1 answered:
// `b.conf` by carol via cli", or "nobody answered round 1 by 14:05:00 UTC:
// the default `draft` was taken (human timed out: no answer within 10m0s)".
func answerText(r *wire.Round) string {
	a := r.Answer
	if !a.Assumed {
		return fmt.Sprintf("round %d answered: `%s` by %s via %s", r.N, a.Value, a.By, a.Channel)
	}
	var why []string
	for _, d := range r.Decisions {
		if d.Result == "pending" || d.Result == "answered" {
			continue // waiting, or the default's own entry
		}
		w := d.Step + " " + d.Result
		if d.Detail != "" {
			w += ": " + view.Clip(d.Detail, 120)
		}
		why = append(why, w)
	}
	if len(why) == 0 {
		why = []string{"the route ended"}
	}
	return fmt.Sprintf("nobody answered round %d by %s: the default `%s` was taken (%s)", r.N, clockText(a.At), a.Value, strings.Join(why, "; "))
}

// heartbeatLine says that a question still waits, for how long already,
// and until when: "still waiting for an answer to round 1 (asked 5m 0s
// ago, 5m 0s left): at 14:10:00 UTC the default `draft` is taken".
func heartbeatLine(t *wire.Task, r *wire.Round, now time.Time) string {
	line := fmt.Sprintf("  still waiting for an answer to round %d (asked %s ago", r.N, view.HumanDuration(now.Sub(r.AskedAt).Truncate(time.Second)))
	switch at := consequenceAt(r); {
	case at.IsZero():
	case at.Sub(now) < time.Second:
		line += ", due now"
	default:
		line += ", " + view.HumanDuration(at.Sub(now).Truncate(time.Second)) + " left"
	}
	line += ")"
	if then := roundConsequence(t, r); then != "" {
		line += ": " + then
	} else {
		line += ": the route (" + routeText(t) + ") has no deadline to tell"
	}
	return line
}

func thenSuffix(then string) string {
	if then == "" {
		return ""
	}
	return "; " + then
}

// roundConsequence is what happens to round r's open question if nobody
// answers, and when: the server's IfUnanswered, or, from a server that
// does not fill it in, the same worked out from the route and the step's
// deadline. Empty when neither says.
func roundConsequence(t *wire.Task, r *wire.Round) string {
	if iu := r.IfUnanswered; iu != nil {
		if iu.Text != "" {
			return iu.Text
		}
		return consequenceText(iu.At, iu.Action, iu.Default, iu.Next)
	}
	if r.StepDeadline.IsZero() || r.Question == nil {
		return ""
	}
	steps, err := wire.ParseRoute(routeText(t))
	if err != nil {
		return ""
	}
	switch {
	case r.Step+1 < len(steps):
		return consequenceText(r.StepDeadline, wire.IfUnansweredEscalate, "", steps[r.Step+1].Answerer)
	case r.Question.Default != nil:
		return consequenceText(r.StepDeadline, wire.IfUnansweredDefault, *r.Question.Default, "")
	}
	return consequenceText(r.StepDeadline, wire.IfUnansweredExpire, "", "")
}

// consequenceAt is when round r's open question's consequence comes.
func consequenceAt(r *wire.Round) time.Time {
	if r.IfUnanswered != nil {
		return r.IfUnanswered.At
	}
	return r.StepDeadline
}

// consequenceText words an IfUnanswered: "at 14:05:00 UTC the default
// `draft` is taken", "at 14:05:00 UTC it goes to `slack:#ops`", "at
// 14:05:00 UTC it expires".
func consequenceText(at time.Time, action, def, next string) string {
	switch action {
	case wire.IfUnansweredDefault:
		return fmt.Sprintf("at %s the default `%s` is taken", clockText(at), def)
	case wire.IfUnansweredEscalate:
		return fmt.Sprintf("at %s it goes to `%s`", clockText(at), next)
	}
	return fmt.Sprintf("at %s it expires (no default)", clockText(at))
}

// clockText is a moment as a CI log shows it: the UTC time of day.
func clockText(at time.Time) string { return at.UTC().Format("15:04:05 UTC") }

func routeText(t *wire.Task) string {
	if t.Request.Route == "" {
		return wire.DefaultRoute
	}
	return t.Request.Route
}

// Note writes a line that is not about a change of the task, above the
// status line.
func (p *Wait) Note(msg string) {
	status := p.status
	p.line(p.ui.Paint(view.Dim, msg))
	if status != "" {
		p.setStatus(status)
	}
}

// line writes a lasting line where the status line was; Update draws the
// status line again after its lines.
func (p *Wait) line(s string) {
	p.Clear()
	fmt.Fprintln(p.w, s)
}

func (p *Wait) setStatus(s string) {
	p.status = s
	fmt.Fprint(p.w, "\r\x1b[K"+p.ui.Paint(view.Dim, s))
}

// Clear removes the status line.
func (p *Wait) Clear() {
	if p.status != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.status = ""
	}
}
