// Package bus is agora's one seam to NATS JetStream: the subjects and
// streams, publishing lifecycle events with their de-duplication id, and
// reading them back, with github.com/nats-io/nats.go (never nats-server,
// nor the HTTP API's wire: the worker links this package and must stay
// small; docs/architecture.md).
//
// # Subjects and streams
//
// Lifecycle events go to EventSubject(id) = "agora.events.<dispatch_id>" in
// stream AGORA_EVENTS (subjects "agora.events.>"), each with the header
// Nats-Msg-Id = Event.MsgID() = "<dispatch_id>.<kind>". LogSubject,
// ControlSubject and QueueStream are reserved for the runner and the
// orchestrator; this package creates no stream for them yet. A dispatch id
// is one subject token: non-empty, without '.', '*', '>' or white space.
//
// AGORA_EVENTS is a file-stored, limits-retention stream with
//   - MaxAge 30 days (EventMaxAge): long enough to inspect any dispatch a
//     person still cares about, short enough that the stream does not grow
//     without bound; the orchestrator keeps its own state in KV.
//   - a 24 hour duplicate window (EventDuplicateWindow): the runner may
//     recover a terminal event from a container's stdout long after the worker
//     tried to publish it (a runner restarted overnight adopts finished
//     containers), and each remembered id costs the server a few dozen bytes.
//     Past the window a re-published event is stored twice; readers take the
//     first terminal event (TerminalEvent), so that is still harmless.
//
// EnsureEventStream owns the subjects, max age and duplicate window; it
// leaves replicas and placement as an operator set them.
//
// # Replicas
//
// Every stream and bucket this package creates gets Options.Replicas
// copies (default 1, what a single server holds; 3 on a three-node
// cluster). Replicas are chosen at creation: an existing stream or bucket
// keeps the count it has and a warning names it when it differs, so
// buckets made R1 before a cluster keep working, and processes started
// with different settings never fight over it. Consumers inherit their
// stream's replicas.
//
// # Reading a bucket on a cluster
//
// A KV's Get sees every write acknowledged before it (read-your-writes).
// nats.go's KV reads with a direct get, which every replica of the
// bucket's stream answers, so on a cluster a record read back just after
// it was written could be the one before: a replica acknowledges a write
// before it applies it (docs/capacity.md). A bucket whose stream has more
// than one replica is therefore read through the stream's leader (the
// stream message-get API, which only the leader answers), decoded as
// nats.go decodes it; Create's own read of a delete marker goes there too.
// A one-replica bucket keeps the direct get (its one server leads it). The
// replicas are read when the bucket is opened: a bucket an operator
// replicates later is read through its leader from the next start of the
// process. Each, Follow and Watch are unchanged (ordered consumers).
//
// # Connecting to a server that is down
//
// Connect makes one bounded attempt (Options.ConnectTimeout, and ctx) and
// returns a Bus even when the server is unreachable: nats.go keeps
// reconnecting in the background (RetryOnFailedConnect, every
// Options.ReconnectWait, forever until Close). While it is not connected a
// publish fails at once with ErrNotConnected instead of being buffered, so
// PublishEventRetry retries with its own backoff and succeeds as soon as the
// server is up within its window; nothing is sent twice by a reconnect, and
// the msg-id makes our own retries harmless.
//
// # Credentials
//
// Options.Auth carries the usual NATS client credentials (a creds file or
// its contents, an nkey seed, a user and password) and TLS settings. A
// worker connects with its dispatch's own user, which may publish only that
// dispatch's events and logs and receive replies only below
// WorkerInboxPrefix(id), hence Options.InboxPrefix.
//
// # Reading events
//
// Events reads a dispatch's events with the stream's message-get API, by
// subject and sequence ("first message at or after seq on this subject"),
// until the server reports that there is none: no consumer to create or
// clean up, no waiting. A dispatch has a handful of events, so one request
// per event is cheap. The requests go to the stream's leader
// ($JS.API.STREAM.MSG.GET) whatever the stream's allow_direct says — a
// direct get is answered by any replica, which may be a moment behind —
// and need no STREAM.INFO first. A runner decides on that read whether a
// dispatch is settled, and publishes a terminal event only on the
// condition that nothing changed since (PublishTerminal). Kinds outside the closed vocabulary are logged and
// skipped; StoredEvents returns everything stored, raw, for diagnostics and
// tests.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Defaults for Options.
const (
	DefaultName           = "agora"
	DefaultConnectTimeout = 2 * time.Second
	DefaultReconnectWait  = 250 * time.Millisecond
	DefaultPublishTimeout = 5 * time.Second
)

