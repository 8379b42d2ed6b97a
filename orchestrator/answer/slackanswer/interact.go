package slackanswer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// maxBody bounds an interaction request; Slack's are a few KiB.
const maxBody = 1 << 20

// Handler is the interactivity endpoint (Slack's "Request URL", e.g.
// https://agora.example.com/slack/interactions). It verifies the request's
// signature and timestamp, records the interaction, answers 200 at once
// (Slack gives up after 3 seconds) and acts on it afterwards.
func (b *Bot) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := b.verified(w, r)
		if !ok {
			return
		}
		form, err := parseForm(body)
		if err != nil || form == "" {
			http.Error(w, "want a form with a payload", http.StatusBadRequest)
			return
		}
		key, fresh, err := b.record(r.Context(), []byte(form))
		if err != nil {
			// Not recorded: Slack shows the user an error, so the click is
			// not silently lost.
			b.log.Error("record slack interaction", "error", err)
			http.Error(w, "could not record the interaction", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK) // an empty 200 also closes a submitted modal
		if fresh {
			b.goAct(key)
		}
	})
}

// verified reads a request Slack signed: POST, a bounded body, the v0
// signature of the signing secret over it and a timestamp within 5
// minutes. Anything else is answered (405, 400, 401) and ok is false.
func (b *Bot) verified(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "unreadable or too large body", http.StatusBadRequest)
		return nil, false
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.cfg.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		b.log.Warn("slack request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "error", err)
		http.Error(w, "bad signature or timestamp", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

func parseForm(body []byte) (string, error) {
	req, err := http.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := req.ParseForm(); err != nil {
		return "", err
	}
	return req.PostForm.Get("payload"), nil
}

// record keeps an interaction before anything is done with it; fresh is
// false for a delivery seen before (the same payload), which is not acted
// on again.
func (b *Bot) record(ctx context.Context, payload []byte) (key string, fresh bool, err error) {
	if !json.Valid(payload) {
		return "", false, fmt.Errorf("payload is not JSON")
	}
	key = clickKey(payload)
	raw, err := json.Marshal(click{Payload: payload, At: b.now()})
	if err != nil {
		return "", false, err
	}
	if _, err := b.cfg.KV.Create(ctx, key, raw); errors.Is(err, bus.ErrKeyExists) {
		b.log.Info("duplicate slack interaction ignored", "click", key)
		return key, false, nil
	} else if err != nil {
		return "", false, err
	}
	return key, true, nil
}

// goAct acts on a recorded interaction in the background.
func (b *Bot) goAct(key string) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.act(b.ctx, key); err != nil {
			// The record stays undone: the next start re-drives it.
			b.log.Error("act on slack interaction", "click", key, "error", err)
		}
	}()
}

// act does what a recorded interaction asks, then marks it done.
func (b *Bot) act(ctx context.Context, key string) error {
	var c click
	if ok, err := b.load(ctx, key, &c); err != nil || !ok || c.Done {
		return err
	}
	var result string
	if c.Kind == kindEvent {
		r, err := b.answerReply(ctx, c.Payload)
		if err != nil {
			return err
		}
		result = r
	} else {
		var cb slack.InteractionCallback
		if err := json.Unmarshal(c.Payload, &cb); err != nil {
			return b.finish(ctx, key, c, "undecodable: "+err.Error())
		}
		r, err := b.interaction(ctx, &cb, c.At)
		if err != nil {
			return err
		}
		result = r
	}
	return b.finish(ctx, key, c, result)
}

func (b *Bot) finish(ctx context.Context, key string, c click, result string) error {
	c.Done, c.Result = true, result
	if err := b.save(ctx, key, c); err != nil {
		return fmt.Errorf("mark interaction done: %w", err)
	}
	return nil
}

