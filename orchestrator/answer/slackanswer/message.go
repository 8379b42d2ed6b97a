package slackanswer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/agoradev/agora/wire"
)

// Action ids of the message's buttons and the modal.
const (
	actionAnswer = "agora_answer_" // + option index; value "<message id>:<index>"
	actionChoose = "agora_choose"  // the options' menu; each option's value "<message id>:<index>"
	actionOther  = "agora_other"   // value: message id
	actionAck    = "agora_ack"     // "On it": value: message id
	callbackForm = "agora_other"   // the modal's callback id; private_metadata: message id
	// actionAlways is "Always answer this…": value message id; it opens
	// the modal of callbackAlways (private_metadata: message id), whose
	// submission answers and makes the answer a rule.
	actionAlways   = "agora_always"
	callbackAlways = "agora_always"
	blockAnswers   = "answers"
)

// fallback is the message's plain text (notifications, screen readers).
func (b *Bot) fallback(m *message) string {
	return clip(fmt.Sprintf("Question from %s: %s", m.Members[0].TaskID, m.Question), fallbackBudget)
}

// mrkdwn is a mrkdwn text object; s is cut readably when it would break
// Slack's limit (the callers keep within it: this is the last guard).
func mrkdwn(s string) *slack.TextBlockObject {
	s, _ = clipMrkdwn(s, textBudget)
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// plain is a plain_text object of at most w.
func plain(s string, w int) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, clip(s, w), false, false)
}

func section(s string) *slack.SectionBlock { return slack.NewSectionBlock(mrkdwn(s), nil, nil) }

// escape keeps Slack from reading &, < and > as markup.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// layout is how a question fits in a Slack message: what the message
// shows and whether the whole of it is also posted in the thread.
type layout struct {
	question string // the question as shown, cut when long
	context  string
	// list is the numbered list of the options, in sections, when the
	// buttons or the menu cannot show every option whole.
	list []string
	// select: the options are a menu; typed: too many for a menu (more
	// than Slack's 100), answered by a reply in the thread or elsewhere.
	menu, typed bool
	// whole: something is cut or left out here, and the thread has it all.
	whole bool
}

func (b *Bot) layout(m *message) layout {
	var l layout
	var cut bool
	l.question, cut = clipMrkdwn(escape(m.Question), textBudget-len(":question: **"))
	l.whole = l.whole || cut
	if m.Context != "" {
		l.context, cut = clipMrkdwn(escape(m.Context), textBudget)
		l.whole = l.whole || cut
	}
	n := len(m.Options)
	l.menu = n > maxButtons && n <= limitSelect
	l.typed = n > limitSelect
	labelsCut := false
	for _, o := range m.Options {
		labelsCut = labelsCut || width(o) > limitButtonText-len(" (default)")-len("100. ")
	}
	if n > maxButtons || labelsCut {
		var lines []string
		for i, o := range m.Options {
			line, cut := clipMrkdwn(escape(o), textBudget-16)
			l.whole = l.whole || cut
			line = fmt.Sprintf("%d. %s", i+1, line)
			if m.Default != nil && *m.Default == o {
				line += " _(default)_"
			}
			lines = append(lines, line)
		}
		l.list = pack("*Options*\n", lines, textBudget)
		if len(l.list) > maxListBlocks {
			l.list = l.list[:maxListBlocks]
			l.list[maxListBlocks-1] += "\n… more options in the thread"
			l.whole = true
		}
	}
	return l
}