// Options configures a Bus.
type Options struct {
	// Name is the client connection name the server shows; default DefaultName.
	Name string
	// Logger receives the bus's logs; default discards them.
	Logger *slog.Logger
	// ConnectTimeout bounds the first connection attempt (dial and
	// handshake); ctx's deadline bounds it too. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between reconnection attempts while the
	// server is unreachable; default DefaultReconnectWait.
	ReconnectWait time.Duration
	// PublishTimeout bounds one publish attempt (request and ack), on top of
	// ctx; default DefaultPublishTimeout.
	PublishTimeout time.Duration
	// Auth is the client's credentials and TLS settings; zero connects
	// anonymously over plain TCP.
	Auth Auth
	// InboxPrefix, when set, replaces "_INBOX" in the reply subjects of
	// requests (JetStream acknowledgements among them): a worker's user may
	// subscribe only below its own prefix.
	InboxPrefix string
	// Replicas is how many copies a NATS cluster keeps of each stream and
	// bucket this bus creates (1 to MaxReplicas); default DefaultReplicas.
	// An existing stream or bucket keeps the replicas it has (see
	// replicasFor).
	Replicas int
	// OnRetry, when set, is called by PublishEventRetry after each failed
	// attempt that will be retried, on the caller's goroutine, before the
	// backoff pause. attempt counts from 1.
	OnRetry func(attempt int, err error)
}

// WithDefaults returns o with every unset field set to its default.
func (o Options) WithDefaults() Options {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = DefaultReconnectWait
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = DefaultPublishTimeout
	}
	if o.Replicas <= 0 {
		o.Replicas = DefaultReplicas
	}
	return o
}

// Auth is how a client proves who it is to NATS and checks the server: the
// usual NATS client options. Set at most one of CredsFile, Creds,
// NKeySeedFile and User.
type Auth struct {
	// CredsFile is a user JWT and its seed (a .creds file: nsc's, or
	// <data-dir>/nats/auth/*.creds of an agora serve).
	CredsFile string
	// Creds is the same as CredsFile's contents, held in memory: the
	// worker's, read from a file it deleted.
	Creds []byte
	// NKeySeedFile is an nkey user's seed.
	NKeySeedFile string
	// User and Password authenticate with a user name and password.
	User, Password string
	// TLSCA is a PEM file of the CAs the server's certificate is checked
	// against (and turns TLS on); TLSCert and TLSKey a client certificate.
	TLSCA, TLSCert, TLSKey string
}

// Validate reports credentials that cannot be used together.
func (a Auth) Validate() error {
	n := 0
	for _, set := range []bool{a.CredsFile != "", a.Creds != nil, a.NKeySeedFile != "", a.User != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("nats auth: use one of a creds file, an nkey seed or a user and password")
	case a.Password != "" && a.User == "":
		return errors.New("nats auth: a password needs a user")
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return errors.New("nats auth: a TLS client certificate needs both the cert and the key")
	}
	return nil
}

