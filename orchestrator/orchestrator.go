package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/registry"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Defaults for a task's limits and route.
const (
	DefaultMaxRounds = 10
	DefaultMaxWait   = 7 * 24 * time.Hour
	consumerName     = "orchestrator"
	routerTick       = 250 * time.Millisecond
	// routerWorkers route this many tasks' questions at once. One was
	// agora's own ceiling: each answer is a read, a compare-and-swap and
	// an enqueue, and on a 3-node NATS cluster a burst of questions queued
	// behind one another for seconds (docs/capacity.md); an answerer that
	// takes its time (a webhook, an agent) held every other task's too.
	routerWorkers      = 8
	lastOutputMaxBytes = 200
)

// Config is one orchestrator.
type Config struct {
	Bus *bus.Bus
	// Store holds outputs and snapshots (for remove).
	Store storage.Store
	// Answerers resolves route steps; nil gives memory and human only.
	Answerers *answer.Resolver
	// Subagents are the named sub-agents `agent:<name>` route steps run;
	// a name not here is looked up in Registry.
	Subagents map[string]schemas.Subagent
	// Registry resolves SubmitRequest.SubagentRef; nil: only inline
	// sub-agents can be submitted.
	Registry *registry.Registry
	// Max are this server's ceilings on what one task may ask for or hold;
	// zero fields take DefaultMaximums.
	Max Maximums
	// CIRoute is the route of a task submitted from CI (FromCI) that names
	// none; empty means wire.DefaultCIRoute.
	CIRoute string
	Logger  *slog.Logger
	// Now is the clock; tests may set it.
	Now func() time.Time
	// EventWorkers, EventMaxPending and EventMaxDeliveries tune the event
	// pipeline (bus.EventConsumer); zero takes its defaults.
	EventWorkers       int
	EventMaxPending    int
	EventMaxDeliveries int
	// OutboxSweep is how often a running orchestrator looks for rounds
	// that are queued in their task but were never put on the queue (an
	// enqueue that failed after the task was written: a NATS leader
	// election, a lost connection); 0 means DefaultOutboxSweep.
	OutboxSweep time.Duration
	// Retention is how long a task that ended is kept after its last
	// change; 0 means DefaultRetention (CheckRetention has the bounds).
	Retention time.Duration
	// RetentionSweep is how often a running orchestrator expires tasks;
	// 0 means DefaultRetentionSweep.
	RetentionSweep time.Duration
	// RouterWorkers is how many tasks' questions are routed at once; 0
	// means DefaultRouterWorkers. 1 is the single router agora had before
	// (docs/capacity.md measures both).
	RouterWorkers int
	// IndexSnapshotEvery is how often a running orchestrator saves its
	// task index to TaskIndexBucket, so that a start reads it and the
	// changes since instead of every task; 0 means
	// DefaultIndexSnapshotEvery, below 0 never (every start reads the
	// whole tasks bucket); at most MaxIndexSnapshotEvery.
	IndexSnapshotEvery time.Duration
}

// DefaultRouterWorkers is Config.RouterWorkers' default.
const DefaultRouterWorkers = routerWorkers

// DefaultOutboxSweep is Config.OutboxSweep's default.
const DefaultOutboxSweep = 10 * time.Second

// Orchestrator implements Service on JetStream.
type Orchestrator struct {
	cfg Config
	max Maximums
	// markerTTL is how long the server keeps a removed task's delete
	// marker; 0 is MarkerTTL (a benchmark shortens it).
	markerTTL time.Duration
	log       *slog.Logger
	store     *store
	memory    answer.MemoryStore
	// rules holds the remembered answers (RulesBucket); ruleCache is
	// what this process last saw of it.
	rules     *bus.KV
	ruleCache *ruleCache
	pipe      *pipeline
	// hub is the one watch of the tasks bucket every Watch shares.
	hub watchHub
	// snapshots holds the task index snapshot (nil: none are kept);
	// snapshotRev is the revision this process last saved, indexFrom the
	// one its start read (0: it read the whole bucket, for indexWhy).
	snapshots   *bus.Chunked
	snapshotMu  sync.Mutex
	snapshotRev atomic.Uint64
	indexFrom   uint64
	indexWhy    error

	mu         sync.Mutex
	deadlines  map[string]time.Time // task id → when its open question's step times out
	retries    map[string]time.Time // task id → when its queued retry is due
	lastOutput map[string]string    // dispatch id → last output line
	kick       chan string          // task ids poked
	// routing holds the tasks a router worker is advancing; rerun those
	// poked meanwhile, advanced again by the same worker, so one task is
	// never routed by two at once.
	routing map[string]bool
	rerun   map[string]bool

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped chan struct{}
	once    sync.Once
}

