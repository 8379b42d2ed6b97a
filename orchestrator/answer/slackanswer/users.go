package slackanswer

import (
	"context"
	"time"

	"github.com/slack-go/slack"
)

// How long a users.info answer is kept: names change rarely; a failed
// look-up (no users:read scope, Slack down) is retried sooner.
const (
	keepUser       = time.Hour
	keepUserFailed = time.Minute
)

type userName struct {
	at   time.Time
	name string // "" when the look-up failed
	ok   bool
}

// displayName is the name Slack shows for a user: the profile's display
// name, else the real name, else the handle.
func displayName(u *slack.User) string {
	for _, n := range []string{u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name} {
		if n != "" {
			return n
		}
	}
	return ""
}

// userName looks up the name people see for a Slack user (users.info,
// cached); fallback (the name an interaction payload carries, or "") is
// kept when the look-up fails.
func (b *Bot) userName(ctx context.Context, id, fallback string) string {
	b.usersMu.Lock()
	c, hit := b.users[id]
	b.usersMu.Unlock()
	if hit && (c.ok && b.now().Sub(c.at) < keepUser || !c.ok && b.now().Sub(c.at) < keepUserFailed) {
		if c.ok {
			return c.name
		}
		return fallback
	}
	var u *slack.User
	err := b.call(ctx, "users.info", func() (err error) { u, err = b.api.GetUserInfoContext(ctx, id); return err })
	c = userName{at: b.now()}
	if err != nil {
		b.log.Warn("look up a Slack user's name", "user", id, "error", err)
	} else if n := displayName(u); n != "" {
		c.name, c.ok = n, true
	}
	b.usersMu.Lock()
	b.users[id] = c
	b.usersMu.Unlock()
	if c.ok {
		return c.name
	}
	return fallback
}

// slackUser is who answered in Slack, as recorded: the payload's user with
// the name Slack shows for them.
func (b *Bot) slackUser(ctx context.Context, u slack.User) slack.User {
	fallback := u.Name
	if fallback == "" {
		fallback = u.Username
	}
	u.Name = b.userName(ctx, u.ID, fallback)
	return u
}
