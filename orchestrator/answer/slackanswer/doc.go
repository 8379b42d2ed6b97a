// Package slackanswer is the Slack answerer: a route step
// "slack:#channel" or "slack:@user" posts a sub-agent's question to Slack
// as a Block Kit message with a button per option (a menu past five, a
// numbered list past a hundred; long content cut readably within Slack's
// limits, fit.go, with the whole question in the thread), and the clicks that
// come back through the interactivity endpoint (HTTP or Socket Mode), or
// the replies in its thread that come through the Events API endpoint (or
// Socket Mode), answer it through the orchestrator's Answer, recorded as
// the Slack user (named as users.info shows them) on the channel "slack".
//
// One Bot serves an orchestrator: Register plugs the step into the
// answer.Resolver, Handler and EventsHandler are the interactivity and
// events endpoints agora serve mounts, Start follows the tasks
// (Service.Watch, after catching up with the open questions' tasks) so
// that a question answered elsewhere, the repeated reminders, an
// escalation to the next step and the task's outcome show in Slack, and
// re-drives clicks and replies a restart cut off.
//
// State lives in a KV bucket (Bucket): one record per posted message
// (with its reminders, recorded before each is posted), one per task
// thread, one per click or reply received (written before it is acted
// on, so it is never lost and never applied twice).
//
// It is the one importer of slack-go (docs/architecture.md says what it
// may import); slackfake is the Slack Web API fake its tests run against.
// docs/slack.md is the setup guide.
package slackanswer
