package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func repeat(s string, n int) string { return strings.Repeat(s, n) }

func section(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}})
	return string(b)
}

func button(id, text, value string) string {
	b, _ := json.Marshal(map[string]any{"type": "button", "action_id": id, "value": value, "text": map[string]any{"type": "plain_text", "text": text}})
	return string(b)
}

func actions(els ...string) string {
	return `{"type":"actions","elements":[` + strings.Join(els, ",") + `]}`
}

func selectMenu(n, textLen, valueLen int) string {
	var opts []string
	for i := range n {
		t, _ := json.Marshal(fmt.Sprintf("%d", i) + repeat("x", textLen))
		v, _ := json.Marshal(fmt.Sprintf("%03d", i) + repeat("v", valueLen))
		opts = append(opts, `{"text":{"type":"plain_text","text":`+string(t)+`},"value":`+string(v)+`}`)
	}
	return `{"type":"static_select","action_id":"pick","placeholder":{"type":"plain_text","text":"Choose"},"options":[` + strings.Join(opts, ",") + `]}`
}

func context1(n int) string {
	var els []string
	for i := range n {
		els = append(els, fmt.Sprintf(`{"type":"mrkdwn","text":"c%d"}`, i))
	}
	return `{"type":"context","elements":[` + strings.Join(els, ",") + `]}`
}

func many(n int, f func(i int) string) string {
	var out []string
	for i := range n {
		out = append(out, f(i))
	}
	return strings.Join(out, ",")
}

