// Package slackfake is a Slack Web API on loopback for tests: it answers
// the methods the Slack answerer calls (auth.test, chat.postMessage,
// chat.update, chat.postEphemeral, views.open, users.info,
// usergroups.users.list), refuses a message or a modal that breaks one of
// Slack's documented Block Kit limits as Slack does (limits.go), records
// every call with its time, can answer 429 with a Retry-After of any
// length on any method or any Slack error (Refuse), and builds the
// signed interaction payloads and Events API events Slack would POST to
// the interactivity and events endpoints (or send over Socket Mode). Slack itself cannot be reached from the
// machines agora is tested on; slack-go's slacktest lacks chat.update,
// views.open and interactions. It imports nothing from this module.
package slackfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Call is one request the fake received.
type Call struct {
	Method string
	// Params are the form fields, or the JSON body's top-level fields
	// rendered as strings (objects as JSON).
	Params url.Values
	// TS is the ts a chat.postMessage was answered with.
	TS string
	// At is when the call came in; Status the HTTP status it got (429
	// when rate limited, else 200).
	At     time.Time
	Status int
	// Error is the error Slack's answer carried ("" when ok), Errors and
	// Messages its "errors" and response_metadata "messages" (for
	// invalid_blocks, one per broken limit, with its JSON pointer).
	Error            string
	Errors, Messages []string
	// Truncated: the top-level text was longer than 40,000 characters and
	// was cut, as Slack cuts it (warning message_truncated).
	Truncated bool
}

// OK reports whether the call went through: not rate limited, not refused.
func (c Call) OK() bool { return c.Status == http.StatusOK && c.Error == "" }

// Button is one button of a message's blocks.
type Button struct {
	ActionID, Value, Text, Style string
}

