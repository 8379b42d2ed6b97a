package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
)

// Runner pulls dispatch requests and runs each in its own container.
type Runner struct {
	cfg Config
	log *slog.Logger
	// transport is how dispatches' files reach their containers (one per
	// runner: transport.go).
	transport transport
	// slots holds one token per running dispatch.
	slots chan struct{}

	mu     sync.Mutex
	active map[string]*dispatch

	// egressDenied counts the requests egress proxies refused (egress.go).
	egressDenied atomic.Int64

	cancel context.CancelFunc
	// stopping is closed when Stop is called.
	stopping <-chan struct{}
	wg       sync.WaitGroup
	stopped  chan struct{}
	stopOne  sync.Once
}

// New checks cfg and returns a runner that is not started yet.
func New(cfg Config) (*Runner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("runner config: %w", err)
	}
	// Every event this runner publishes goes out on its own subject
	// (bus.RunnerEventSubject): the orchestrator applies it only while
	// this runner holds the dispatch's claim.
	b, err := cfg.Bus.AsRunner(cfg.ID)
	if err != nil {
		return nil, fmt.Errorf("runner config: %w", err)
	}
	cfg.Bus = b
	r := &Runner{
		cfg:     cfg,
		log:     cfg.Logger.With("runner", cfg.ID),
		slots:   make(chan struct{}, cfg.Slots),
		active:  map[string]*dispatch{},
		stopped: make(chan struct{}),
	}
	r.transport = newTransport(r)
	return r, nil
}

// Start prepares the streams, adopts or settles the containers a previous
// process left, and starts pulling requests. It returns once the runner is
// running.
func (r *Runner) Start(ctx context.Context) error {
	for _, dir := range []string{r.dispatchesDir(), r.workspacesDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("start runner: %w", err)
		}
	}
	if err := r.prepareBlobsDir(); err != nil {
		return fmt.Errorf("start runner: %w", err)
	}
	if err := os.RemoveAll(r.spoolDir()); err != nil {
		return fmt.Errorf("start runner: clear its temp files: %w", err)
	}
	if r.cfg.CheckHostPaths && !r.cfg.NoHostMounts {
		if err := r.checkHostPaths(ctx); err != nil {
			return fmt.Errorf("start runner: %w", err)
		}
	}
	if err := r.cfg.Bus.EnsureEventStream(ctx); err != nil {
		return fmt.Errorf("start runner: %w", err)
	}
	if err := r.cfg.Bus.EnsureQueue(ctx); err != nil {
		return fmt.Errorf("start runner: %w", err)
	}
	// Work outlives the ctx of Start; Stop ends it.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel, r.stopping = cancel, runCtx.Done()
	if err := r.cfg.Bus.WatchControl(runCtx, r.onControl); err != nil {
		cancel()
		return fmt.Errorf("start runner: %w", err)
	}
	if err := r.reconcile(runCtx); err != nil {
		cancel()
		return fmt.Errorf("start runner: %w", err)
	}
	r.wg.Add(1)
	go r.pull(runCtx)
	r.log.Info("runner started", "slots", r.cfg.Slots, "image", r.cfg.Image, "relay_events", r.cfg.WorkerNATSURL == "")
	return nil
}

// Stop stops pulling requests and following containers, without stopping
// the containers: the next runner process on this host adopts them. It
// waits for the runner's goroutines until ctx is done. Idempotent.
func (r *Runner) Stop(ctx context.Context) error {
	r.stopOne.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		go func() {
			r.wg.Wait()
			close(r.stopped)
		}()
	})
	select {
	case <-r.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop runner: %w", ctx.Err())
	}
}

// InUse is how many slots are taken.
func (r *Runner) InUse() int { return len(r.slots) }

// Active lists the dispatch ids this runner is running.
func (r *Runner) Active() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.active))
	for id := range r.active {
		ids = append(ids, id)
	}
	return ids
}

