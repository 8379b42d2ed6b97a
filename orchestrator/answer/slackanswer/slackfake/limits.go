package slackfake

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Slack's documented limits on what a message (or a modal) may hold. The
// fake refuses a call that breaks one as Slack does: chat.postMessage,
// chat.update and chat.postEphemeral answer
//
//	{"ok":false,"error":"invalid_blocks","errors":["must be less than 76 characters [json-pointer:/blocks/3/elements/0/text/text]"],
//	 "response_metadata":{"messages":["[ERROR] must be less than 76 characters [json-pointer:/blocks/3/elements/0/text/text]"]}}
//
// (the shape of Slack's own refusals, e.g. of a section's text over 3000
// characters: "must be less than 3001 characters [json-pointer:/blocks/0/text/text]"),
// and views.open answers "invalid_arguments" with the same messages.
// Lengths are counted in characters (Unicode code points), as the
// documentation words them. Sources, each read for these numbers:
//
//   - Blocks: "up to 50 blocks in each message, and 100 blocks in modals"
//     https://docs.slack.dev/reference/block-kit/blocks (api.slack.com/reference/block-kit/blocks)
//   - Section block: text 1–3000 characters; fields at most 10 items, each
//     at most 2000 characters; text or fields required; block_id at most
//     255 characters, unique for each message
//     https://docs.slack.dev/reference/block-kit/blocks/section-block
//   - Header block: plain_text, at most 150 characters
//     https://docs.slack.dev/reference/block-kit/blocks/header-block
//   - Context block: at most 10 elements
//     https://docs.slack.dev/reference/block-kit/blocks/context-block
//   - Actions block: at most 25 elements
//     https://docs.slack.dev/reference/block-kit/blocks/actions-block
//   - Button element: text plain_text only, at most 75 characters; value
//     at most 2000; url at most 3000; action_id at most 255, unique
//     https://docs.slack.dev/reference/block-kit/block-elements/button-element
//   - Static select: at most 100 options; placeholder plain_text, at most
//     150 characters; action_id at most 255; initial_option "a single
//     option that exactly matches one of the options"
//     https://docs.slack.dev/reference/block-kit/block-elements/select-menu-element
//   - Option object: text at most 75 characters (plain_text in a select),
//     value at most 150
//     https://docs.slack.dev/reference/block-kit/composition-objects/option-object
//   - Text object: type plain_text or mrkdwn; text "minimum length is 1
//     and maximum length is 3000 characters"
//     https://docs.slack.dev/reference/block-kit/composition-objects/text-object
//   - Input block: label plain_text at most 2000; element one of the
//     input elements (the fake knows plain_text_input and static_select)
//     https://docs.slack.dev/reference/block-kit/blocks/input-block
//   - Modal view: title, submit and close plain_text of at most 24
//     characters; at most 100 blocks; private_metadata at most 3000;
//     callback_id at most 255
//     https://docs.slack.dev/reference/views/modal-views
//   - A message's top-level text: longer than 40,000 characters is
//     truncated, not refused, with the warning message_truncated
//     https://api.slack.com/changelog/2018-04-truncating-really-long-messages
//
// action_ids are held unique within the whole message (Slack's button
// documentation asks it within the containing block; the stricter rule
// costs agora nothing), and block_ids unique within the message.
const (
	MaxMessageBlocks  = 50
	MaxViewBlocks     = 100
	MaxText           = 3000
	MaxSectionFields  = 10
	MaxFieldText      = 2000
	MaxHeaderText     = 150
	MaxContextItems   = 10
	MaxActionsItems   = 25
	MaxButtonText     = 75
	MaxButtonValue    = 2000
	MaxURL            = 3000
	MaxActionID       = 255
	MaxBlockID        = 255
	MaxSelectOptions  = 100
	MaxOptionText     = 75
	MaxOptionValue    = 150
	MaxPlaceholder    = 150
	MaxViewTitle      = 24
	MaxViewButton     = 24
	MaxPrivateMeta    = 3000
	MaxCallbackID     = 255
	MaxInputLabel     = 2000
	MaxMessageText    = 40000
	truncatedWarning  = "message_truncated"
	truncatedMessage  = "[WARN] Your message was truncated but still posted. The `text` field accepts up to 40,000 characters."
	errInvalidBlocks  = "invalid_blocks"
	errInvalidArgs    = "invalid_arguments"
	errBlocksFormat   = "invalid_blocks_format"
	errNoText         = "no_text"
	errorMessagePrefx = "[ERROR] "
)

// checker collects what breaks the limits, each as Slack words it: a
// sentence and the JSON pointer of the offending value.
type checker struct {
	errs      []string
	actionIDs map[string]bool
	blockIDs  map[string]bool
}

func newChecker() *checker {
	return &checker{actionIDs: map[string]bool{}, blockIDs: map[string]bool{}}
}

func (c *checker) fail(ptr, format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...)+" [json-pointer:"+ptr+"]")
}