// interaction handles one interaction and says what came of it.
func (b *Bot) interaction(ctx context.Context, cb *slack.InteractionCallback, at time.Time) (string, error) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if len(cb.ActionCallback.BlockActions) == 0 {
			return "no action", nil
		}
		a := cb.ActionCallback.BlockActions[0]
		switch {
		case strings.HasPrefix(a.ActionID, actionAnswer), a.ActionID == actionChoose:
			// A button's value, or the option chosen in the menu, names the
			// message and the option's index — never its label, which may
			// be cut.
			v := a.Value
			if a.ActionID == actionChoose {
				v = a.SelectedOption.Value
			}
			id, idx, _ := strings.Cut(v, ":")
			i, err := strconv.Atoi(idx)
			if err != nil {
				return "bad answer value " + v, nil
			}
			return b.answer(ctx, id, attempt{user: cb.User, value: func(m *message) (string, bool) {
				if i < 0 || i >= len(m.Options) {
					return "", false
				}
				return m.Options[i], true
			}})
		case a.ActionID == actionOther:
			return b.openForm(ctx, a.Value, cb, at, form)
		case a.ActionID == actionAlways:
			return b.openForm(ctx, a.Value, cb, at, alwaysForm)
		case a.ActionID == actionAck:
			return b.acknowledge(ctx, a.Value, cb.User)
		}
		return "ignored action " + a.ActionID, nil
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == callbackAlways {
			return b.answerAlways(ctx, cb)
		}
		if cb.View.CallbackID != callbackForm {
			return "ignored view " + cb.View.CallbackID, nil
		}
		text := strings.TrimSpace(cb.View.State.Values["answer"]["text"].Value)
		return b.answer(ctx, cb.View.PrivateMetadata, attempt{user: cb.User, what: "answer",
			value: func(*message) (string, bool) { return text, text != "" }})
	}
	return "ignored " + string(cb.Type), nil
}

// answerAlways answers from the "Always answer this…" modal and makes
// the answer a rule (wire.Remember) of the scope and expiry chosen.
func (b *Bot) answerAlways(ctx context.Context, cb *slack.InteractionCallback) (string, error) {
	v := cb.View.State.Values
	rem := &wire.Remember{Scope: v["scope"]["scope"].SelectedOption.Value}
	if rem.Scope != wire.RuleScopeOwner {
		rem.Scope = wire.RuleScopeSubagent
	}
	if d, err := strconv.Atoi(v["expires"]["days"].SelectedOption.Value); err == nil && d > 0 {
		rem.ExpiresInSeconds = int64(d) * 24 * 3600
	}
	choice, text := v["answer"]["choice"].SelectedOption.Value, strings.TrimSpace(v["answer"]["text"].Value)
	return b.answer(ctx, cb.View.PrivateMetadata, attempt{user: cb.User, what: "answer", remember: rem,
		value: func(m *message) (string, bool) {
			if len(m.Options) == 0 {
				return text, text != ""
			}
			i, err := strconv.Atoi(choice)
			if err != nil || i < 0 || i >= len(m.Options) {
				return "", false
			}
			return m.Options[i], true
		}})
}

// Via is recorded on answers given in Slack: the app vouches for the
// Slack user named in By.
const Via = "slack-app"

// by is how a Slack user is recorded as the answering person:
// "slack:U1 (name)", the name as slackUser found it.
func by(u slack.User) string {
	name := u.Name
	if name == "" {
		name = u.Username
	}
	if name == "" {
		return "slack:" + u.ID
	}
	return "slack:" + u.ID + " (" + name + ")"
}

// attempt is one person's try at answering a message: a click, a form or
// a reply in the thread.
type attempt struct {
	user slack.User
	// value reads the answer off the message; false: no answer to it.
	value func(*message) (string, bool)
	// notAnswer is the ephemeral reply when value finds none ("" for the
	// default); what names the attempt in replies ("click" by default);
	// thread is where ephemeral replies go ("" for the message's thread).
	notAnswer, what, thread string
	// remember makes the first answer this attempt gives a rule.
	remember *wire.Remember
}

// sameUser reports whether by (as recorded) is the Slack user id,
// whatever name was recorded beside it.
func sameUser(by, id string) bool {
	return by == "slack:"+id || strings.HasPrefix(by, "slack:"+id+" ")
}