var _ Service = (*Orchestrator)(nil)

// New returns an orchestrator that is not started.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.Bus == nil {
		return nil, errors.New("orchestrator config: bus is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	max := cfg.Max.WithDefaults()
	if err := max.Validate(); err != nil {
		return nil, fmt.Errorf("orchestrator config: %w", err)
	}
	if err := CheckRetention(cfg.Retention); err != nil {
		return nil, fmt.Errorf("orchestrator config: %w", err)
	}
	if cfg.IndexSnapshotEvery > MaxIndexSnapshotEvery {
		return nil, fmt.Errorf("orchestrator config: the task index snapshot every %s: at most %s, half the age at which a start after a crash still reads it", cfg.IndexSnapshotEvery, MaxIndexSnapshotEvery)
	}
	cfg.CIRoute = orDefault(cfg.CIRoute, wire.DefaultCIRoute)
	if _, err := wire.ParseRoute(cfg.CIRoute); err != nil {
		return nil, fmt.Errorf("orchestrator config: CI route %q: %w", cfg.CIRoute, err)
	}
	return &Orchestrator{cfg: cfg, max: max, log: cfg.Logger, deadlines: map[string]time.Time{}, retries: map[string]time.Time{}, lastOutput: map[string]string{},
		routing: map[string]bool{}, rerun: map[string]bool{},
		kick: make(chan string, 1024), stopped: make(chan struct{})}, nil
}

func (o *Orchestrator) now() time.Time { return o.cfg.Now().UTC() }