// post sends chat.postMessage with raw blocks and returns Slack's answer.
func post(t *testing.T, s *Server, blocks string) map[string]any {
	t.Helper()
	resp, err := http.PostForm(s.URL()+"chat.postMessage", url.Values{"channel": {"#ops"}, "text": {"fallback"}, "blocks": {"[" + blocks + "]"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLimitsRefused: each of Slack's documented Block Kit limits, broken
// by one, is refused with invalid_blocks and an error naming the limit and
// the JSON pointer; the same at the limit passes.
func TestLimitsRefused(t *testing.T) {
	t.Parallel()
	s := New(t)
	tests := []struct {
		name      string
		ok, bad   string
		wantError string // in the refusal's errors
	}{
		{"blocks per message", many(50, func(int) string { return `{"type":"divider"}` }), many(51, func(int) string { return `{"type":"divider"}` }),
			"must be less than 51 items [json-pointer:/blocks]"},
		{"section text", section(repeat("é", 3000)), section(repeat("é", 3001)),
			"must be less than 3001 characters [json-pointer:/blocks/0/text/text]"},
		{"section text not empty", section("x"), section(""),
			"must be more than 0 characters [json-pointer:/blocks/0/text/text]"},
		{"section needs text or fields", section("x"), `{"type":"section"}`,
			"must provide either text or fields [json-pointer:/blocks/0]"},
		{"section fields count", `{"type":"section","fields":[` + many(10, func(int) string { return `{"type":"mrkdwn","text":"f"}` }) + `]}`,
			`{"type":"section","fields":[` + many(11, func(int) string { return `{"type":"mrkdwn","text":"f"}` }) + `]}`,
			"must be less than 11 items [json-pointer:/blocks/0/fields]"},
		{"section field text", `{"type":"section","fields":[{"type":"mrkdwn","text":"` + repeat("f", 2000) + `"}]}`,
			`{"type":"section","fields":[{"type":"mrkdwn","text":"` + repeat("f", 2001) + `"}]}`,
			"must be less than 2001 characters [json-pointer:/blocks/0/fields/0/text]"},
		{"header text", `{"type":"header","text":{"type":"plain_text","text":"` + repeat("h", 150) + `"}}`,
			`{"type":"header","text":{"type":"plain_text","text":"` + repeat("h", 151) + `"}}`,
			"must be less than 151 characters [json-pointer:/blocks/0/text/text]"},
		{"header is plain_text", `{"type":"header","text":{"type":"plain_text","text":"h"}}`, `{"type":"header","text":{"type":"mrkdwn","text":"h"}}`,
			"must be plain_text [json-pointer:/blocks/0/text/type]"},
		{"context elements", context1(10), context1(11),
			"must be less than 11 items [json-pointer:/blocks/0/elements]"},
		{"context text", `{"type":"context","elements":[{"type":"mrkdwn","text":"` + repeat("c", 3000) + `"}]}`,
			`{"type":"context","elements":[{"type":"mrkdwn","text":"` + repeat("c", 3001) + `"}]}`,
			"must be less than 3001 characters [json-pointer:/blocks/0/elements/0/text]"},
		{"button text", actions(button("a", repeat("ü", 75), "v")), actions(button("a", repeat("ü", 76), "v")),
			"must be less than 76 characters [json-pointer:/blocks/0/elements/0/text/text]"},
		{"button text not empty", actions(button("a", "b", "v")), actions(button("a", "", "v")),
			"must be more than 0 characters [json-pointer:/blocks/0/elements/0/text/text]"},
		{"button value", actions(button("a", "b", repeat("v", 2000))), actions(button("a", "b", repeat("v", 2001))),
			"must be less than 2001 characters [json-pointer:/blocks/0/elements/0/value]"},
		{"action_id length", actions(button(repeat("i", 255), "b", "v")), actions(button(repeat("i", 256), "b", "v")),
			"must be less than 256 characters [json-pointer:/blocks/0/elements/0/action_id]"},
		{"action_id unique", actions(button("a", "b", "v"), button("b", "b", "v")), actions(button("a", "b", "v"), button("a", "b", "v")),
			`action_id "a" is used twice in the message; it must be unique [json-pointer:/blocks/0/elements/1/action_id]`},
		{"action_id unique across blocks", actions(button("a", "b", "v")) + "," + actions(button("b", "b", "v")),
			actions(button("a", "b", "v")) + "," + actions(button("a", "b", "v")),
			`action_id "a" is used twice in the message; it must be unique [json-pointer:/blocks/1/elements/0/action_id]`},
		{"block_id length", `{"type":"divider","block_id":"` + repeat("b", 255) + `"}`, `{"type":"divider","block_id":"` + repeat("b", 256) + `"}`,
			"must be less than 256 characters [json-pointer:/blocks/0/block_id]"},
		{"block_id unique", `{"type":"divider","block_id":"x"},{"type":"divider","block_id":"y"}`, `{"type":"divider","block_id":"x"},{"type":"divider","block_id":"x"}`,
			`block_id "x" is used twice in the message; it must be unique [json-pointer:/blocks/1/block_id]`},
		{"actions elements", actions(buttons(25)...), actions(buttons(26)...),
			"must be less than 26 items [json-pointer:/blocks/0/elements]"},
		{"static_select options", actions(selectMenu(100, 1, 1)), actions(selectMenu(101, 1, 1)),
			"must be less than 101 items [json-pointer:/blocks/0/elements/0/options]"},
		{"option text", actions(selectMenu(1, 74, 1)), actions(selectMenu(1, 75, 1)),
			"must be less than 76 characters [json-pointer:/blocks/0/elements/0/options/0/text/text]"},
		{"option value", actions(selectMenu(1, 1, 147)), actions(selectMenu(1, 1, 148)),
			"must be less than 151 characters [json-pointer:/blocks/0/elements/0/options/0/value]"},
		{"text object type", section("x"), `{"type":"section","text":{"type":"markdown","text":"x"}}`,
			"must be one of plain_text, mrkdwn [json-pointer:/blocks/0/text/type]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(t, s, tt.ok); got["ok"] != true {
				t.Errorf("at the limit: chat.postMessage = %v, want ok", got)
			}
			got := post(t, s, tt.bad)
			if got["ok"] != false || got["error"] != "invalid_blocks" {
				t.Fatalf("past the limit: chat.postMessage = %v, want invalid_blocks", got)
			}
			errs, _ := got["errors"].([]any)
			found := false
			for _, e := range errs {
				found = found || e == tt.wantError
			}
			if !found {
				t.Errorf("errors = %q, want %q among them", errs, tt.wantError)
			}
			meta, _ := got["response_metadata"].(map[string]any)
			msgs, _ := meta["messages"].([]any)
			if len(msgs) != len(errs) || len(msgs) == 0 || msgs[0] != "[ERROR] "+errs[0].(string) {
				t.Errorf("response_metadata.messages = %q, want each error prefixed [ERROR]", msgs)
			}
		})
	}
}

// buttons are n buttons with distinct action_ids.
func buttons(n int) []string {
	var out []string
	for i := range n {
		out = append(out, button(fmt.Sprint("b", i), "b", "v"))
	}
	return out
}

// TestRefusalThroughSlackGo: the real client sees a refusal as Slack's
// error, with its errors and response_metadata messages; chat.update is
// held to the same limits; a message without text or blocks is no_text;
// a top-level text over 40,000 characters is cut, not refused; Refuse
// forces any error.
func TestRefusalThroughSlackGo(t *testing.T) {
	t.Parallel()
	s := New(t)
	api := slack.New("xoxb-test", slack.OptionAPIURL(s.URL()))
	ctx := context.Background()
	long := slack.NewActionBlock("answers", slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, repeat("x", 97), false, false)))
	_, _, err := api.PostMessageContext(ctx, "#ops", slack.MsgOptionText("q", false), slack.MsgOptionBlocks(long))
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_blocks" {
		t.Fatalf("a 97-character button: err = %v, want invalid_blocks", err)
	}
	if want := "[ERROR] must be less than 76 characters [json-pointer:/blocks/0/elements/0/text/text]"; len(se.ResponseMetadata.Messages) != 1 || se.ResponseMetadata.Messages[0] != want {
		t.Errorf("response_metadata.messages = %q, want [%q]", se.ResponseMetadata.Messages, want)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "COPS", "1.2", slack.MsgOptionBlocks(long)); err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("chat.update with a 97-character button: err = %v, want invalid_blocks", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "#ops"); err == nil || err.Error() != "no_text" {
		t.Errorf("chat.postMessage without text or blocks: err = %v, want no_text", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "#ops", slack.MsgOptionText(repeat("t", 40001), false)); err != nil {
		t.Errorf("chat.postMessage of 40,001 characters: %v, want it posted, cut", err)
	}
	if c := s.Calls("chat.postMessage"); !c[len(c)-1].Truncated || chars(c[len(c)-1].Params.Get("text")) != 40000 {
		t.Errorf("the 40,001-character text was not cut to 40,000")
	}
	view := slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject(slack.PlainTextType, repeat("t", 25), false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "q", false, false), nil, nil)}}}
	if _, err := api.OpenViewContext(ctx, "trig", view); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("views.open with a 25-character title: err = %v, want invalid_arguments", err)
	}
	s.Refuse("chat.postMessage", 1, "channel_not_found")
	if _, _, err := api.PostMessageContext(ctx, "#ops", slack.MsgOptionText("q", false)); err == nil || err.Error() != "channel_not_found" {
		t.Errorf("after Refuse: err = %v, want channel_not_found", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "#ops", slack.MsgOptionText("q", false)); err != nil {
		t.Errorf("the call after the refused one: %v", err)
	}
	if got := len(s.Refused()); got != 5 {
		t.Errorf("Refused() lists %d calls, want 5", got)
	}
}

