package slackanswer

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Target is what a route step "slack:<where>[?allow=…&remind=…]" names.
type Target struct {
	// Channel is where the question is posted: "#ops", a channel id
	// ("C0123"), or a user ("@U0123") for a direct message.
	Channel string
	// Allow lists who may answer: user ids (U…, W…) and user group ids
	// (S…). Empty: anyone who can see the message.
	Allow []string
	// Remind is the interval of the reminders posted in the thread until
	// the question is answered, counted back from the step's timeout (the
	// last one comes Remind before it, as the single reminder did before
	// reminders repeated); zero takes a quarter of the step's timeout.
	Remind time.Duration
}

// ParseTarget reads the argument of a slack route step: "#ops",
// "@U0123", "#ops?allow=U1+S2", "#ops?allow=U1&remind=1h". Allow-list
// entries are separated by "+" because a route separates steps by commas.
func ParseTarget(arg string) (Target, error) {
	where, query, _ := strings.Cut(strings.TrimSpace(arg), "?")
	if where == "" || where == "#" || where == "@" {
		return Target{}, fmt.Errorf("want slack:#channel or slack:@user")
	}
	if !strings.HasPrefix(where, "#") && !strings.HasPrefix(where, "@") && !isID(where) {
		return Target{}, fmt.Errorf("%q: want #channel, a channel id or @user", where)
	}
	t := Target{Channel: where}
	v, err := url.ParseQuery(strings.ReplaceAll(query, "+", "%2B"))
	if err != nil {
		return Target{}, fmt.Errorf("%q: %w", query, err)
	}
	for k, vals := range v {
		val := strings.Join(vals, "+")
		switch k {
		case "allow":
			for _, id := range strings.Split(val, "+") {
				id = strings.TrimSpace(id)
				if id == "" {
					continue
				}
				if !isID(id) || !strings.ContainsAny(id[:1], "UWS") {
					return Target{}, fmt.Errorf("allow: %q is not a Slack user (U…, W…) or user group (S…) id", id)
				}
				t.Allow = append(t.Allow, id)
			}
		case "remind":
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return Target{}, fmt.Errorf("remind: %q is not a positive duration like 1h", val)
			}
			t.Remind = d
		default:
			return Target{}, fmt.Errorf("unknown parameter %q (want allow, remind)", k)
		}
	}
	return t, nil
}

// isID: upper-case letters and digits, as Slack's ids are.
func isID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// allowed reports whether user may answer: on the list, or in a group on
// it (members looks a group up).
func (t Target) allowed(user string, members func(group string) ([]string, error)) (bool, error) {
	if len(t.Allow) == 0 {
		return true, nil
	}
	for _, id := range t.Allow {
		if id == user {
			return true, nil
		}
	}
	for _, id := range t.Allow {
		if !strings.HasPrefix(id, "S") {
			continue
		}
		m, err := members(id)
		if err != nil {
			return false, err
		}
		for _, u := range m {
			if u == user {
				return true, nil
			}
		}
	}
	return false, nil
}