// pull fetches a request whenever a slot is free. A request that waits for
// a slot stays in the queue, where it is visible as queued.
func (r *Runner) pull(ctx context.Context) {
	defer r.wg.Done()
	for {
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		d, err := r.cfg.Bus.Fetch(ctx, 5*time.Second)
		if err != nil || d == nil {
			<-r.slots
			if err != nil && ctx.Err() == nil {
				r.log.Warn("fetch dispatch request", "error", err)
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
			}
			continue
		}
		if d.Err == nil {
			r.trace(d.Request.Spec.DispatchID, PhaseFetched)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.slots }()
			r.handle(ctx, d)
		}()
	}
}

// onControl handles a command for a dispatch this runner may hold.
func (r *Runner) onControl(dispatchID, command string) {
	if command != bus.ControlCancel {
		r.log.Warn("unknown control command; skipped", "dispatch_id", dispatchID, "command", command)
		return
	}
	r.mu.Lock()
	d := r.active[dispatchID]
	r.mu.Unlock()
	if d != nil {
		d.requestCancel()
	}
}

// reconcile settles what a previous runner process on this host left:
// running containers are adopted, exited ones settled, created ones started
// unless cancelled or settled (dispatch.adopt), and nothing is left.
func (r *Runner) reconcile(ctx context.Context) error {
	found, err := r.cfg.Engine.List(ctx, map[string]string{LabelRunner: r.cfg.ID})
	if err != nil {
		return fmt.Errorf("list containers of runner %s: %w", r.cfg.ID, err)
	}
	keep := map[string]bool{}
	for _, c := range found {
		keep[c.Labels[compute.LabelDispatchID]] = true
	}
	r.sweepSecrets(keep)
	r.sweepEgress(ctx, keep)
	for _, c := range found {
		id := c.Labels[compute.LabelDispatchID]
		if id == "" {
			r.log.Warn("agora container without a dispatch id; removing it", "container_id", c.ID)
			if err := r.cfg.Engine.Remove(ctx, c.ID); err != nil {
				r.log.Error("remove container", "container_id", c.ID, "error", err)
			}
			continue
		}
		// Adopted dispatches take slots like any other; the extra ones wait.
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		d, existing := r.register(id, nil, nil)
		if existing != nil {
			<-r.slots
			r.log.Warn("a second container of one dispatch; the next start adopts it", "dispatch_id", id, "container_id", c.ID)
			continue
		}
		d.containerID = c.ID
		r.log.Info("adopting container", "dispatch_id", id, "container_id", c.ID, "state", c.State)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.slots }()
			defer r.forget(d)
			d.adopt(ctx, c.State)
		}()
	}
	return nil
}

func (r *Runner) dispatchesDir() string { return filepath.Join(r.cfg.DataDir, "dispatches") }
func (r *Runner) workspacesDir() string { return filepath.Join(r.cfg.DataDir, "workspaces") }

// spoolDir holds the runner's own temp files (a blob on its way into a
// staged store); Start clears what a crash left.
func (r *Runner) spoolDir() string         { return filepath.Join(r.cfg.DataDir, "tmp") }
func (r *Runner) specDir(id string) string { return filepath.Join(r.dispatchesDir(), id) }
func (r *Runner) workspace(id string) string {
	return filepath.Join(r.workspacesDir(), id)
}

// blobsDir is the file:// store's blobs directory, "" for other stores.
func (r *Runner) blobsDir() string {
	if !strings.HasPrefix(r.cfg.StorageURI, "file://") {
		return ""
	}
	return filepath.Join(strings.TrimPrefix(r.cfg.StorageURI, "file://"), "blobs")
}

// prepareBlobsDir closes a file:// store's blobs directory to the
// containers' user. Containers never mount it (they get a staged store,
// stage.go); a runner before that opened it to everyone (0777), and
// whatever other local user could then write blobs.
func (r *Runner) prepareBlobsDir() error {
	dir := r.blobsDir()
	if dir == "" {
		return nil
	}
	for _, d := range []string{dir, filepath.Join(dir, "sha256")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
