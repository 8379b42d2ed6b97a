package roles

import (
	"context"
	"fmt"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/answer/slackanswer"
)

// SlackPath is where the Slack app's interactivity requests come in, on
// the API's listener; they are authenticated by Slack's signature, not by
// the API's tokens.
const SlackPath = "/slack/interactions"

// SlackEventsPath is where the Slack app's Events API requests (replies in
// a question's thread) come in, beside SlackPath and checked the same way.
const SlackEventsPath = "/slack/events"

// newSlack makes the Slack bot for o and plugs its route step into res;
// it is started once o is (startSlack).
func (s *Stack) newSlack(ctx context.Context, o *orchestrator.Orchestrator, res *answer.Resolver) error {
	if s.cfg.Slack == nil {
		return nil
	}
	kv, err := s.bus.KeyValue(ctx, slackanswer.Bucket, "the Slack answerer's messages, threads and clicks")
	if err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	cfg := *s.cfg.Slack
	cfg.Service, cfg.KV = o, kv
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	bot, err := slackanswer.New(cfg)
	if err != nil {
		return err
	}
	if err := bot.Register(res); err != nil {
		return err
	}
	s.slack = bot
	return nil
}