// answer gives the value an attempt chose to every open question of the
// message: the first answer wins; a late or unauthorised one is told why.
func (b *Bot) answer(ctx context.Context, id string, a attempt) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := a.user
	if a.what == "" {
		a.what = "click"
	}
	var m message
	if ok, err := b.load(ctx, msgKey(id), &m); err != nil {
		return "", err
	} else if !ok {
		return "unknown message " + id, nil
	}
	tell := func(text string) { b.ephemeralIn(ctx, &m, a.thread, u.ID, text) }
	if ok, err := m.Target.allowed(u.ID, b.members(ctx)); err != nil {
		return "", fmt.Errorf("check who may answer: %w", err)
	} else if !ok {
		tell(":no_entry: You may not answer this question: only " +
			strings.Join(mentions(m.Target.Allow), ", ") + " may. Nothing was changed.")
		return "refused " + u.ID, nil
	}
	v, ok := a.value(&m)
	if !ok && !m.Done {
		if a.notAnswer == "" {
			a.notAnswer = ":warning: That is not an answer to this question."
		}
		tell(a.notAnswer)
		return "no answer", nil
	}
	var mine, theirs *answered
	me := ""
	for i := range m.Members {
		mb := &m.Members[i]
		if mb.settled() {
			if theirs == nil && mb.Answer != nil {
				theirs = mb.Answer
			}
			continue
		}
		if !ok {
			continue
		}
		if me == "" {
			me = by(b.slackUser(ctx, u))
		}
		// In process, not through the API: the Slack app, whose signature
		// was checked, vouches for the user (Via).
		t, err := b.cfg.Service.Answer(ctx, wire.AnswerRequest{TaskID: mb.TaskID, Round: mb.Round, Answer: v, By: me, Via: Via, Channel: "slack", Remember: a.remember})
		switch {
		case err == nil:
			mb.Answer = answerOf(t, mb.Round)
			mine = mb.Answer
			if a.remember != nil {
				// One rule: it answers the other members' next questions.
				if r := roundOf(t, mb.Round); r != nil && r.Answer.Remembered != "" {
					ttl := wire.DefaultRuleTTL
					if s := a.remember.ExpiresInSeconds; s > 0 {
						ttl = time.Duration(s) * time.Second
					}
					tell(fmt.Sprintf(":pushpin: Remembered as rule `%s`: questions like this are answered *%s* at once until %s. `agora rules rm %s` removes it.",
						r.Answer.Remembered, escape(v), stamp(b.now().Add(ttl)), r.Answer.Remembered))
				}
				a.remember = nil
			}
		case errors.Is(err, wire.ErrAlreadyAnswered), errors.Is(err, wire.ErrNoQuestion):
			b.settle(ctx, mb)
			if mb.Answer != nil && sameUser(mb.Answer.By, u.ID) && mb.Answer.Channel == "slack" && mb.Answer.Value == v {
				mine = mb.Answer // a re-driven attempt that was applied before the restart
			} else if theirs == nil && mb.Answer != nil {
				theirs = mb.Answer
			}
		case errors.Is(err, wire.ErrInvalidAnswer):
			why, _ := clipMrkdwn(escape(err.Error()), textBudget)
			tell(":warning: " + why)
			return "invalid answer", nil
		default:
			return "", fmt.Errorf("answer task %s round %d: %w", mb.TaskID, mb.Round, err)
		}
	}
	b.close(ctx, &m)
	if mine == nil {
		msg := fmt.Sprintf(":hourglass: This question is no longer open. Your %s changed nothing.", a.what)
		if theirs != nil {
			v, _ := clipMrkdwn(escape(theirs.Value), 300)
			msg = fmt.Sprintf(":hourglass: Already answered by %s from %s at %s (answer *%s*). Your %s changed nothing.",
				who(theirs.By), theirs.Channel, stamp(theirs.At), v, a.what)
		}
		tell(msg)
		return "late " + u.ID, nil
	}
	b.log.Info("answered from slack", "message", m.ID, "by", me, "answer", mine.Value, "how", a.what)
	return "answered by " + me, nil
}

