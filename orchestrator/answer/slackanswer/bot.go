package slackanswer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

// Bucket is the KV bucket the bot keeps its messages, threads and clicks in.
const Bucket = "agora_slack"

// Service is what the bot needs of the orchestrator (orchestrator.Service
// has it all).
type Service interface {
	Get(ctx context.Context, taskID string) (*wire.Task, error)
	Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error)
	Watch(ctx context.Context, fn func(wire.Change)) error
}

// KV is the bucket the bot's state lives in; *bus.KV is one.
type KV interface {
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	Create(ctx context.Context, key string, value []byte) (uint64, error)
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Update is a compare-and-swap on the revision (bus.ErrRevision):
	// what is posted once (a reminder, a hand-over notice) is claimed
	// with it, so two bots on one bucket never both post it.
	Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
	Delete(ctx context.Context, key string) error
	Each(ctx context.Context, fn func(key string, value []byte, rev uint64) error) error
}

// keepClicks is how long a handled click is kept to recognise a repeated
// delivery; Slack's signatures expire after 5 minutes anyway.
const keepClicks = 24 * time.Hour

var _ KV = (*bus.KV)(nil)

// Config is one Slack bot.
type Config struct {
	// Token is the bot token (xoxb-…).
	Token string
	// SigningSecret verifies the interactivity endpoint's requests.
	SigningSecret string
	// SocketMode takes interactions over Socket Mode (AppToken, xapp-…)
	// instead of the HTTP endpoint.
	SocketMode bool
	AppToken   string
	// APIURL replaces https://slack.com/api/ (tests point it at slackfake).
	APIURL string
	// PublicURL is where agora serve is reached; messages link to
	// PublicURL/tasks/ID. Empty: no link.
	PublicURL string
	Service   Service
	KV        KV
	Logger    *slog.Logger
	// Now is the clock; Tick how often reminders are looked for (30s).
	Now  func() time.Time
	Tick time.Duration
}

// Validate says what is missing from what an operator configures (New
// also wants Service and KV).
func (c Config) Validate() error {
	switch {
	case c.Token == "":
		return errors.New("slack: a bot token is required (--slack-token)")
	case !c.SocketMode && c.SigningSecret == "":
		return errors.New("slack: a signing secret is required (--slack-signing-secret), or Socket Mode")
	case c.SocketMode && c.AppToken == "":
		return errors.New("slack: Socket Mode needs an app-level token (--slack-app-token)")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || u.Host == "" {
			return fmt.Errorf("slack: public URL %q: want https://host[/path]", c.PublicURL)
		}
	}
	return nil
}

// Bot posts questions to Slack and takes the answers given there.
type Bot struct {
	cfg Config
	api *slack.Client
	log *slog.Logger

	// ctx bounds background work (acting on clicks, following tasks);
	// Stop cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu serialises changes to message records: one process owns them.
	mu     sync.Mutex
	open   map[string]bool     // message id → still open
	byTask map[string][]string // task id → its open messages
	// threads are the tasks with a thread whose outcome is not posted
	// yet: the watcher reads no record for the others.
	threads map[string]bool
	groups  map[string]groupMembers
	// inThread lists the messages of each thread (channel id/thread ts),
	// open or done, so that a reply in a thread finds its question;
	// threadsMu guards it.
	threadsMu sync.Mutex
	inThread  map[string][]string

	// usersMu guards users, the users.info cache.
	usersMu sync.Mutex
	users   map[string]userName
	// botUser is the bot's own user id (auth.test): its posts are no
	// answers.
	botUser string

	changes chan wire.Change
}

type groupMembers struct {
	at      time.Time
	members []string
}