// Buttons returns the buttons of the call's "blocks" (or "view") field.
func (c Call) Buttons() []Button {
	var out []Button
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "button" {
				b := Button{}
				b.ActionID, _ = v["action_id"].(string)
				b.Value, _ = v["value"].(string)
				b.Style, _ = v["style"].(string)
				if t, ok := v["text"].(map[string]any); ok {
					b.Text, _ = t["text"].(string)
				}
				out = append(out, b)
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var blocks any
	if err := json.Unmarshal([]byte(c.Params.Get("blocks")), &blocks); err == nil {
		walk(blocks)
	}
	return out
}

// Select is one static_select menu of a message's blocks.
type Select struct {
	ActionID, Placeholder string
	Options               []Option
}

// Option is one option of a select menu.
type Option struct{ Text, Value string }

// Selects returns the static_select menus of the call's "blocks".
func (c Call) Selects() []Select {
	var out []Select
	walkBlocks(c.Params.Get("blocks"), func(v map[string]any) bool {
		if v["type"] != "static_select" {
			return false
		}
		s := Select{}
		s.ActionID, _ = v["action_id"].(string)
		s.Placeholder = textOf(v["placeholder"])
		opts, _ := v["options"].([]any)
		for _, o := range opts {
			om, _ := o.(map[string]any)
			val, _ := om["value"].(string)
			s.Options = append(s.Options, Option{Text: textOf(om["text"]), Value: val})
		}
		out = append(out, s)
		return true
	})
	return out
}

// Texts returns the text of every section, context and header of the
// call's "blocks", in order: what a person reads in the message (buttons
// and menus aside).
func (c Call) Texts() []string {
	var out []string
	var bl []any
	if json.Unmarshal([]byte(c.Params.Get("blocks")), &bl) != nil {
		return nil
	}
	for _, b := range bl {
		bm, _ := b.(map[string]any)
		switch bm["type"] {
		case "section", "header":
			if t := textOf(bm["text"]); t != "" {
				out = append(out, t)
			}
			fields, _ := bm["fields"].([]any)
			for _, f := range fields {
				out = append(out, textOf(f))
			}
		case "context":
			els, _ := bm["elements"].([]any)
			for _, e := range els {
				if t := textOf(e); t != "" {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

func textOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// walkBlocks calls fn on every object of the blocks JSON; fn returns true
// to not descend into the object.
func walkBlocks(blocks string, fn func(map[string]any) bool) {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if fn(v) {
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var root any
	if json.Unmarshal([]byte(blocks), &root) == nil {
		walk(root)
	}
}

// Server is the fake. Use New; URL is what slack.OptionAPIURL takes.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	calls     []Call
	seq       int
	limited   map[string]limit
	refusals  map[string][]*refusal
	users     map[string]User
	groups    map[string][]string
	sock      *websocket.Conn // the Socket Mode connection, once dialled
	acks      []string        // envelope ids acknowledged over it
	envelopes int
}

// New starts a fake on loopback, closed at the end of the test.
func New(t testing.TB) *Server {
	s := &Server{limited: map[string]limit{}, refusals: map[string][]*refusal{}, users: map[string]User{}, groups: map[string][]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { // before Close: it does not wait for hijacked connections
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sock != nil {
			_ = s.sock.Close()
		}
	})
	return s
}

// URL is the API root, for slack.OptionAPIURL.
func (s *Server) URL() string { return s.srv.URL + "/api/" }

// User is what users.info tells of a user.
type User struct {
	// ID is the user id (U…); Name the handle; RealName and DisplayName
	// the profile's names.
	ID, Name, RealName, DisplayName string
}

// AddUser makes users.info know id as name (handle and real name).
func (s *Server) AddUser(id, name string) {
	s.SetUser(User{ID: id, Name: name, RealName: name})
}

// SetUser makes users.info answer u for u.ID.
func (s *Server) SetUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// AddGroup makes usergroups.users.list list members for the group id.
func (s *Server) AddGroup(id string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = members
}

type limit struct {
	n          int
	retryAfter int
}

// RateLimit makes the next n calls of method answer 429 Retry-After: 1.
func (s *Server) RateLimit(method string, n int) { s.RateLimitFor(method, n, 1) }

// RateLimitFor makes the next n calls of method answer 429 with
// Retry-After: retryAfter (seconds, as Slack sends it).
func (s *Server) RateLimitFor(method string, n, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited[method] = limit{n: n, retryAfter: retryAfter}
}

// Refuse makes the next n calls of method answer Slack's error code, with
// errs as its "errors" and, each prefixed "[ERROR] ", as its
// response_metadata "messages" — the shape of Slack's own refusals:
//
//	{"ok":false,"error":"invalid_blocks","errors":["…"],"response_metadata":{"messages":["[ERROR] …"]}}
func (s *Server) Refuse(method string, n int, code string, errs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.refusals[method] = append(s.refusals[method], refused(code, errs))
	}
}

// Refused returns the calls Slack's rules (or Refuse) refused.
func (s *Server) Refused() []Call {
	var out []Call
	for _, c := range s.Calls("") {
		if c.Error != "" {
			out = append(out, c)
		}
	}
	return out
}

// Calls returns the recorded calls of method ("" for all), oldest first.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits up to 20s until method was called at least n times and
// returns those calls.
func (s *Server) WaitCalls(t testing.TB, method string, n int) []Call {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c := s.Calls(method); len(c) >= n {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("slack fake: %s called %d times, want %d; calls: %v", method, len(s.Calls(method)), n, s.methods())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Server) methods() []string {
	var m []string
	for _, c := range s.Calls("") {
		m = append(m, c.Method)
	}
	return m
}

// ChannelID is the id the fake gives a channel name or user: "#ops" is
// COPS, "U1" (a direct message) is DU1.
func ChannelID(name string) string {
	switch {
	case strings.HasPrefix(name, "#"):
		return "C" + strings.ToUpper(strings.TrimPrefix(name, "#"))
	case strings.HasPrefix(name, "@"):
		return "D" + strings.TrimPrefix(name, "@")
	case strings.HasPrefix(name, "U"), strings.HasPrefix(name, "W"):
		return "D" + name
	}
	return name
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/socket" {
		s.socket(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params := url.Values{}
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		for k, v := range m {
			if s, ok := v.(string); ok {
				params.Set(k, s)
				continue
			}
			b, _ := json.Marshal(v)
			params.Set(k, string(b))
		}
	} else {
		params, _ = url.ParseQuery(string(body))
		for k, v := range r.URL.Query() {
			params[k] = v
		}
	}
	if b := params.Get("blocks"); b != "" {
		params.Set("blocks", readable(b))
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params, At: time.Now(), Status: http.StatusOK})
	if l := s.limited[method]; l.n > 0 {
		s.limited[method] = limit{n: l.n - 1, retryAfter: l.retryAfter}
		s.calls[len(s.calls)-1].Status = http.StatusTooManyRequests
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(l.retryAfter))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	call := &s.calls[len(s.calls)-1]
	var refusal *refusal
	if q := s.refusals[method]; len(q) > 0 {
		refusal, s.refusals[method] = q[0], q[1:]
	} else {
		switch method {
		case "chat.postMessage", "chat.update", "chat.postEphemeral":
			refusal = checkMessage(method, params)
		case "views.open":
			refusal = checkView(params.Get("view"))
		}
	}
	if refusal != nil {
		call.Error, call.Errors, call.Messages = refusal.code, refusal.errors, refusal.messages
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(refusal.body())
		return
	}
	var warn map[string]any
	if t := params.Get("text"); chars(t) > MaxMessageText && strings.HasPrefix(method, "chat.") {
		call.Truncated = true
		params.Set("text", string([]rune(t)[:MaxMessageText]))
		warn = map[string]any{"warnings": []string{truncatedWarning}, "messages": []string{truncatedMessage}}
	}
	s.seq++
	ts := fmt.Sprintf("1700000000.%06d", s.seq)
	users, groups := s.users, s.groups
	var resp map[string]any
	switch method {
	case "apps.connections.open":
		resp = map[string]any{"url": "ws://" + r.Host + "/socket"}
	case "auth.test":
		resp = map[string]any{"user_id": "UBOT", "user": "agora", "team_id": "T1", "team": "test", "bot_id": "B1", "url": "https://test.slack.invalid/"}
	case "chat.postMessage":
		s.calls[len(s.calls)-1].TS = ts
		resp = map[string]any{"channel": ChannelID(params.Get("channel")), "ts": ts, "message": map[string]any{"ts": ts, "text": params.Get("text")}}
	case "chat.update":
		resp = map[string]any{"channel": params.Get("channel"), "ts": params.Get("ts"), "text": params.Get("text")}
	case "chat.postEphemeral":
		resp = map[string]any{"message_ts": ts}
	case "views.open":
		resp = map[string]any{"view": map[string]any{"id": "V" + strconv.Itoa(s.seq)}}
	case "users.info":
		id := params.Get("user")
		u, ok := users[id]
		if !ok {
			resp = map[string]any{"ok": false, "error": "user_not_found"}
			break
		}
		resp = map[string]any{"user": map[string]any{"id": id, "name": u.Name, "real_name": u.RealName,
			"profile": map[string]any{"real_name": u.RealName, "display_name": u.DisplayName}}}
	case "usergroups.users.list":
		m, ok := groups[params.Get("usergroup")]
		if !ok {
			resp = map[string]any{"ok": false, "error": "no_such_subteam"}
			break
		}
		resp = map[string]any{"users": m}
	default:
		resp = map[string]any{"ok": false, "error": "unknown_method"}
	}
	s.mu.Unlock()
	if _, ok := resp["ok"]; !ok {
		resp["ok"] = true
	}
	if warn != nil {
		resp["response_metadata"] = warn
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// socket is the Socket Mode WebSocket: it says hello, then records the
// envelope ids the client acknowledges.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }} // slack-go sends Slack's origin
	c, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.sock != nil {
		_ = s.sock.Close() // a reconnection replaces the connection
	}
	s.sock = c
	err = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`))
	s.mu.Unlock()
	if err != nil {
		return
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(msg, &ack) == nil && ack.EnvelopeID != "" {
			s.mu.Lock()
			s.acks = append(s.acks, ack.EnvelopeID)
			s.mu.Unlock()
		}
	}
}

// SocketSend sends payload as an "interactive" envelope over the Socket
// Mode connection (waiting up to 20s for the client to connect) and
// returns its envelope id.
func (s *Server) SocketSend(t testing.TB, payload any) string {
	t.Helper()
	return s.SocketSendType(t, "interactive", payload)
}

// SocketSendType sends payload in an envelope of type typ ("interactive",
// "events_api") over the Socket Mode connection, as SocketSend.
func (s *Server) SocketSendType(t testing.TB, typ string, payload any) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		if s.sock != nil {
			s.envelopes++
			id := fmt.Sprintf("env-%d", s.envelopes)
			err := s.sock.WriteJSON(map[string]any{"envelope_id": id, "type": typ, "payload": payload, "accepts_response_payload": false})
			s.mu.Unlock()
			if err != nil {
				t.Fatalf("slack fake: send over the socket: %v", err)
			}
			return id
		}
		s.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("slack fake: no Socket Mode connection after 20s; calls: %v", s.methods())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Acked reports whether the envelope id was acknowledged.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.acks {
		if a == id {
			return true
		}
	}
	return false
}

// readable re-encodes JSON without escaping <, > and &, so tests can look
// for Slack markup such as "<@U1>".
func readable(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return s
	}
	return strings.TrimSpace(b.String())
}

// Sign returns Slack's v0 signature of body sent at ts.
func Sign(secret string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:%s", ts.Unix(), body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// Interaction is a request as Slack POSTs it to the interactivity
// endpoint: the payload form-encoded, signed with secret at ts.
func Interaction(target, secret string, ts time.Time, payload any) *http.Request {
	p, err := json.Marshal(payload)
	if err != nil {
		panic(err) // a test's payload is a literal
	}
	body := []byte(url.Values{"payload": {string(p)}}.Encode())
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set("X-Slack-Signature", Sign(secret, ts, body))
	return r
}

// Click is the block_actions payload of user pressing button in the
// message at channel/ts.
func Click(userID, userName, channel, ts string, b Button) map[string]any {
	return map[string]any{
		"type": "block_actions", "trigger_id": "trig-" + ts + "-" + b.ActionID + "-" + userID,
		"user":      map[string]any{"id": userID, "username": userName, "name": userName},
		"channel":   map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel},
		"message":   map[string]any{"ts": ts},
		"actions": []any{map[string]any{"type": "button", "block_id": "answers", "action_id": b.ActionID, "value": b.Value,
			"action_ts": ts}},
	}
}

// Choose is the block_actions payload of user choosing the option of
// value in the static_select menu sel of the message at channel/ts.
func Choose(userID, userName, channel, ts string, sel Select, value string) map[string]any {
	text := ""
	for _, o := range sel.Options {
		if o.Value == value {
			text = o.Text
		}
	}
	return map[string]any{
		"type": "block_actions", "trigger_id": "trig-" + ts + "-" + sel.ActionID + "-" + userID,
		"user":      map[string]any{"id": userID, "username": userName, "name": userName},
		"channel":   map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel},
		"message":   map[string]any{"ts": ts},
		"actions": []any{map[string]any{"type": "static_select", "block_id": "answers", "action_id": sel.ActionID,
			"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": text}, "value": value},
			"action_ts":       ts}},
	}
}

// Submission is the view_submission payload of user sending text in the
// "Other…" modal whose private_metadata is meta.
func Submission(userID, userName, meta, text string) map[string]any {
	return map[string]any{
		"type": "view_submission", "trigger_id": "trig-submit-" + userID,
		"user": map[string]any{"id": userID, "username": userName, "name": userName},
		"view": map[string]any{"id": "V1", "callback_id": "agora_other", "private_metadata": meta,
			"state": map[string]any{"values": map[string]any{"answer": map[string]any{"text": map[string]any{"type": "plain_text_input", "value": text}}}}},
	}
}

// Selected is the state of a static_select in a submitted view, as
// Slack sends it in view.state.values: the option chosen (its value and
// text).
func Selected(value, text string) map[string]any {
	return map[string]any{"type": "static_select",
		"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": text}, "value": value}}
}

// ViewSubmission is the view_submission payload of user submitting the
// modal callbackID (private_metadata meta) with values as Slack sends
// view.state.values: block_id → action_id → the element's state (a
// plain_text_input's {"type":"plain_text_input","value":…}, Selected).
func ViewSubmission(userID, userName, callbackID, meta string, values map[string]map[string]any) map[string]any {
	return map[string]any{
		"type": "view_submission", "trigger_id": "trig-submit-" + userID,
		"user": map[string]any{"id": userID, "username": userName, "name": userName},
		"view": map[string]any{"id": "V1", "callback_id": callbackID, "private_metadata": meta,
			"state": map[string]any{"values": values}},
	}
}

// Event is a request as Slack POSTs an Events API payload to the events
// endpoint: the JSON body signed with secret at ts.
func Event(target, secret string, ts time.Time, payload any) *http.Request {
	body, err := json.Marshal(payload)
	if err != nil {
		panic(err) // a test's payload is a literal
	}
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set("X-Slack-Signature", Sign(secret, ts, body))
	return r
}

// URLVerification is the challenge Slack sends when the events endpoint's
// address is entered in the app's settings.
func URLVerification(challenge string) map[string]any {
	return map[string]any{"token": "legacy", "type": "url_verification", "challenge": challenge}
}

// ThreadReply is the event_callback of a message event: userID writing
// text in the thread threadTS of channel. eventID identifies the event
// (Slack retries a delivery with the same one).
func ThreadReply(eventID, userID, channel, threadTS, text string) map[string]any {
	return map[string]any{
		"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
		"event_id": eventID, "event_time": 1700000100,
		"event": map[string]any{"type": "message", "user": userID, "text": text, "channel": channel, "channel_type": "channel",
			"ts": "1700000100." + eventID, "thread_ts": threadTS, "event_ts": "1700000100." + eventID},
	}
}