// acknowledge records that u is on the question of message id ("On it"):
// the reminders stop and the message says who. The first one counts; the
// step's timeout and the hand-over to the next step are unchanged.
func (b *Bot) acknowledge(ctx context.Context, id string, u slack.User) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var m message
	if ok, err := b.load(ctx, msgKey(id), &m); err != nil {
		return "", err
	} else if !ok {
		return "unknown message " + id, nil
	}
	if ok, err := m.Target.allowed(u.ID, b.members(ctx)); err != nil {
		return "", fmt.Errorf("check who may answer: %w", err)
	} else if !ok {
		b.ephemeral(ctx, &m, u.ID, ":no_entry: You may not take this question: only "+
			strings.Join(mentions(m.Target.Allow), ", ")+" may. Nothing was changed.")
		return "refused " + u.ID, nil
	}
	switch {
	case m.Done:
		b.ephemeral(ctx, &m, u.ID, ":hourglass: This question is no longer open.")
		return "late " + u.ID, nil
	case m.Acked != nil && sameUser(m.Acked.By, u.ID):
		return "acknowledged again by " + u.ID, nil // a re-driven click
	case m.Acked != nil:
		b.ephemeral(ctx, &m, u.ID, fmt.Sprintf(":eyes: %s is on it already (since %s).", who(m.Acked.By), stamp(m.Acked.At)))
		return "acknowledged before " + u.ID, nil
	}
	m.Acked = &acked{By: by(b.slackUser(ctx, u)), At: b.now()}
	if err := b.save(ctx, msgKey(m.ID), &m); err != nil {
		return "", fmt.Errorf("keep the acknowledgement of message %s: %w", m.ID, err)
	}
	b.update(ctx, &m)
	b.log.Info("question acknowledged in slack", "message", m.ID, "by", m.Acked.By)
	return "acknowledged by " + m.Acked.By, nil
}

// close saves the message and rewrites it; once every member is settled
// it is done and loses its buttons.
func (b *Bot) close(ctx context.Context, m *message) {
	done := true
	for i := range m.Members {
		done = done && m.Members[i].settled()
	}
	m.Done = done
	if err := b.save(ctx, msgKey(m.ID), m); err != nil {
		b.log.Warn("keep message", "message", m.ID, "error", err)
	}
	if done {
		b.unindex(m)
	}
	b.update(ctx, m)
}

// settle reads how mb's round ended from its task.
func (b *Bot) settle(ctx context.Context, mb *member) {
	t, err := b.cfg.Service.Get(ctx, mb.TaskID)
	if errors.Is(err, wire.ErrNotFound) {
		mb.Closed = "the task was removed"
		return
	}
	if err != nil {
		b.log.Warn("read task", "task_id", mb.TaskID, "error", err)
		return
	}
	settleFrom(mb, t)
}

// settleFrom marks mb answered or closed from its task, if it is.
func settleFrom(mb *member, t *wire.Task) {
	if a := answerOf(t, mb.Round); a != nil {
		mb.Answer = a
		return
	}
	if len(t.Rounds) == 0 {
		return
	}
	// Changes arrive in order but late: a task seen running at this round
	// is a revision from before the question, not a closed question.
	cur := t.Rounds[len(t.Rounds)-1]
	if cur.N > mb.Round || t.State.Terminal() {
		why := "the task is " + string(t.State)
		if t.Outcome != nil && t.Outcome.Detail != "" {
			why += " (" + t.Outcome.Detail + ")"
		}
		mb.Closed = why
	}
}

// roundOf is round n of t, if it has one.
func roundOf(t *wire.Task, n int) *wire.Round {
	if t == nil {
		return nil
	}
	for i := range t.Rounds {
		if t.Rounds[i].N == n && t.Rounds[i].Answer != nil {
			return &t.Rounds[i]
		}
	}
	return nil
}

func answerOf(t *wire.Task, round int) *answered {
	if t == nil {
		return nil
	}
	for _, r := range t.Rounds {
		if r.N == round && r.Answer != nil {
			return &answered{Value: r.Answer.Value, By: r.Answer.By, Channel: r.Answer.Channel, At: r.Answer.At}
		}
	}
	return nil
}

func mentions(ids []string) []string {
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, "S") {
			out = append(out, "<!subteam^"+id+">")
		} else {
			out = append(out, "<@"+id+">")
		}
	}
	return out
}

// ephemeral tells one user something only they see, next to the message.
func (b *Bot) ephemeral(ctx context.Context, m *message, user, text string) {
	b.ephemeralIn(ctx, m, "", user, text)
}