// New returns a bot that is not started.
func New(cfg Config) (*Bot, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Service == nil || cfg.KV == nil {
		return nil, errors.New("slack: a service and a KV bucket are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 30 * time.Second
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	opts := []slack.Option{}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Bot{cfg: cfg, api: slack.New(cfg.Token, opts...), log: cfg.Logger.With("answerer", "slack"),
		ctx: ctx, cancel: cancel, open: map[string]bool{}, byTask: map[string][]string{}, threads: map[string]bool{},
		groups: map[string]groupMembers{}, inThread: map[string][]string{}, users: map[string]userName{},
		changes: make(chan wire.Change, 4096)}, nil
}

// Register plugs "slack:<target>" into r; a target that cannot be read is
// refused when the task is submitted.
func (b *Bot) Register(r *answer.Resolver) error {
	r.RegisterCheck("slack", func(arg string) error { _, err := ParseTarget(arg); return err })
	return r.Register("slack", b.Step)
}

// Step is the answer.Resolver constructor of "slack:<target>".
func (b *Bot) Step(arg string) (answer.Answerer, error) {
	t, err := ParseTarget(arg)
	if err != nil {
		return nil, err
	}
	return answer.Func(func(ctx context.Context, q answer.Question) (answer.Reply, error) {
		return answer.Reply{}, b.ask(ctx, "slack:"+arg, t, q)
	}), nil
}

// Start checks the token, loads the open messages, re-drives the clicks a
// stop cut off, and follows the tasks; with SocketMode it connects too.
// It returns once running.
func (b *Bot) Start(ctx context.Context) error {
	var who *slack.AuthTestResponse
	err := b.call(ctx, "auth.test", func() (err error) { who, err = b.api.AuthTestContext(ctx); return err })
	if err != nil {
		return fmt.Errorf("start slack bot: %w", err)
	}
	b.log.Info("slack bot connected", "team", who.Team, "user", who.User)
	b.botUser = who.UserID
	var pending, old []string
	var open []*message
	err = b.cfg.KV.Each(ctx, func(key string, value []byte, _ uint64) error {
		switch {
		case strings.HasPrefix(key, "msg."):
			var m message
			if decode(value, &m) == nil {
				b.indexThread(&m)
				if !m.Done {
					b.index(&m)
					open = append(open, &m)
				}
			}
		case strings.HasPrefix(key, "thread."):
			var th thread
			if decode(value, &th) == nil && !th.Outcome && th.Task != "" {
				b.threads[th.Task] = true
			}
		case strings.HasPrefix(key, "click."):
			var c click
			switch {
			case decode(value, &c) != nil:
			case !c.Done:
				pending = append(pending, key)
			case b.now().Sub(c.At) > keepClicks:
				old = append(old, key)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("start slack bot: %w", err)
	}
	for _, key := range old {
		if err := b.cfg.KV.Delete(ctx, key); err != nil {
			b.log.Warn("forget an old click", "click", key, "error", err)
		}
	}
	for _, key := range pending {
		b.log.Info("re-driving a click received before a restart", "click", key)
		b.goAct(key)
	}
	// The watch first, in place before anything is read: then the catch-up
	// below sees what happened to the open questions while no bot followed
	// the tasks (answered elsewhere, timed out and passed on), and the
	// watch everything after — nothing falls in between.
	ready, failed := make(chan struct{}), make(chan error, 1)
	go func() {
		fn := func(c wire.Change) {
			select {
			case b.changes <- c:
			default:
				b.log.Warn("task changes overflow; one is dropped", "task_id", c.TaskID)
			}
		}
		err := orchestrator.WatchWhenReady(b.ctx, b.cfg.Service, fn, func() { close(ready) })
		if err != nil && b.ctx.Err() == nil {
			b.log.Error("watch tasks", "error", err)
		}
		failed <- err
	}()
	select {
	case <-ready:
	case err := <-failed:
		b.cancel()
		return fmt.Errorf("start slack bot: watch the tasks: %w", err)
	case <-ctx.Done():
		b.cancel()
		return fmt.Errorf("start slack bot: %w", ctx.Err())
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.catchUp(b.ctx, open)
	}()
	b.wg.Add(2)
	go b.follow()
	go b.remind()
	if b.cfg.SocketMode {
		b.wg.Add(1)
		go b.socketMode()
	}
	return nil
}

// Stop stops background work and waits for it; idempotent.
func (b *Bot) Stop(ctx context.Context) error {
	b.cancel()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs a Slack Web API call, waiting out 429s (Retry-After) up to 5
// times within ctx.
func (b *Bot) call(ctx context.Context, what string, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) && attempt < 5 {
			wait := max(rl.RetryAfter, time.Second)
			b.log.Info("slack rate limit; waiting", "method", what, "retry_after", wait)
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return fmt.Errorf("slack %s: %w (while waiting out a rate limit)", what, ctx.Err())
			}
		}
		if err != nil {
			return fmt.Errorf("slack %s: %w", what, err)
		}
		return nil
	}
}

func (b *Bot) now() time.Time { return b.cfg.Now().UTC() }

func newID() string {
	var p [8]byte
	_, _ = rand.Read(p[:])
	return hex.EncodeToString(p[:])
}

// taskURL is the task's web page, or "".
func (b *Bot) taskURL(id string) string {
	if b.cfg.PublicURL == "" {
		return ""
	}
	return b.cfg.PublicURL + "/tasks/" + url.PathEscape(id)
}
