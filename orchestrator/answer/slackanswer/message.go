package slackanswer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Action ids of the message's buttons and the modal.
const (
	actionAnswer = "agora_answer_" // + option index; value "<message id>:<index>"
	actionOther  = "agora_other"   // value: message id
	actionAck    = "agora_ack"     // "On it": value: message id
	callbackForm = "agora_other"   // the modal's callback id; private_metadata: message id
	blockAnswers = "answers"
	// Slack allows 25 elements in an actions block; one is "On it" (and
	// "Other…" comes only without options).
	maxButtons = 24
	// Slack's limit on a section's text, kept under.
	maxText = 2900
)

// fallback is the message's plain text (notifications, screen readers).
func (b *Bot) fallback(m *message) string {
	return fmt.Sprintf("Question from %s: %s", m.Members[0].TaskID, m.Question)
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, cut(s), false, false)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, cut(s), false, false)
}

func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	return s[:maxText] + "…"
}

// escape keeps Slack from reading &, < and > as markup.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// blocks renders the message: the question, its context, who waits, and
// the buttons while it is open or who answered once it is not.
func (b *Bot) blocks(m *message) []slack.Block {
	bl := []slack.Block{slack.NewSectionBlock(mrkdwn(":question: *"+escape(m.Question)+"*"), nil, nil)}
	if m.Context != "" {
		bl = append(bl, slack.NewContextBlock("", mrkdwn(escape(m.Context))))
	}
	bl = append(bl, slack.NewContextBlock("", mrkdwn(b.waiting(m))))
	if !m.Done {
		bl = append(bl, slack.NewActionBlock(blockAnswers, b.buttons(m)...))
		var notes []string
		if len(m.Target.Allow) > 0 {
			var who []string
			for _, id := range m.Target.Allow {
				if strings.HasPrefix(id, "S") {
					who = append(who, "<!subteam^"+id+">")
				} else {
					who = append(who, "<@"+id+">")
				}
			}
			notes = append(notes, "Only "+strings.Join(who, ", ")+" may answer.")
		}
		if !m.Deadline.IsZero() {
			next := "the route ends"
			if m.Next != "" {
				next = "it goes to `" + m.Next + "`"
			}
			notes = append(notes, fmt.Sprintf("Waits here until %s, then %s.", stamp(m.Deadline), next))
			if m.RemindEvery > 0 && m.RemindEvery < m.Deadline.Sub(m.Posted) && m.Acked == nil {
				notes = append(notes, "Reminders in the thread every "+short(m.RemindEvery)+" until answered or someone is on it.")
			}
		}
		if m.Acked != nil {
			notes = append(notes, fmt.Sprintf(":eyes: %s is on it (since %s).", who(m.Acked.By), stamp(m.Acked.At)))
		}
		if len(notes) > 0 {
			bl = append(bl, slack.NewContextBlock("", mrkdwn(strings.Join(notes, " "))))
		}
	}
	var outcome []string
	for _, mb := range m.Members {
		prefix := ""
		if len(m.Members) > 1 {
			prefix = "`" + mb.TaskID + "`: "
		}
		switch {
		case mb.Answer != nil:
			outcome = append(outcome, fmt.Sprintf("%s:white_check_mark: *%s* — answered by %s from %s at %s", prefix,
				escape(mb.Answer.Value), who(mb.Answer.By), mb.Answer.Channel, stamp(mb.Answer.At)))
		case mb.Closed != "":
			outcome = append(outcome, fmt.Sprintf("%s:heavy_minus_sign: no longer waiting: %s", prefix, escape(mb.Closed)))
		}
	}
	if len(outcome) > 0 {
		bl = append(bl, slack.NewSectionBlock(mrkdwn(strings.Join(outcome, "\n")), nil, nil))
	}
	return bl
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
	for _, mb := range m.Members {
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
		s += " · batch `" + escape(m.Batch) + "`"
	}
	return s
}

func (b *Bot) buttons(m *message) []slack.BlockElement {
	var els []slack.BlockElement
	for i, o := range m.Options {
		if i == maxButtons {
			break
		}
		label := o
		btn := slack.NewButtonBlockElement(actionAnswer+strconv.Itoa(i), m.ID+":"+strconv.Itoa(i), plain(label))
		if m.Default != nil && *m.Default == o {
			btn = slack.NewButtonBlockElement(actionAnswer+strconv.Itoa(i), m.ID+":"+strconv.Itoa(i), plain(label+" (default)"))
			btn.Style = slack.StylePrimary
		}
		els = append(els, btn)
	}
	// Free text only fits a question without options: with options an
	// answer must be one of them.
	if len(m.Options) == 0 {
		els = append(els, slack.NewButtonBlockElement(actionOther, m.ID, plain("Other…")))
	}
	// Acknowledging stops the reminders; once someone has, the button
	// goes.
	if m.Acked == nil {
		els = append(els, slack.NewButtonBlockElement(actionAck, m.ID, plain("On it")))
	}
	return els
}

// form is the "Other…" modal.
func form(m *message) slack.ModalViewRequest {
	input := slack.NewPlainTextInputBlockElement(plain("Your answer"), "text")
	input.Multiline = true
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain("Answer the question"),
		Submit:          plain("Answer"),
		Close:           plain("Cancel"),
		CallbackID:      callbackForm,
		PrivateMetadata: m.ID,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(mrkdwn("*"+escape(m.Question)+"*"), nil, nil),
			slack.NewInputBlock("answer", plain("Answer"), nil, input),
		}},
	}
}
