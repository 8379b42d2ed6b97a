package main

import (
	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
)

// slackFlags configure the Slack answerer of agora serve and agora
// orchestrator (docs/slack.md). Secrets may come from the environment
// instead, so they stay out of process listings.
type slackFlags struct {
	token, signingSecret, appToken, apiURL, publicURL string
	socketMode                                        bool
}

func (f *slackFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.token, "slack-token", "", "answer questions in Slack (route steps slack:#channel, slack:@user) as the bot with `TOKEN` (xoxb-…; default $AGORA_SLACK_TOKEN)")
	fs.StringVar(&f.signingSecret, "slack-signing-secret", "", "verify Slack's interactivity and events requests with the app's signing `SECRET` (default $AGORA_SLACK_SIGNING_SECRET)")
	fs.BoolVar(&f.socketMode, "slack-socket-mode", false, "take Slack interactions and events over Socket Mode (no public ingress) instead of POST /slack/interactions and /slack/events")
	fs.StringVar(&f.appToken, "slack-app-token", "", "the app-level `TOKEN` (xapp-…) Socket Mode connects with (default $AGORA_SLACK_APP_TOKEN)")
	fs.StringVar(&f.apiURL, "slack-api-url", "", "the Slack Web API at `URL` instead of https://slack.com/api/ (a fake, in tests)")
	fs.StringVar(&f.publicURL, "public-url", "", "where people reach this server, `URL`; Slack messages link to URL/tasks/ID (default $AGORA_PUBLIC_URL)")
}

// config is the Slack answerer's configuration, nil when no token is given.
func (f *slackFlags) config(environ []string) (*slackanswer.Config, error) {
	or := func(v, env string) string {
		if v == "" {
			return getenv(environ, env)
		}
		return v
	}
	c := slackanswer.Config{Token: or(f.token, "AGORA_SLACK_TOKEN"), SigningSecret: or(f.signingSecret, "AGORA_SLACK_SIGNING_SECRET"),
		AppToken: or(f.appToken, "AGORA_SLACK_APP_TOKEN"), SocketMode: f.socketMode, APIURL: f.apiURL,
		PublicURL: or(f.publicURL, "AGORA_PUBLIC_URL")}
	if c.Token == "" {
		if f.socketMode || f.signingSecret != "" || f.appToken != "" || f.apiURL != "" {
			return nil, usagef("--slack-… flags need a bot token: --slack-token or $AGORA_SLACK_TOKEN")
		}
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return &c, nil
}