// options turns a into nats.go connect options.
func (a Auth) options() ([]nats.Option, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	var opts []nats.Option
	switch {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.Creds != nil:
		tok, err := nkeys.ParseDecoratedJWT(a.Creds)
		if err != nil {
			return nil, fmt.Errorf("nats credentials: %w", err)
		}
		kp, err := nkeys.ParseDecoratedUserNKey(a.Creds)
		if err != nil {
			return nil, fmt.Errorf("nats credentials: %w", err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, fmt.Errorf("nats credentials: %w", err)
		}
		opts = append(opts, nats.UserJWTAndSeed(tok, string(seed)))
	case a.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats nkey seed: %w", err)
		}
		opts = append(opts, o)
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if a.TLSCA != "" {
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if a.TLSCert != "" {
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	return opts, nil
}

// ErrNotConnected means the bus has no live connection to the server right
// now; it is reconnecting in the background and a retry may succeed.
var ErrNotConnected = errors.New("not connected to NATS")

// ErrClosed means the Bus was closed.
var ErrClosed = errors.New("bus closed")

// Bus is a connection to NATS JetStream. It is safe for concurrent use.
type Bus struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	opts      Options
	log       *slog.Logger
	closeOnce sync.Once
	// runner, when set, is the runner whose subject events are published
	// on (AsRunner).
	runner string
	// runners is RunnerBucket, once opened (CheckRunnerEvent).
	runnersMu sync.Mutex
	runners   *KV
	// claimsKV is ClaimBucket, once opened (claims).
	claimsMu sync.Mutex
	claimsKV *KV
}

// Connect connects to the NATS server at url. It returns once the first
// attempt has succeeded or failed, bounded by ctx and opts.ConnectTimeout;
// when it failed, the Bus keeps reconnecting in the background and Connect
// still succeeds (see the package comment). It fails for a malformed url or
// a ctx that is already done.
func Connect(ctx context.Context, url string, opts Options) (*Bus, error) {
	opts = opts.WithDefaults()
	if opts.Replicas > MaxReplicas {
		return nil, fmt.Errorf("connect to %s: %d replicas: JetStream keeps at most %d", url, opts.Replicas, MaxReplicas)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, context.Cause(ctx))
	}
	timeout := opts.ConnectTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("connect to %s: %w", url, context.DeadlineExceeded)
	}
	log := opts.Logger.With("nats_url", url)
	authOpts, err := opts.Auth.options()
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	if opts.InboxPrefix != "" {
		authOpts = append(authOpts, nats.CustomInboxPrefix(opts.InboxPrefix))
	}
	nc, err := nats.Connect(url, append(authOpts,
		nats.Name(opts.Name),
		nats.Timeout(timeout),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(opts.ReconnectWait),
		nats.NoCallbacksAfterClientClose(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("nats connected") }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("nats async error", "err", err)
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: jetstream: %w", url, err)
	}
	if nc.IsConnected() {
		log.Debug("nats connected")
	} else {
		log.Warn("nats not reachable yet; reconnecting in the background", "reconnect_wait", opts.ReconnectWait)
	}
	return &Bus{nc: nc, js: js, opts: opts, log: opts.Logger}, nil
}

// Close closes the connection. Publishes are synchronous, so nothing is left
// to drain; a publish in flight fails. Close is idempotent.
func (b *Bus) Close() {
	b.closeOnce.Do(b.nc.Close)
}

// Connected reports whether the bus is connected to a server right now.
func (b *Bus) Connected() bool { return b.nc.IsConnected() }

// MaxPayload is the largest message (headers included) the connected server
// accepts, 0 while not connected. NATS's default is 1 MiB.
func (b *Bus) MaxPayload() int64 {
	if !b.nc.IsConnected() {
		return 0
	}
	return b.nc.MaxPayload()
}

// ready fails fast when the connection cannot carry a request right now.
func (b *Bus) ready() error {
	switch st := b.nc.Status(); st {
	case nats.CONNECTED:
		return nil
	case nats.CLOSED:
		return ErrClosed
	default:
		return fmt.Errorf("%w (%s)", ErrNotConnected, st)
	}
}

// AcceptsAnonymous reports whether the NATS server at url lets a client in
// without credentials: it connects once, with auth's TLS settings but no
// user, nkey, creds or client certificate, bounded by ctx and
// DefaultConnectTimeout. An authorization error is false, nil; a server
// that cannot be reached is false with the error.
func AcceptsAnonymous(ctx context.Context, url string, auth Auth) (bool, error) {
	opts := []nats.Option{nats.Name("agora anonymous probe"), nats.Timeout(DefaultConnectTimeout), nats.NoReconnect()}
	if dl, ok := ctx.Deadline(); ok {
		opts[1] = nats.Timeout(min(DefaultConnectTimeout, time.Until(dl)))
	}
	if auth.TLSCA != "" {
		opts = append(opts, nats.RootCAs(auth.TLSCA))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return false, nil
		}
		return false, fmt.Errorf("probe %s: %w", url, err)
	}
	defer nc.Close()
	// Some servers accept the connection and close it on the first
	// request; a round trip tells.
	fctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		return false, nil
	}
	return nc.IsConnected(), nil
}