func chars(s string) int { return utf8.RuneCountInString(s) }

// str checks a string field: required or not, at most max characters.
func (c *checker) str(obj map[string]any, key, ptr string, required bool, max int) (string, bool) {
	v, ok := obj[key]
	if !ok || v == nil {
		if required {
			c.fail(ptr+"/"+key, "must provide a string")
		}
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.fail(ptr+"/"+key, "must be a string")
		return "", false
	}
	if required && s == "" {
		c.fail(ptr+"/"+key, "must be more than 0 characters")
	}
	if n := chars(s); n > max {
		c.fail(ptr+"/"+key, "must be less than %d characters", max+1)
	}
	return s, true
}

// text checks a text object: its type (plainOnly: plain_text), and a
// text of 1 to max characters.
func (c *checker) text(v any, ptr string, plainOnly bool, max int) {
	obj, ok := v.(map[string]any)
	if !ok {
		c.fail(ptr, "must provide an object")
		return
	}
	switch obj["type"] {
	case "plain_text":
	case "mrkdwn":
		if plainOnly {
			c.fail(ptr+"/type", "must be plain_text")
		}
	default:
		c.fail(ptr+"/type", "must be one of plain_text, mrkdwn")
	}
	c.str(obj, "text", ptr, true, max)
}

func (c *checker) id(obj map[string]any, key, ptr string, max int, seen map[string]bool) {
	s, ok := c.str(obj, key, ptr, false, max)
	if !ok {
		return
	}
	if seen[s] {
		c.fail(ptr+"/"+key, "%s %q is used twice in the message; it must be unique", key, s)
	}
	seen[s] = true
}

func list(v any) ([]any, bool) {
	l, ok := v.([]any)
	return l, ok
}

// blocks checks a message's (or a view's) blocks, at most max of them.
func (c *checker) blocks(v any, ptr string, max int) {
	bl, ok := list(v)
	if !ok {
		c.fail(ptr, "must provide an array")
		return
	}
	if len(bl) > max {
		c.fail(ptr, "must be less than %d items", max+1)
	}
	for i, b := range bl {
		c.block(b, fmt.Sprintf("%s/%d", ptr, i))
	}
}

func (c *checker) block(v any, ptr string) {
	b, ok := v.(map[string]any)
	if !ok {
		c.fail(ptr, "must provide an object")
		return
	}
	c.id(b, "block_id", ptr, MaxBlockID, c.blockIDs)
	switch b["type"] {
	case "section":
		_, hasText := b["text"]
		fields, hasFields := list(b["fields"])
		if !hasText && !hasFields {
			c.fail(ptr, "must provide either text or fields")
		}
		if hasText {
			c.text(b["text"], ptr+"/text", false, MaxText)
		}
		if hasFields {
			if len(fields) > MaxSectionFields {
				c.fail(ptr+"/fields", "must be less than %d items", MaxSectionFields+1)
			}
			for i, f := range fields {
				c.text(f, fmt.Sprintf("%s/fields/%d", ptr, i), false, MaxFieldText)
			}
		}
		if a, ok := b["accessory"]; ok {
			c.element(a, ptr+"/accessory")
		}
	case "header":
		c.text(b["text"], ptr+"/text", true, MaxHeaderText)
	case "context":
		els, ok := list(b["elements"])
		if !ok || len(els) == 0 {
			c.fail(ptr+"/elements", "must provide a non-empty array")
			return
		}
		if len(els) > MaxContextItems {
			c.fail(ptr+"/elements", "must be less than %d items", MaxContextItems+1)
		}
		for i, e := range els {
			p := fmt.Sprintf("%s/elements/%d", ptr, i)
			if m, ok := e.(map[string]any); ok && m["type"] == "image" {
				c.str(m, "image_url", p, true, MaxURL)
				c.str(m, "alt_text", p, true, 2000)
				continue
			}
			c.text(e, p, false, MaxText)
		}
	case "actions":
		els, ok := list(b["elements"])
		if !ok || len(els) == 0 {
			c.fail(ptr+"/elements", "must provide a non-empty array")
			return
		}
		if len(els) > MaxActionsItems {
			c.fail(ptr+"/elements", "must be less than %d items", MaxActionsItems+1)
		}
		for i, e := range els {
			c.element(e, fmt.Sprintf("%s/elements/%d", ptr, i))
		}
	case "divider":
	case "input":
		c.text(b["label"], ptr+"/label", true, MaxInputLabel)
		e, ok := b["element"].(map[string]any)
		if !ok {
			c.fail(ptr+"/element", "must provide an object")
			return
		}
		switch e["type"] {
		case "static_select":
			c.element(e, ptr+"/element")
		case "plain_text_input":
			c.id(e, "action_id", ptr+"/element", MaxActionID, c.actionIDs)
			if p, ok := e["placeholder"]; ok {
				c.text(p, ptr+"/element/placeholder", true, MaxPlaceholder)
			}
		default:
			c.fail(ptr+"/element/type", "unsupported element type %v (the fake knows plain_text_input, static_select in an input block)", e["type"])
		}
	default:
		c.fail(ptr+"/type", "unsupported type %v (the fake knows section, header, context, actions, divider, input)", b["type"])
	}
}