// Start opens the state, re-enqueues rounds whose enqueue a crash cut off,
// resumes the timers of open questions from their stored deadlines, and
// starts consuming events. It returns once running.
func (o *Orchestrator) Start(ctx context.Context) error {
	if o.markerTTL == 0 {
		o.markerTTL = MarkerTTL
	}
	st, err := openStore(ctx, o.cfg.Bus, o.markerTTL, o.log)
	if err != nil {
		return fmt.Errorf("start orchestrator: %w", err)
	}
	o.store = st
	// A task's record is one KV value and one dispatch request: it must
	// fit the server's max payload, with room for the request's envelope.
	if mp := int64(o.cfg.Bus.MaxPayload()); mp > 0 && int64(o.max.TaskBytes) > mp-taskEnvelope {
		o.log.Warn("the task record maximum does not fit the NATS server's max payload; lowering it",
			"max_task_bytes", o.max.TaskBytes, "max_payload", mp, "now", mp-taskEnvelope)
		o.max.TaskBytes = int(mp - taskEnvelope)
	}
	mem, err := o.cfg.Bus.KeyValue(ctx, MemoryBucket, "answers the memory answerer may reuse")
	if err != nil {
		return fmt.Errorf("start orchestrator: %w", err)
	}
	o.memory = kvMemory{kv: mem}
	if o.rules, err = o.cfg.Bus.KeyValueTTL(ctx, RulesBucket, "remembered answers: rules made by answering with remember", wire.MaxRuleTTL); err != nil {
		return fmt.Errorf("start orchestrator: %w", err)
	}
	if o.cfg.Answerers == nil {
		o.cfg.Answerers = &answer.Resolver{Logger: o.log}
	}
	if o.cfg.Answerers.Memory == nil {
		o.cfg.Answerers.Memory = o.memory
	}
	if o.cfg.Answerers.Agents == nil {
		o.cfg.Answerers.Agents = o
	}
	// Found now, not at a CI job's first question.
	if err := o.checkRoute(ctx, o.cfg.CIRoute); err != nil {
		return fmt.Errorf("start orchestrator: the CI route %q: %w", o.cfg.CIRoute, err)
	}
	if err := o.cfg.Bus.EnsureQueue(ctx); err != nil {
		return fmt.Errorf("start orchestrator: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.cancel = cancel
	o.ruleCache = &ruleCache{rules: map[string]wire.Rule{}}
	if err := o.followRules(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start orchestrator: %w", err)
	}
	o.openSnapshots(ctx)
	if err := o.followTasks(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start orchestrator: %w", err)
	}
	if !o.store.cache.waitCaughtUp(ctx) {
		cancel()
		return fmt.Errorf("start orchestrator: reading the tasks bucket: %w", ctx.Err())
	}
	if err := o.recover(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start orchestrator: %w", err)
	}
	if _, err := o.cfg.Bus.SubscribeAllLogs(func(id string, chunk []byte) { o.noteOutput(id, chunk) }); err != nil {
		cancel()
		return fmt.Errorf("start orchestrator: %w", err)
	}
	if err := o.startPipeline(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start orchestrator: %w", err)
	}
	workers := o.cfg.RouterWorkers
	if workers <= 0 {
		workers = DefaultRouterWorkers
	}
	if o.snapshots != nil && o.cfg.IndexSnapshotEvery >= 0 {
		o.wg.Add(1)
		go o.snapshotLoop(runCtx, o.indexFrom == 0)
	}
	o.wg.Add(3 + workers)
	for range workers {
		go o.routeKicks(runCtx)
	}
	go o.route(runCtx)
	go o.sweepLoop(runCtx)
	go o.retentionLoop(runCtx)
	return nil
}

// Stop stops consuming and routing; dispatches keep running. Idempotent.
func (o *Orchestrator) Stop(ctx context.Context) error {
	o.once.Do(func() {
		if o.cancel != nil {
			o.cancel()
		}
		go func() { o.wg.Wait(); o.snapshotAtStop(); close(o.stopped) }()
	})
	select {
	case <-o.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recover finishes what a crash interrupted: rounds created but not
// enqueued are enqueued (msg-id and claims make a repeat harmless), and
// open questions get their timers back.
func (o *Orchestrator) recover(ctx context.Context) error {
	// Only open tasks matter: the task cache holds them once its watch has
	// caught up (Start waits for that), so the bucket is read once at
	// start, not twice.
	c := o.store.cache
	if !c.current() {
		var err error
		if c, err = o.listing(ctx); err != nil {
			return err
		}
	}
	var asking []*openEntry
	retries := map[string]time.Time{}
	now := o.now()
	c.eachOpen(func(t openTask) {
		if t.has(openRound) && t.state == wire.StateNeedsInput {
			asking = append(asking, t.openEntry)
		} else if t.state == wire.StateQueued && t.waitingRetry(now) {
			retries[t.id] = time.Unix(0, t.retryAt).UTC()
		}
	})
	for _, e := range asking {
		t, err := e.task()
		if err != nil {
			return err
		}
		o.schedule(t.ID, wakeAt(t, currentRound(t)))
	}
	for id, at := range retries {
		o.scheduleRetry(id, at)
	}
	return o.sweepOutbox(ctx, c, 0)
}

// sweepOutbox enqueues the current round of every open task that is
// queued but not enqueued and was queued at least minAge ago (a younger
// one may be on its way to the queue right now; a repeat would be
// harmless, only wasted). The outbox flag is set after the queue has the
// request, so a round is never lost between the two: at worst it is
// enqueued twice, and the queue's msg-id drops the second.
func (o *Orchestrator) sweepOutbox(ctx context.Context, c *taskCache, minAge time.Duration) error {
	var pending []string
	now := o.now()
	c.eachOpen(func(t openTask) {
		// A retry waiting for its backoff is the retry timer's; past it,
		// the sweep's like any other round.
		if t.has(openRound) && t.state == wire.StateQueued && !t.has(openEnqueued) && !t.waitingRetry(now) &&
			t.due <= now.UnixNano()-int64(minAge) {
			pending = append(pending, t.id)
		}
	})
	for _, id := range pending {
		t, err := o.store.get(ctx, id)
		if errors.Is(err, wire.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		if r := currentRound(t); t.State != wire.StateQueued || r == nil || r.Enqueued || waitingRetry(r, o.now()) {
			continue // enqueued or moved on meanwhile
		}
		o.log.Info("enqueueing a round whose enqueue did not complete", "task_id", id, "dispatch_id", currentRound(t).DispatchID)
		if _, err := o.enqueue(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// sweepLoop runs sweepOutbox every OutboxSweep until ctx ends; a failed
// sweep is logged and the next one tries again.
func (o *Orchestrator) sweepLoop(ctx context.Context) {
	defer o.wg.Done()
	every := o.cfg.OutboxSweep
	if every <= 0 {
		every = DefaultOutboxSweep
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, err := o.listing(ctx)
		if err == nil {
			err = o.sweepOutbox(ctx, c, every)
		}
		if err != nil && ctx.Err() == nil {
			o.log.Warn("outbox sweep", "error", err)
		}
	}
}

// followTasks keeps the task cache current with the bucket.
func (o *Orchestrator) followTasks(ctx context.Context) error {
	c := newTaskCache(o.log)
	o.store.cache = c
	lost := func() {
		c.setReady(false)
		c.settled()
		o.log.Warn("task cache: the watch of the tasks bucket ended; listing reads the bucket from now on")
	}
	// From the snapshot and the changes since when it may be trusted,
	// else from every task in the bucket (snapshot.go).
	o.indexFrom, o.indexWhy = o.loadSnapshot(ctx, c)
	o.snapshotRev.Store(o.indexFrom)
	put, caughtUp := c.feed(ctx)
	if o.indexFrom > 0 {
		return o.store.tasks.FollowFrom(ctx, o.indexFrom+1, put, caughtUp, lost)
	}
	if o.snapshots != nil {
		o.log.Info("task index: reading every task in the bucket, not the snapshot", "why", o.indexWhy)
	}
	return o.store.tasks.Follow(ctx, put, caughtUp, lost)
}

// listing is the task cache when it is current, else the same index built
// from the bucket for this one call (slower, as it reads every task, but
// no larger).
func (o *Orchestrator) listing(ctx context.Context) (*taskCache, error) {
	if c := o.store.cache; c != nil && c.current() {
		return c, nil
	}
	c := newTaskCache(o.log)
	put := func(id string, value []byte, rev uint64) error { c.put(id, value, rev); return nil }
	if err := o.store.tasks.Each(ctx, put); err != nil {
		return nil, err
	}
	c.setReady(true)
	return c, nil
}

// Submit creates a task and queues its first round. The same task id with
// the same request returns the existing task; with another request it is
// ErrConflict.
func (o *Orchestrator) Submit(ctx context.Context, req wire.SubmitRequest) (*wire.Task, error) {
	submitted := requestHash(req)
	pins, from, err := o.resolve(ctx, &req)
	if err != nil {
		return nil, err
	}
	if req.Route == "" && req.FromCI {
		req.Route = o.cfg.CIRoute
	}
	// The maximums first: a number over them may not fit the schema's
	// types or the arithmetic that follows.
	if err := o.checkMaximums(&req, from); err != nil {
		return nil, err
	}
	if err := o.validate(&req); err != nil {
		return nil, err
	}
	if err := o.checkRoute(ctx, routeOf(req)); err != nil {
		return nil, err
	}
	if err := o.checkLocalSecrets(ctx, req.Env); err != nil {
		return nil, err
	}
	o.fillDefaults(&req)
	if req.TaskID == "" {
		req.TaskID = newTaskID()
	}
	generation, err := o.store.generation(ctx, req.TaskID)
	if err != nil {
		return nil, fmt.Errorf("submit task %s: %w", req.TaskID, err)
	}
	now := o.now()
	t := &wire.Task{ID: req.TaskID, Request: req, SubagentHash: subagentHash(req), Pins: pins, SubmitHash: submitted,
		Generation: generation, Owner: caller(ctx).Name, State: wire.StateQueued, CreatedAt: now, UpdatedAt: now}
	o.record(t, wire.HistoryEntry{Action: wire.ActionSubmit, By: caller(ctx).actor()})
	t.Rounds = []wire.Round{{N: 1, Attempt: 1, DispatchID: dispatchIDOf(t, 1, 1), State: wire.StateQueued, QueuedAt: now}}
	if err := o.checkRecord(t, "the request"); err != nil {
		return nil, err
	}
	if err := o.store.create(ctx, t); errors.Is(err, bus.ErrKeyExists) {
		existing, gerr := o.store.get(ctx, req.TaskID)
		if gerr != nil {
			return nil, gerr
		}
		if !caller(ctx).owns(existing) {
			// Another owner's task: nothing of its request is told.
			return nil, &wire.ConflictError{TaskID: req.TaskID}
		}
		if orDefault(existing.SubmitHash, requestHash(existing.Request)) != submitted {
			diffs, more := requestDifferences(existing.Request, req)
			return nil, &wire.ConflictError{TaskID: req.TaskID, Differences: diffs, More: more}
		}
		return o.view(existing), nil
	} else if err != nil {
		return nil, fmt.Errorf("submit task %s: %w", req.TaskID, err)
	}
	o.log.Info("task submitted", "task_id", t.ID, "subagent", req.Subagent.Name, "pins", pins)
	t, err = o.enqueue(ctx, t)
	if err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// resolve fills a request that names a registered sub-agent: the pinned
// definition, its bundles, and its defaults where the request is silent.
// from names, for messages, which fields the definition gave.
func (o *Orchestrator) resolve(ctx context.Context, req *wire.SubmitRequest) (pins *wire.Pins, from fieldSource, err error) {
	given := map[string]bool{}
	from = func(field string) string {
		if prefix, _, _ := strings.Cut(field, "."); given[field] || given[prefix] {
			return " (from the registered sub-agent " + pins.Subagent + ")"
		}
		return ""
	}
	if req.SubagentRef == "" {
		return nil, from, nil
	}
	if req.Subagent.Name != "" || req.Subagent.Runtime != "" || len(req.Subagent.Command) > 0 || req.Subagent.Prompt != "" {
		return nil, nil, fmt.Errorf("%w: give subagent_ref or an inline subagent, not both", wire.ErrInvalidRequest)
	}
	if o.cfg.Registry == nil {
		return nil, nil, fmt.Errorf("%w: subagent_ref %q: this orchestrator has no registry", wire.ErrInvalidRequest, req.SubagentRef)
	}
	res, err := o.cfg.Registry.Resolve(ctx, req.SubagentRef)
	if errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrInvalid) {
		return nil, nil, fmt.Errorf("%w: %w", wire.ErrInvalidRequest, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resolve sub-agent %s: %w", req.SubagentRef, err)
	}
	pins = &res.Pins
	def := res.Entry.Subagent
	req.Subagent = res.Subagent
	req.Capabilities = append(res.Capabilities, req.Capabilities...)
	req.Env = append(res.Env, req.Env...)
	if req.Route == "" {
		req.Route = def.Route
	}
	if req.TimeoutSeconds == 0 {
		req.TimeoutSeconds = def.TimeoutSeconds
		given["timeout_seconds"] = true
	}
	if def.Limits != nil {
		if req.Limits.MaxRounds == 0 {
			req.Limits.MaxRounds = def.Limits.MaxRounds
			given["limits.max_rounds"] = true
		}
		if req.Limits.MaxWaitSeconds == 0 {
			req.Limits.MaxWaitSeconds = def.Limits.MaxWaitSeconds
			given["limits.max_wait_seconds"] = true
		}
	}
	req.Image = orDefault(req.Image, def.Image)
	// The network and its allow-list are one policy: the definition's
	// applies whole, only when the request gives neither.
	if req.Network == "" && len(req.Egress) == 0 {
		req.Network, req.Egress = def.Network, def.Egress
		given["network"], given["egress"] = true, true
	}
	req.Workspace = orDefault(req.Workspace, def.Workspace)
	if req.Resources == nil {
		req.Resources = def.Resources
		given["resources"] = true
	}
	req.AllowMemory = req.AllowMemory || def.AllowMemory
	if req.Retry == nil && def.Retry != nil {
		req.Retry = def.Retry
		given["retry"] = true
	}
	return pins, from, nil
}

func (o *Orchestrator) validate(req *wire.SubmitRequest) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{wire.ErrInvalidRequest}, args...)...)
	}
	if req.TaskID != "" && wire.CheckTaskID(req.TaskID) != nil {
		return bad("task_id %q: letters, digits, '-' and '_', at most 96", req.TaskID)
	}
	if len(req.Input) > 0 {
		var obj map[string]json.RawMessage
		if err := schemas.Decode("input", req.Input, &obj); err != nil {
			if ve, ok := errors.AsType[*schemas.ValidationError](err); ok {
				if p := ve.Problems[0]; p.Pointer == "" && strings.HasPrefix(p.Message, "expected an object, got ") {
					return bad("input must be a JSON object, not %s", strings.TrimPrefix(p.Message, "expected an object, got "))
				}
				return bad("input: %s", ve.Detail())
			}
			return bad("input: %v", err)
		}
	}
	network, err := schemas.CheckNetwork(req.Network, req.Egress)
	if err != nil {
		return bad("%v", err)
	}
	req.Network = network
	switch req.Workspace {
	case "", schemas.WorkspacePersist, schemas.WorkspaceFresh:
	default:
		return bad("workspace %q: want persist or fresh", req.Workspace)
	}
	if _, err := wire.ParseRoute(routeOf(*req)); err != nil {
		return bad("route: %v", err)
	}
	if err := schemas.CheckOutputs(req.Subagent.Outputs); err != nil {
		return bad("subagent.%v", err)
	}
	// The first round's request must pass its schema, as the runner's will.
	probe := &wire.Task{ID: orDefault(req.TaskID, "probe"), Request: *req}
	probe.Rounds = []wire.Round{{N: 1, Attempt: 1, DispatchID: dispatchIDOf(probe, 1, 1)}}
	data, err := json.Marshal(o.request(probe, &probe.Rounds[0]))
	if err != nil {
		return bad("%v", err)
	}
	if err := schemas.Validate(schemas.SchemaRequest, data); err != nil {
		return bad("%v", err)
	}
	return nil
}

// checkRoute refuses a route with a step no answerer serves, and an
// agent:NAME step whose sub-agent is neither configured nor registered:
// found now, not when the task's first question has nowhere to go.
func (o *Orchestrator) checkRoute(ctx context.Context, route string) error {
	steps, err := wire.ParseRoute(route)
	if err != nil {
		return fmt.Errorf("%w: route: %v", wire.ErrInvalidRequest, err)
	}
	for i, st := range steps {
		if err := o.cfg.Answerers.Check(st.Answerer); err != nil {
			return fmt.Errorf("%w: route step %d %q: %v", wire.ErrInvalidRequest, i+1, st.Answerer, err)
		}
		name, ok := strings.CutPrefix(st.Answerer, "agent:")
		if !ok {
			continue
		}
		if _, ok := o.cfg.Subagents[name]; ok {
			continue
		}
		if o.cfg.Registry == nil {
			return fmt.Errorf("%w: route step %d %q: no sub-agent %q is configured for agent answers", wire.ErrInvalidRequest, i+1, st.Answerer, name)
		}
		if _, err := o.cfg.Registry.Get(ctx, wire.KindSubagent, name); errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrInvalid) {
			return fmt.Errorf("%w: route step %d %q: no sub-agent %q is registered ('agora subagent list' shows them)", wire.ErrInvalidRequest, i+1, st.Answerer, name)
		} else if err != nil {
			return fmt.Errorf("route step %d %q: look up sub-agent %s: %w", i+1, st.Answerer, name, err)
		}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func routeOf(req wire.SubmitRequest) string {
	if req.Route == "" {
		return wire.DefaultRoute
	}
	return req.Route
}

func newTaskID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}

// dispatchID names round n's attempt a of the task: <id>-r<n>, then
// <id>-r<n>-<attempt> for a respawn, and <id>-r<n>-<attempt>-g<generation>
// for a task whose id was used by a removed task before (no other form
// ends in -g<digits>, so no two tasks' dispatch ids collide).
func dispatchIDOf(t *wire.Task, n, attempt int) string {
	switch {
	case t.Generation > 1:
		return fmt.Sprintf("%s-r%d-%d-g%d", t.ID, n, attempt, t.Generation)
	case attempt <= 1:
		return fmt.Sprintf("%s-r%d", t.ID, n)
	}
	return fmt.Sprintf("%s-r%d-%d", t.ID, n, attempt)
}

// subagentHash pins what every round runs: the sub-agent and its bundles.
func subagentHash(req wire.SubmitRequest) string {
	data, _ := json.Marshal(struct {
		Subagent     schemas.Subagent    `json:"subagent"`
		Capabilities []schemas.BundleRef `json:"capabilities"`
		Env          []schemas.BundleRef `json:"env"`
	}{req.Subagent, req.Capabilities, req.Env})
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func requestHash(req wire.SubmitRequest) string {
	req.TaskID = ""
	data, _ := json.Marshal(req)
	// Compact input so formatting does not make a different request.
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Get returns one task.
func (o *Orchestrator) Get(ctx context.Context, id string) (*wire.Task, error) {
	t, err := o.visible(ctx, id)
	if err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// List returns one page of the tasks matching opts, newest first, in
// their list view, and the counts of all tasks by state. Open tasks come
// from the task cache; the terminal ones of the page are read from the
// bucket.
func (o *Orchestrator) List(ctx context.Context, opts wire.ListOptions) (wire.TaskPage, error) {
	limit, err := wire.PageLimit(opts.Limit)
	if err != nil {
		return wire.TaskPage{}, err
	}
	after, hasAfter, err := decodeCursor(cursorTasks, opts.Cursor)
	if err != nil {
		return wire.TaskPage{}, err
	}
	c, err := o.listing(ctx)
	if err != nil {
		return wire.TaskPage{}, err
	}
	f := filterOf(opts)
	if id := caller(ctx); !id.Admin && !id.Answerer {
		f.owner, f.scoped = id.Name, true
	}
	var from *sortKey
	if hasAfter {
		from = &after
	}
	sel, counts, more := c.pageTasks(f, from, limit)
	tasks, err := o.readPage(ctx, sel, f)
	if err != nil {
		return wire.TaskPage{}, err
	}
	sum := summarize(counts)
	if caller(ctx).Admin { // parked events are any task's: the operator's to see
		sum.ParkedEvents = o.parkedCount()
		sum.Alert = parkedAttention(sum.ParkedEvents)
	}
	page := wire.TaskPage{Tasks: tasks, Summary: sum}
	if more && len(sel) > 0 {
		page.NextCursor = encodeCursor(cursorTasks, sel[len(sel)-1].key)
	}
	return page, nil
}

// pageReads bounds the bucket reads one page makes at once.
const pageReads = 8

// readPage completes a page: the terminal tasks are read from the bucket
// (a few at a time), each turned into its list view as soon as it is
// read. A task removed meanwhile, or changed so that it no longer matches
// the filters, is left out; the cursor still moves past it.
func (o *Orchestrator) readPage(ctx context.Context, sel []selected, f taskFilter) ([]*wire.Task, error) {
	out := make([]*wire.Task, len(sel))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		slots    = make(chan struct{}, pageReads)
	)
	for i, s := range sel {
		if s.open != nil {
			t, err := s.open.task()
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", s.key.id, err)
			}
			out[i] = t
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			t, err := o.store.get(ctx, s.key.id)
			switch {
			case errors.Is(err, wire.ErrNotFound):
			case errors.Is(err, errUndecodable):
				o.log.Warn("a task record does not decode; left out of the listing", "task_id", s.key.id, "error", err)
			case err != nil:
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			case f.matchTask(t):
				out[i] = ListView(t)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	tasks := make([]*wire.Task, 0, len(out))
	for _, t := range out {
		if t != nil {
			tasks = append(tasks, o.view(t))
		}
	}
	return tasks, nil
}

// Questions returns one page of the open questions, oldest first (by when
// they were asked, then task id).
func (o *Orchestrator) Questions(ctx context.Context, opts wire.PageOptions) (wire.QuestionPage, error) {
	limit, err := wire.PageLimit(opts.Limit)
	if err != nil {
		return wire.QuestionPage{}, err
	}
	after, hasAfter, err := decodeCursor(cursorQuestions, opts.Cursor)
	if err != nil {
		return wire.QuestionPage{}, err
	}
	c, err := o.listing(ctx)
	if err != nil {
		return wire.QuestionPage{}, err
	}
	// Only the page's keys are kept in order, from the cache's open
	// entries, and only the page's views are decoded: not every open
	// question (tens of thousands at a million tasks).
	id := caller(ctx)
	var from *sortKey
	if hasAfter {
		from = &after
	}
	open := c.firstAsked(limit+1, id.Admin || id.Answerer, id.Name, from)
	page := wire.QuestionPage{Questions: []wire.QuestionView{}}
	if len(open) > limit {
		open = open[:limit]
		page.NextCursor = encodeCursor(cursorQuestions, open[limit-1].key)
	}
	now := o.now()
	for _, a := range open {
		t, err := a.e.task()
		if err != nil {
			return wire.QuestionPage{}, fmt.Errorf("task %s: %w", a.key.id, err)
		}
		r := currentRound(t)
		if r == nil || r.Question == nil {
			continue // cannot be: the entry says it asked
		}
		q := r.Question
		page.Questions = append(page.Questions, wire.QuestionView{TaskID: t.ID, Round: r.N, DispatchID: r.DispatchID, Subagent: t.Request.Subagent.Name,
			Question: q.Question, Options: q.Options, Context: q.Context, Default: q.Default, AskedAt: r.AskedAt,
			AgeMS: now.Sub(r.AskedAt).Milliseconds(), Action: answerAction(t.ID, q), IfUnanswered: ifUnanswered(t, r, now),
			StepFailures: stepFailures(r)})
	}
	return page, nil
}

// Watch calls fn with every task change until ctx ends.
// A caller that may not see every task gets the changes of the tasks it
// sees, and the removal of those it saw in this watch.
func (o *Orchestrator) Watch(ctx context.Context, fn func(wire.Change)) error {
	return o.WatchReady(ctx, fn, nil)
}

// WatchReady is Watch that calls ready (when not nil) once the watch is
// in place: every change after that reaches fn. A page that reads the
// state on ready misses nothing in between. Every watch of this process
// shares one watch of the bucket (watchHub): fn must not change the task
// it is given, and a watch whose fn falls DefaultWatchLag changes behind
// ends with ErrWatchLagged.
func (o *Orchestrator) WatchReady(ctx context.Context, fn func(wire.Change), ready func()) error {
	return o.watchReady(ctx, fn, ready)
}

// current is the task's latest round.
func currentRound(t *wire.Task) *wire.Round {
	if len(t.Rounds) == 0 {
		return nil
	}
	return &t.Rounds[len(t.Rounds)-1]
}

// view fills the derived fields a reader sees.
func (o *Orchestrator) view(t *wire.Task) *wire.Task {
	if r := currentRound(t); r != nil {
		r.IfUnanswered = ifUnanswered(t, r, o.now())
	}
	t.Attention = o.attention(t)
	return t
}

// noteOutput keeps the last output line of each running dispatch.
func (o *Orchestrator) noteOutput(dispatchID string, chunk []byte) {
	text := strings.TrimRight(string(chunk), "\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	if len(text) > lastOutputMaxBytes {
		text = text[:lastOutputMaxBytes] + "…"
	}
	o.mu.Lock()
	o.lastOutput[dispatchID] = text
	o.mu.Unlock()
}