// pack joins lines into texts of at most w each, the first starting with
// head.
func pack(head string, lines []string, w int) []string {
	var out []string
	cur := head
	for _, line := range lines {
		if cur != "" && cur != head && width(cur)+1+width(line) > w {
			out = append(out, strings.TrimSuffix(cur, "\n"))
			cur = ""
		}
		if cur != "" && cur != head {
			cur += "\n"
		}
		cur += line
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// blocks renders the message: the question, its context, who waits, the
// options and what happens if nobody answers while it is open, or who
// answered once it is not — within Slack's limits (fit.go), long content
// cut readably with the whole of it in the thread.
func (b *Bot) blocks(m *message) []slack.Block {
	l := b.layout(m)
	bl := []slack.Block{section(":question: *" + l.question + "*")}
	if l.context != "" {
		bl = append(bl, slack.NewContextBlock("", mrkdwn(l.context)))
	}
	if l.whole {
		where := "The whole question is in the thread"
		if u := b.taskURL(m.Members[0].TaskID); u != "" {
			where += " and on <" + u + "|the task's page>"
		}
		bl = append(bl, slack.NewContextBlock("", mrkdwn(":scissors: Too long for one Slack message. "+where+".")))
	}
	if !m.Done {
		for _, s := range l.list {
			bl = append(bl, section(s))
		}
	}
	bl = append(bl, slack.NewContextBlock("", mrkdwn(b.waiting(m))))
	if !m.Done {
		// An actions block needs an element: a question of more options
		// than a menu holds, once someone is on it, has none.
		if els := b.buttons(m, l); len(els) > 0 {
			bl = append(bl, slack.NewActionBlock(blockAnswers, els...))
		}
		var notes []string
		if l.typed {
			notes = append(notes, fmt.Sprintf("%d options are more than a Slack menu holds: reply in the thread with an option's number or its text, or answer on the task's page or with `agora answer`.", len(m.Options)))
		}
		if len(m.Target.Allow) > 0 {
			notes = append(notes, "Only "+strings.Join(mentions(m.Target.Allow), ", ")+" may answer.")
		}
		if c := consequence(m); c != "" {
			notes = append(notes, c)
		}
		if !m.Deadline.IsZero() && m.RemindEvery > 0 && m.RemindEvery < m.Deadline.Sub(m.Posted) && m.Acked == nil {
			notes = append(notes, "Reminders in the thread every "+short(m.RemindEvery)+" until answered or someone is on it.")
		}
		if m.Acked != nil {
			notes = append(notes, fmt.Sprintf(":eyes: %s is on it (since %s).", who(m.Acked.By), stamp(m.Acked.At)))
		}
		if len(notes) > 0 {
			bl = append(bl, slack.NewContextBlock("", mrkdwn(strings.Join(notes, " "))))
		}
	}
	var outcome []string
	more := 0
	for _, mb := range m.Members {
		if !mb.settled() {
			continue
		}
		if len(outcome) == maxListed {
			more++
			continue
		}
		prefix := ""
		if len(m.Members) > 1 {
			prefix = "`" + mb.TaskID + "`: "
		}
		switch {
		case mb.Answer != nil:
			v, _ := clipMrkdwn(escape(mb.Answer.Value), 200)
			outcome = append(outcome, fmt.Sprintf("%s:white_check_mark: *%s* — answered by %s from %s at %s", prefix,
				v, who(mb.Answer.By), mb.Answer.Channel, stamp(mb.Answer.At)))
		case mb.Closed != "":
			why, _ := clipMrkdwn(escape(mb.Closed), 300)
			outcome = append(outcome, fmt.Sprintf("%s:heavy_minus_sign: no longer waiting: %s", prefix, why))
		}
	}
	if more > 0 {
		outcome = append(outcome, fmt.Sprintf("… and %d more tasks: see each task's page.", more))
	}
	for _, s := range pack("", outcome, textBudget) {
		if len(bl) < limitBlocks {
			bl = append(bl, section(s))
		}
	}
	return bl
}

// consequence says what happens to the question if nobody answers, and
// when: the round's IfUnanswered, in the words every surface shows
// ("at 14:05 UTC the default `draft` is taken"); without one (a record
// from before), the step's own deadline.
func consequence(m *message) string {
	if iu := m.IfUnanswered; iu != nil {
		text := ""
		// The words every surface shows, with the time as Slack renders
		// it for each reader (their zone, "today"/"tomorrow"): Text reads
		// "at 14:05 UTC it goes to `human`".
		if rest, ok := afterClock(iu.Text); ok && !iu.At.IsZero() {
			text, _ = clipMrkdwn(escape(rest), 500)
			text = "at " + stamp(iu.At) + " " + text
		} else {
			text, _ = clipMrkdwn(escape(iu.Text), 500)
		}
		if text == "" && !iu.At.IsZero() {
			switch iu.Action {
			case wire.IfUnansweredDefault:
				d, _ := clipMrkdwn(escape(iu.Default), 200)
				text = fmt.Sprintf("at %s the default `%s` is taken", stamp(iu.At), d)
			case wire.IfUnansweredEscalate:
				text = fmt.Sprintf("at %s it goes to `%s`", stamp(iu.At), escape(iu.Next))
			default:
				text = fmt.Sprintf("at %s it expires", stamp(iu.At))
			}
		}
		if text != "" {
			return ":hourglass_flowing_sand: If nobody answers: " + text + "."
		}
	}
	if m.Deadline.IsZero() {
		return ""
	}
	next := "the route ends"
	if m.Next != "" {
		next = "it goes to `" + m.Next + "`"
	}
	return fmt.Sprintf("Waits here until %s, then %s.", stamp(m.Deadline), next)
}

// afterClock is what IfUnanswered.Text says after its time: "it goes to
// `human`" of "at 14:05 UTC it goes to `human`".
func afterClock(text string) (string, bool) {
	if !strings.HasPrefix(text, "at ") {
		return "", false
	}
	i := strings.Index(text, " it ")
	if j := strings.Index(text, " the "); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return "", false
	}
	return text[i+1:], true
}

// whole is the question in full, with its context and its options, as
// mrkdwn sections for the thread: at most maxThreadParts messages of
// partBlocks sections; what is left beyond is named, with where to read
// it.
func (b *Bot) whole(m *message, taskID string) [][]string {
	full := "*The whole question:*\n" + escape(m.Question)
	if m.Context != "" {
		full += "\n\n*Context:*\n" + escape(m.Context)
	}
	if len(m.Options) > 0 {
		full += "\n\n*Options:*"
		for i, o := range m.Options {
			full += fmt.Sprintf("\n%d. %s", i+1, escape(o))
		}
	}
	parts, rest := splitMrkdwn(full, textBudget, maxThreadParts*partBlocks)
	if rest > 0 {
		where := "with `agora questions`"
		if u := b.taskURL(taskID); u != "" {
			where = "on <" + u + "|the task's page> or " + where
		}
		last := fmt.Sprintf("… %d more characters: read them %s.", rest, where)
		if len(parts) == maxThreadParts*partBlocks {
			parts[len(parts)-1] = last
		} else {
			parts = append(parts, last)
		}
	}
	var msgs [][]string
	for len(parts) > 0 {
		k := min(partBlocks, len(parts))
		msgs = append(msgs, parts[:k])
		parts = parts[k:]
	}
	return msgs
}

// who renders an answering person: a Slack user recorded as
// "slack:U1 (Alice)" as "Alice (<@U1>)" — the name looked up with
// users.info when they answered, and the mention — or "<@U1>" without a
// name.
func who(by string) string {
	if rest, ok := strings.CutPrefix(by, "slack:"); ok {
		id, name, _ := strings.Cut(rest, " ")
		name = strings.TrimSuffix(strings.TrimPrefix(name, "("), ")")
		if name == "" {
			return "<@" + id + ">"
		}
		return "*" + escape(name) + "* (<@" + id + ">)"
	}
	return escape(by)
}

// short renders a duration without its zero tail: 30m, 1h, 1h30m, 1.5s.
func short(d time.Duration) string {
	if d > time.Minute {
		d = d.Round(time.Second) // a quarter of a step's timeout is not round
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func stamp(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format(time.RFC3339))
}

// waiting says who waits for the answer, with a link to each task's page.
func (b *Bot) waiting(m *message) string {
	var tasks []string
	for i, mb := range m.Members {
		if i == maxListed {
			tasks = append(tasks, fmt.Sprintf("and %d more", len(m.Members)-maxListed))
			break
		}
		name := "`" + mb.TaskID + "`"
		if u := b.taskURL(mb.TaskID); u != "" {
			name = "<" + u + "|" + mb.TaskID + ">"
		}
		tasks = append(tasks, fmt.Sprintf("%s (sub-agent %s, round %d)", name, escape(mb.Subagent), mb.Round))
	}
	s := "Waiting: task " + strings.Join(tasks, ", ")
	if len(m.Members) > 1 {
		s = fmt.Sprintf("Waiting: %d tasks — one answer answers them all: %s", len(m.Members), strings.Join(tasks, ", "))
	}
	if m.Batch != "" {
		batch, _ := clipMrkdwn(escape(m.Batch), 200)
		s += " · batch `" + batch + "`"
	}
	return s
}

// buttons are the message's answers: a button per option (at most
// maxButtons), or a menu of them (at most Slack's 100), or none when there
// are more; "Other…" without options; and "On it".
func (b *Bot) buttons(m *message, l layout) []slack.BlockElement {
	var els []slack.BlockElement
	isDefault := func(o string) bool { return m.Default != nil && *m.Default == o }
	switch {
	case l.typed:
	case l.menu:
		var opts []*slack.OptionBlockObject
		for i, o := range m.Options {
			label := fmt.Sprintf("%d. %s", i+1, o)
			if isDefault(o) {
				label = clip(label, limitOptionText-len(" (default)")) + " (default)"
			}
			opts = append(opts, slack.NewOptionBlockObject(m.ID+":"+strconv.Itoa(i), plain(label, limitOptionText), nil))
		}
		els = append(els, slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain(fmt.Sprintf("Choose one of %d answers", len(m.Options)), limitPlaceholder), actionChoose, opts...))
	default:
		for i, o := range m.Options {
			label := o
			if l.list != nil { // numbered, to find it whole in the list above
				label = fmt.Sprintf("%d. %s", i+1, o)
			}
			btn := slack.NewButtonBlockElement(actionAnswer+strconv.Itoa(i), m.ID+":"+strconv.Itoa(i), plain(label, limitButtonText))
			if isDefault(o) {
				btn.Text = plain(clip(label, limitButtonText-len(" (default)"))+" (default)", limitButtonText)
				btn.Style = slack.StylePrimary
			}
			els = append(els, btn)
		}
	}
	// Free text only fits a question without options: with options an
	// answer must be one of them.
	if len(m.Options) == 0 {
		els = append(els, slack.NewButtonBlockElement(actionOther, m.ID, plain("Other…", limitButtonText)))
	}
	// "Always answer this…" answers and remembers the answer as a rule;
	// its modal chooses the answer from a menu, which holds 100 options.
	if !l.typed {
		els = append(els, slack.NewButtonBlockElement(actionAlways, m.ID, plain("Always answer this…", limitButtonText)))
	}
	// Acknowledging stops the reminders; once someone has, the button
	// goes.
	if m.Acked == nil {
		els = append(els, slack.NewButtonBlockElement(actionAck, m.ID, plain("On it", limitButtonText)))
	}
	return els
}

// form is the "Other…" modal.
func form(m *message) slack.ModalViewRequest {
	input := slack.NewPlainTextInputBlockElement(plain("Your answer", limitPlaceholder), "text")
	input.Multiline = true
	q, _ := clipMrkdwn(escape(m.Question), textBudget-2)
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain("Answer the question", 24),
		Submit:          plain("Answer", 24),
		Close:           plain("Cancel", 24),
		CallbackID:      callbackForm,
		PrivateMetadata: m.ID,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			section("*" + q + "*"),
			slack.NewInputBlock("answer", plain("Answer", 2000), nil, input),
		}},
	}
}