// TestModalInputElements: views.open takes select menus and text inputs
// in input blocks, as Slack does, holding a menu there to its limits and
// its initial_option to one of its options; other element types are
// refused, since the fake cannot vouch for them.
func TestModalInputElements(t *testing.T) {
	t.Parallel()
	s := New(t)
	opt := `{"text":{"type":"plain_text","text":"30 days"},"value":"30"}`
	menu := func(initial string) string {
		return `{"type":"static_select","action_id":"days","options":[` + opt + `,{"text":{"type":"plain_text","text":"1 day"},"value":"1"}]` + initial + `}`
	}
	view := func(el string) string {
		return `{"type":"modal","title":{"type":"plain_text","text":"t"},"callback_id":"c","blocks":[{"type":"input","block_id":"b","label":{"type":"plain_text","text":"Until"},"element":` + el + `}]}`
	}
	tests := []struct {
		name, view, wantMessage string
	}{
		{"a menu with its first option initial", view(menu(`,"initial_option":` + opt)), ""},
		{"a text input", view(`{"type":"plain_text_input","action_id":"text"}`), ""},
		{"an initial option that is none of the options", view(menu(`,"initial_option":{"text":{"type":"plain_text","text":"7 days"},"value":"7"}`)),
			"[ERROR] must exactly match one of the provided options [json-pointer:/view/blocks/0/element/initial_option]"},
		{"a menu over the limit", view(strings.Replace(selectMenu(101, 1, 1), `"pick"`, `"days"`, 1)),
			"[ERROR] must be less than 101 items [json-pointer:/view/blocks/0/element/options]"},
		{"an element the fake does not know", view(`{"type":"radio_buttons","action_id":"r","options":[` + opt + `]}`),
			"[ERROR] unsupported element type radio_buttons (the fake knows plain_text_input, static_select in an input block) [json-pointer:/view/blocks/0/element/type]"},
	}
	for _, tt := range tests {
		resp, err := http.PostForm(s.URL()+"views.open", url.Values{"trigger_id": {"t1"}, "view": {tt.view}})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tt.wantMessage == "" {
			if out["ok"] != true {
				t.Errorf("%s: views.open = %v, want ok", tt.name, out)
			}
			continue
		}
		meta, _ := out["response_metadata"].(map[string]any)
		msgs, _ := meta["messages"].([]any)
		if out["ok"] != false || out["error"] != "invalid_arguments" || len(msgs) == 0 || msgs[0] != tt.wantMessage {
			t.Errorf("%s: views.open = %v, want invalid_arguments with %q", tt.name, out, tt.wantMessage)
		}
	}
}
