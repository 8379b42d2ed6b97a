package roleflags

import (
	"errors"

	flag "github.com/spf13/pflag"

	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
)

// slackFlags configure the Slack answerer of agora serve and agora
// orchestrator (docs/slack.md). The secrets may come from the environment
// instead, so they stay out of process listings.
type slackFlags struct {
	token, signingSecret, appToken, apiURL, publicURL string
	socketMode                                        bool
}

func (f *slackFlags) register(fl *Flags) {
	fs := fl.fs
	fs.StringVar(&f.token, "slack-token", "", "answer questions in Slack (route steps slack:#channel, slack:@user) as the bot with `TOKEN` (xoxb-…; default $AGORA_SLACK_TOKEN)")
	fl.env("slack-token", "AGORA_SLACK_TOKEN")
	fs.StringVar(&f.signingSecret, "slack-signing-secret", "", "verify Slack's interactivity and events requests with the app's signing `SECRET` (default $AGORA_SLACK_SIGNING_SECRET)")
	fl.env("slack-signing-secret", "AGORA_SLACK_SIGNING_SECRET")
	fs.BoolVar(&f.socketMode, "slack-socket-mode", false, "take Slack interactions and events over Socket Mode (no public ingress) instead of POST /slack/interactions and /slack/events")
	fs.StringVar(&f.appToken, "slack-app-token", "", "the app-level `TOKEN` (xapp-…) Socket Mode connects with (default $AGORA_SLACK_APP_TOKEN)")
	fl.env("slack-app-token", "AGORA_SLACK_APP_TOKEN")
	fs.StringVar(&f.apiURL, "slack-api-url", "", "the Slack Web API at `URL` instead of https://slack.com/api/ (a fake, in tests)")
	fs.StringVar(&f.publicURL, "public-url", "", "where people reach this server, `URL`; Slack messages link to URL/tasks/ID (default $AGORA_PUBLIC_URL)")
	fl.env("public-url", "AGORA_PUBLIC_URL")
	fl.role(roleOrch, "slack-token", "slack-signing-secret", "slack-socket-mode", "slack-app-token", "slack-api-url", "public-url")
}

// config is the Slack answerer's configuration, nil without a bot token.
// The other Slack flags typed without one are a mistake; the same values
// in the environment are not (they may be there for another process).
func (f *slackFlags) config(fs *flag.FlagSet) (*slackanswer.Config, error) {
	c := slackanswer.Config{Token: f.token, SigningSecret: f.signingSecret, AppToken: f.appToken,
		SocketMode: f.socketMode, APIURL: f.apiURL, PublicURL: f.publicURL}
	if c.Token == "" {
		if f.socketMode || fs.Changed("slack-signing-secret") || fs.Changed("slack-app-token") || f.apiURL != "" {
			return nil, errors.New("--slack-… flags need a bot token: --slack-token or $AGORA_SLACK_TOKEN")
		}
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