// Rule expiries the "Always answer this…" modal offers, in days; the
// first is the default (wire.DefaultRuleTTL).
var alwaysDays = []int{30, 1, 7, 90, 180}

// alwaysForm is the "Always answer this…" modal: the answer (a menu of
// the options, or a text field), which questions the rule answers, and
// for how long. Its submission answers the question and makes the rule.
func alwaysForm(m *message) slack.ModalViewRequest {
	q, _ := clipMrkdwn(escape(m.Question), textBudget-2)
	var answerEl slack.BlockElement
	if len(m.Options) > 0 {
		var opts []*slack.OptionBlockObject
		for i, o := range m.Options {
			opts = append(opts, slack.NewOptionBlockObject(strconv.Itoa(i), plain(fmt.Sprintf("%d. %s", i+1, o), limitOptionText), nil))
		}
		answerEl = slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose the answer", limitPlaceholder), "choice", opts...)
	} else {
		answerEl = slack.NewPlainTextInputBlockElement(plain("Your answer", limitPlaceholder), "text")
	}
	subagent := m.Members[0].Subagent
	scopes := []*slack.OptionBlockObject{
		slack.NewOptionBlockObject(wire.RuleScopeSubagent, plain("Questions like this from "+subagent, limitOptionText), nil),
		slack.NewOptionBlockObject(wire.RuleScopeOwner, plain("Questions like this from any sub-agent of the same owner", limitOptionText), nil),
	}
	scope := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Which questions", limitPlaceholder), "scope", scopes...)
	scope.InitialOption = scopes[0]
	var days []*slack.OptionBlockObject
	for _, d := range alwaysDays {
		label := fmt.Sprintf("%d days", d)
		if d == 1 {
			label = "1 day"
		}
		days = append(days, slack.NewOptionBlockObject(strconv.Itoa(d), plain(label, limitOptionText), nil))
	}
	expires := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("For how long", limitPlaceholder), "days", days...)
	expires.InitialOption = days[0]
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain("Always answer this", 24),
		Submit:          plain("Answer always", 24),
		Close:           plain("Cancel", 24),
		CallbackID:      callbackAlways,
		PrivateMetadata: m.ID,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			section("*" + q + "*"),
			slack.NewContextBlock("", mrkdwn("Answers this question now, and the same question (same text and options) on later tasks at once, as a rule named in their timelines. `agora rules` lists and removes rules.")),
			slack.NewInputBlock("answer", plain("Answer", 2000), nil, answerEl),
			slack.NewInputBlock("scope", plain("Answer it for", 2000), nil, scope),
			slack.NewInputBlock("expires", plain("Until", 2000), nil, expires),
		}},
	}
}