// ephemeralIn is ephemeral in thread ("" for the message's own).
func (b *Bot) ephemeralIn(ctx context.Context, m *message, thread, user, text string) {
	if thread == "" {
		thread = m.ThreadTS
	}
	err := b.call(ctx, "chat.postEphemeral", func() error {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
		if thread != "" {
			opts = append(opts, slack.MsgOptionTS(thread))
		}
		_, err := b.api.PostEphemeralContext(ctx, m.ChannelID, user, opts...)
		return err
	})
	if err != nil {
		b.log.Warn("post ephemeral reply", "user", user, "error", err)
	}
}

// members looks up a user group's members, cached for a minute.
func (b *Bot) members(ctx context.Context) func(string) ([]string, error) {
	return func(group string) ([]string, error) {
		if g, ok := b.groups[group]; ok && b.now().Sub(g.at) < time.Minute {
			return g.members, nil
		}
		var m []string
		err := b.call(ctx, "usergroups.users.list", func() (err error) {
			m, err = b.api.GetUserGroupMembersContext(ctx, group)
			return err
		})
		if err != nil {
			return nil, err
		}
		b.groups[group] = groupMembers{at: b.now(), members: m}
		return m, nil
	}
}

// openForm opens the "Other…" modal. Slack's trigger expires 3 seconds
// after the click, so a click re-driven after a restart is told to click
// again.
func (b *Bot) openForm(ctx context.Context, id string, cb *slack.InteractionCallback, at time.Time, view func(*message) slack.ModalViewRequest) (string, error) {
	b.mu.Lock()
	var m message
	ok, err := b.load(ctx, msgKey(id), &m)
	allowed := false
	if ok && err == nil {
		allowed, err = m.Target.allowed(cb.User.ID, b.members(ctx))
	}
	b.mu.Unlock()
	if err != nil {
		return "", err
	}
	if !ok {
		return "unknown message " + id, nil
	}
	if !allowed || m.Done {
		// answer tells why, with nothing to answer.
		return b.answer(ctx, id, attempt{user: cb.User, value: func(*message) (string, bool) { return "", false }})
	}
	if b.now().Sub(at) > 3*time.Second {
		b.ephemeral(ctx, &m, cb.User.ID, ":warning: The form could not be opened in time; click the button again.")
		return "form expired", nil
	}
	err = b.call(ctx, "views.open", func() error {
		_, err := b.api.OpenViewContext(ctx, cb.TriggerID, view(&m))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("open the answer form: %w", err)
	}
	return "form opened", nil
}

// socketMode takes interactions and Events API events (thread replies)
// over a Socket Mode connection: each is recorded, acknowledged, then
// acted on, as over HTTP.
func (b *Bot) socketMode() {
	defer b.wg.Done()
	client := socketmode.New(b.api)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		// RunContext reconnects by itself; it returns when ctx ends or
		// a connection cannot be opened at all.
		err := client.RunContext(b.ctx)
		if b.ctx.Err() == nil {
			b.log.Error("slack socket mode stopped", "error", err)
		}
	}()
	for {
		select {
		case <-b.ctx.Done():
			return
		case evt, ok := <-client.Events:
			if !ok {
				return
			}
			if evt.Type == socketmode.EventTypeConnectionError || evt.Type == socketmode.EventTypeInvalidAuth {
				b.log.Warn("slack socket mode connection", "event", evt.Type, "detail", fmt.Sprint(evt.Data))
			}
			if evt.Request == nil {
				continue
			}
			var (
				key   string
				fresh bool
				err   error
			)
			switch evt.Type {
			case socketmode.EventTypeInteractive:
				key, fresh, err = b.record(b.ctx, evt.Request.Payload)
			case socketmode.EventTypeEventsAPI:
				var ev outerEvent
				if schemas.Decode("Slack event", evt.Request.Payload, &ev) == nil && ev.Type == "event_callback" {
					key, fresh, err = b.recordEvent(b.ctx, evt.Request.Payload, ev)
				}
			default:
				continue
			}
			if err != nil {
				b.log.Error("record slack interaction", "error", err)
				continue // unacknowledged: Slack delivers it again
			}
			client.Ack(*evt.Request)
			if fresh {
				b.goAct(key)
			}
		}
	}
}