// element checks an interactive element: a button or a static select.
func (c *checker) element(v any, ptr string) {
	e, ok := v.(map[string]any)
	if !ok {
		c.fail(ptr, "must provide an object")
		return
	}
	c.id(e, "action_id", ptr, MaxActionID, c.actionIDs)
	switch e["type"] {
	case "button":
		c.text(e["text"], ptr+"/text", true, MaxButtonText)
		c.str(e, "value", ptr, false, MaxButtonValue)
		c.str(e, "url", ptr, false, MaxURL)
		if s, ok := e["style"].(string); ok && s != "primary" && s != "danger" {
			c.fail(ptr+"/style", "must be one of primary, danger")
		}
	case "static_select":
		if p, ok := e["placeholder"]; ok {
			c.text(p, ptr+"/placeholder", true, MaxPlaceholder)
		}
		opts, ok := list(e["options"])
		if !ok || len(opts) == 0 {
			c.fail(ptr+"/options", "must provide a non-empty array")
			return
		}
		if len(opts) > MaxSelectOptions {
			c.fail(ptr+"/options", "must be less than %d items", MaxSelectOptions+1)
		}
		seen := map[string]bool{}
		for i, o := range opts {
			p := fmt.Sprintf("%s/options/%d", ptr, i)
			om, ok := o.(map[string]any)
			if !ok {
				c.fail(p, "must provide an object")
				continue
			}
			c.text(om["text"], p+"/text", true, MaxOptionText)
			if v, ok := c.str(om, "value", p, true, MaxOptionValue); ok {
				if seen[v] {
					c.fail(p+"/value", "value %q is used twice in the menu; it must be unique", v)
				}
				seen[v] = true
			}
		}
		// "A single option that exactly matches one of the options".
		if init, ok := e["initial_option"]; ok {
			matched := false
			for _, o := range opts {
				a, _ := json.Marshal(o)
				b, _ := json.Marshal(init)
				matched = matched || string(a) == string(b)
			}
			if !matched {
				c.fail(ptr+"/initial_option", "must exactly match one of the provided options")
			}
		}
	default:
		c.fail(ptr+"/type", "unsupported element type %v (the fake knows button, static_select)", e["type"])
	}
}

// refusal is a Slack error answer.
type refusal struct {
	code     string
	errors   []string
	messages []string
}

func (r *refusal) body() map[string]any {
	out := map[string]any{"ok": false, "error": r.code}
	if len(r.errors) > 0 {
		out["errors"] = r.errors
	}
	if len(r.messages) > 0 {
		out["response_metadata"] = map[string]any{"messages": r.messages}
	}
	return out
}

func refused(code string, errs []string) *refusal {
	r := &refusal{code: code, errors: errs}
	for _, e := range errs {
		r.messages = append(r.messages, errorMessagePrefx+e)
	}
	return r
}

// checkMessage checks the arguments of chat.postMessage, chat.update or
// chat.postEphemeral as Slack would; nil when they pass.
func checkMessage(method string, params map[string][]string) *refusal {
	get := func(k string) string {
		if v := params[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	blocks := get("blocks")
	if blocks == "" {
		if method != "chat.update" && strings.TrimSpace(get("text")) == "" && get("attachments") == "" {
			return &refusal{code: errNoText}
		}
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(blocks), &v); err != nil {
		return &refusal{code: errBlocksFormat}
	}
	c := newChecker()
	c.blocks(v, "/blocks", MaxMessageBlocks)
	if len(c.errs) > 0 {
		return refused(errInvalidBlocks, c.errs)
	}
	return nil
}

// checkView checks views.open's view as Slack would.
func checkView(view string) *refusal {
	var v map[string]any
	if err := json.Unmarshal([]byte(view), &v); err != nil {
		return refused(errInvalidArgs, []string{"must provide a JSON object [json-pointer:/view]"})
	}
	c := newChecker()
	if v["type"] != "modal" {
		c.fail("/view/type", "must be modal")
	}
	c.text(v["title"], "/view/title", true, MaxViewTitle)
	for _, k := range []string{"submit", "close"} {
		if x, ok := v[k]; ok {
			c.text(x, "/view/"+k, true, MaxViewButton)
		}
	}
	c.str(v, "private_metadata", "/view", false, MaxPrivateMeta)
	c.str(v, "callback_id", "/view", false, MaxCallbackID)
	c.blocks(v["blocks"], "/view/blocks", MaxViewBlocks)
	if len(c.errs) > 0 {
		r := refused(errInvalidArgs, nil)
		for _, e := range c.errs {
			r.messages = append(r.messages, errorMessagePrefx+e)
		}
		return r
	}
	return nil
}
