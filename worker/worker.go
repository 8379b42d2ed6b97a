package worker

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/skills"
	"github.com/agoradev/agora/worker/sentinel"
)

// Exit codes beyond the runtime's own.
const (
	ExitOK      = 0
	ExitFailed  = 1
	ExitTimeout = 124
)

// outcomeError is a failure the worker can name, with the reason it is
// reported under.
type outcomeError struct {
	reason schemas.FailureReason
	err    error
}

func (e *outcomeError) Error() string { return e.err.Error() }
func (e *outcomeError) Unwrap() error { return e.err }

func workerFailed(format string, args ...any) error {
	return &outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf(format, args...)}
}

var errDispatchTimeout = errors.New("dispatch timeout")

// InlinePartialStateMax is the largest partial_state carried inside a
// needs_input event; a larger one goes to object storage as a ref.
const InlinePartialStateMax = 64 << 10

// Result is how one worker run ended.
type Result struct {
	ExitCode int
	// Terminal is the one terminal event, as printed and published.
	Terminal schemas.Event
	// Published reports whether NATS acknowledged the terminal event.
	Published bool
	Timings   Timings
}

// Timings are the points the worker's own overhead is measured between.
type Timings struct {
	Start       time.Time // Run entered
	RuntimeExec time.Time // adapter about to start the runtime
	RuntimeExit time.Time // adapter returned
	Done        time.Time // terminal event printed and acknowledged (or given up on)
}

// Run performs one dispatch. Cancelling ctx is the cancel signal (main maps
// SIGTERM onto it): the runtime's process group is stopped and the dispatch
// ends cancelled. Run always produces exactly one terminal event, except when
// the configuration has no dispatch id to report it under.
func Run(ctx context.Context, cfg Config) Result {
	builtinSecrets := cfg.Secrets == nil
	cfg = cfg.WithDefaults()
	// Every secret the env bundles resolve is kept out of what the worker
	// writes: the runtime's and setup's output, its own logs, the events.
	red := newRedactor()
	stderr := newRedactWriter(cfg.Stderr, red)
	defer stderr.Close() // a safety net: closed (and its error logged) after execute
	cfg.Stderr = stderr
	cfg.Logger = slog.New(newRedactHandler(cfg.Logger.Handler(), red))
	w := &run{cfg: cfg, log: cfg.Logger.With("dispatch_id", cfg.DispatchID), redact: red}
	w.timings.Start = time.Now()
	// The schemas this run validates with compile in the background while
	// it reads its files, dials NATS and fetches its spec: the dispatch
	// spec's, then the event schema's when events are published (the bus
	// checks each against it). Most of a cold start's cost
	// (docs/benchmarks.md).
	if cfg.NATSURL != "" {
		schemas.Prepare(schemas.SchemaDispatchSpec, schemas.SchemaEvent)
	} else {
		schemas.Prepare(schemas.SchemaDispatchSpec)
	}
	// Before anything else runs: once the file is gone, only this process
	// holds the key the runner checks event lines with.
	key, keyErr := readEventKey(cfg.EventKeyFile)
	creds, credsErr := readNATSCreds(cfg.NATSCredsFile)
	if cfg.Exchange.Key != "" && cfg.StorageURI != "" {
		// The same, where the runner could mount nothing: its private
		// values wait in storage.
		var (
			privKey   []byte
			workerEnv []string
		)
		privKey, workerEnv, w.privateErr = w.readPrivate(ctx)
		switch {
		case privKey != nil && key != nil:
			w.log.Warn("both " + schemas.EnvEventKeyFile + " and an event_key in $" + schemas.EnvExchangeKey + "/" + schemas.ExchangePrivate + "; signing with the file's")
		case privKey != nil:
			key = privKey
		}
		if len(workerEnv) > 0 {
			cfg.Environ = mergeEnv(cfg.Environ, workerEnv)
			if builtinSecrets {
				// env: refs and the AWS configuration see them too.
				cfg.Secrets = nil
				cfg = cfg.WithDefaults()
			}
			w.cfg = cfg
		}
	}
	if cfg.LogWriter != nil && key != nil {
		cfg.LogWriter.SetKey(key)
	}
	if cfg.DispatchID == "" {
		w.log.Error(schemas.EnvDispatchID + " is required; no event can be emitted without it")
		fmt.Fprintln(cfg.Stderr, "agora-worker: "+schemas.EnvDispatchID+" is required")
		return Result{ExitCode: ExitFailed, Timings: w.timings}
	}
	// Publishing must outlive a cancel: the cancelled event still has to go out.
	w.emit = newEmitter(context.WithoutCancel(ctx), cfg, creds)
	w.emit.key = key
	defer w.emit.close()
	if keyErr != nil {
		// Unsigned, the events are refused by the runner, which then reports
		// the dispatch lost with this line in its output.
		w.log.Error("event key", "error", keyErr)
	}
	if credsErr != nil {
		// Without them NATS refuses the events; the runner recovers the
		// terminal one from stdout.
		w.log.Error("nats credentials", "error", credsErr)
	}

	ev := w.execute(ctx)
	// The runtime has ended: what it left unfinished on a line goes out
	// before the terminal event.
	if err := stderr.Close(); err != nil {
		w.log.Warn("write the runtime's output", "error", err)
	}
	if ev.Kind == schemas.KindFailed && ctx.Err() != nil && ev.Failure.Reason != schemas.ReasonTimeout {
		// A step that failed because the cancel interrupted it is a cancel.
		ev = w.cancelled(ExitOK)
	}
	pubErr := w.emit.emitTerminal(context.WithoutCancel(ctx), &ev)
	w.timings.Done = time.Now()
	res := Result{ExitCode: exitCode(ev), Terminal: ev, Published: cfg.NATSURL != "" && pubErr == nil, Timings: w.timings}
	w.log.Info("dispatch ended", "kind", ev.Kind, "exit_code", res.ExitCode, "duration_ms", *ev.DurationMS)
	return res
}

// run is the state of one worker run.
type run struct {
	cfg     Config
	log     *slog.Logger
	emit    *emitter
	spec    *schemas.DispatchSpec
	store   storage.Store
	timings Timings
	redact  *redactor
	// privateErr is why $AGORA_EXCHANGE_KEY/private.json could not be had.
	privateErr error
}

// execute goes through the lifecycle and returns the terminal event.
func (w *run) execute(ctx context.Context) schemas.Event {
	if err := w.cfg.Validate(); err != nil {
		return w.failed(err, ExitFailed)
	}
	if err := w.openStore(ctx); err != nil {
		return w.failed(&outcomeError{reason: schemas.ReasonFetchFailed, err: err}, ExitFailed)
	}
	if w.privateErr != nil {
		return w.failed(workerFailed(schemas.EnvExchangeKey+": %w", w.privateErr), ExitFailed)
	}
	spec, err := w.readSpec(ctx)
	if err != nil {
		return w.failed(err, ExitFailed)
	}
	w.spec = spec
	w.log = w.log.With("task_id", spec.TaskID, "round", spec.EffectiveRound())
	adapter, err := adapters.ByRuntime(w.cfg.Adapters, spec.Subagent.Runtime)
	if err != nil {
		return w.failed(workerFailed("%w", err), ExitFailed)
	}
	caps, err := fetchCapabilities(ctx, w.store, spec.Capabilities)
	if err != nil {
		return w.failed(err, ExitFailed)
	}
	bundleEnv, secrets, err := fetchEnv(ctx, w.store, spec.Env, w.cfg.Secrets)
	if err != nil {
		return w.failed(err, ExitFailed)
	}
	for _, s := range secrets {
		if !w.redact.add(s.Name, s.Value) {
			w.log.Warn("secret is too short to be redacted from output", "secret", s.Name, "min_bytes", MinRedactBytes)
		}
	}
	partialState, err := w.resumeState(ctx)
	if err != nil {
		return w.failed(err, ExitFailed)
	}
	if ctx.Err() != nil {
		return w.cancelled(ExitOK)
	}

	started := w.event(schemas.KindStarted)
	w.emit.emitStarted(context.WithoutCancel(ctx), &started)

	var skill []byte
	if !w.cfg.DisableNeedsInputHelper {
		skill = skills.NeedsInputSkill()
	}
	if w.cfg.Exchange.RestoreURI != "" {
		if err := w.restoreWorkspace(ctx); err != nil {
			return w.failed(err, ExitFailed)
		}
	}
	if err := prepareWorkspace(w.cfg.Workspace, spec, caps, adapter.SkillPath(), skill, partialState); err != nil {
		var oe *outcomeError
		if !errors.As(err, &oe) {
			err = workerFailed("prepare workspace: %w", err)
		}
		return w.failed(err, ExitFailed)
	}
	env := runtimeEnv(w.cfg.Environ, bundleEnv, w.cfg.ExecutableDir)
	if err := runSetup(ctx, w.cfg.Workspace, append(env, adapters.DispatchEnv(spec, w.cfg.Workspace)...), w.cfg.SetupTimeout, w.cfg.Grace, w.cfg.Stderr); err != nil {
		return w.failed(err, ExitFailed)
	}
	if ctx.Err() != nil {
		return w.cancelled(ExitOK)
	}

	timeout := spec.Timeout(w.cfg.DefaultTimeout)
	rctx, cancel := context.WithTimeoutCause(ctx, timeout, errDispatchTimeout)
	defer cancel()
	w.timings.RuntimeExec = time.Now()
	res, err := adapter.Run(rctx, adapters.Invocation{
		Spec: spec, Workspace: w.cfg.Workspace, Env: env,
		Stdout: w.cfg.Stderr, Stderr: w.cfg.Stderr, Grace: w.cfg.Grace, Logger: w.log,
	})
	w.timings.RuntimeExit = time.Now()
	if err != nil {
		return w.failed(workerFailed("start %s runtime: %w", spec.Subagent.Runtime, err), ExitFailed)
	}

	// Cancel and timeout win over whatever the runtime left: it was stopped.
	switch {
	case ctx.Err() != nil:
		ev := w.cancelled(ExitOK)
		ev.Usage = res.Usage
		return ev
	case errors.Is(context.Cause(rctx), errDispatchTimeout):
		ev := w.failed(&outcomeError{reason: schemas.ReasonTimeout, err: fmt.Errorf("the runtime ran past the dispatch timeout of %s and was stopped (%s)", timeout, describeExit(res))}, ExitTimeout)
		ev.Usage = res.Usage
		return ev
	}

	question, err := sentinel.Read(w.cfg.Workspace)
	var ev schemas.Event
	switch {
	case err != nil:
		ev = w.failed(workerFailed("%w", err), ExitFailed)
	case question != nil:
		ev = w.needsInput(ctx, question)
	case res.Exit.Successful():
		ev = w.event(schemas.KindFinished)
		ev.ExitCode = intPtr(ExitOK)
		// Stored before the terminal event, so whoever sees the event
		// finds them.
		if err := w.collectResult(ctx, &ev, res.Text); err != nil {
			ev = w.failed(err, ExitFailed)
		}
	default:
		code := res.Exit.ExitCode
		if code == 0 {
			code = ExitFailed // unsuccessful without a code (a start error after the fact)
		}
		ev = w.failed(&outcomeError{reason: schemas.ReasonProviderFailed, err: fmt.Errorf("%s runtime %s and left no sentinel", spec.Subagent.Runtime, describeExit(res))}, code)
	}
	// Stored before the terminal event, so whoever sees the event finds
	// them.
	switch {
	case ev.Kind == schemas.KindNeedsInput && w.cfg.Exchange.SnapshotWorkspace:
		w.snapshotWorkspace(ctx)
	case ev.Kind == schemas.KindFinished && w.cfg.Exchange.Key != "":
		w.keepAnswer(context.WithoutCancel(ctx))
	}
	ev.Usage = res.Usage
	return ev
}

func describeExit(res adapters.Result) string {
	e := res.Exit
	switch {
	case e.OOMKilled:
		return fmt.Sprintf("was OOM-killed (exit code %d)", e.ExitCode)
	case e.Signal != "":
		return fmt.Sprintf("was killed by %s (exit code %d)", e.Signal, e.ExitCode)
	case e.Err != nil:
		return fmt.Sprintf("exited with code %d: %v", e.ExitCode, e.Err)
	case e.ExitCode > 128 && e.ExitCode < 128+65:
		// A shell reports a child killed by signal N as 128+N.
		sig := unix.SignalName(syscall.Signal(e.ExitCode - 128))
		return fmt.Sprintf("exited with code %d (128+%d: a process was killed by %s; SIGKILL at a container's memory limit is the OOM killer)", e.ExitCode, e.ExitCode-128, sig)
	}
	return fmt.Sprintf("exited with code %d", e.ExitCode)
}

// readSpec reads, validates and checks the dispatch spec.
func (w *run) readSpec(ctx context.Context) (*schemas.DispatchSpec, error) {
	var data []byte
	if w.cfg.SpecFile != "" {
		f, err := os.Open(w.cfg.SpecFile)
		if err != nil {
			return nil, workerFailed("read spec: %w", err)
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, maxSpecBytes+1))
		if err != nil {
			return nil, workerFailed("read spec %s: %w", w.cfg.SpecFile, err)
		}
	} else {
		key := schemas.DispatchKey(w.cfg.DispatchID, schemas.ExchangeSpec)
		if w.cfg.Exchange.Key != "" {
			key = w.cfg.Exchange.specKey()
		}
		rc, err := w.store.Get(ctx, key)
		if err != nil {
			return nil, workerFailed("read spec: %w", err)
		}
		defer rc.Close()
		data, err = io.ReadAll(io.LimitReader(rc, maxSpecBytes+1))
		if err != nil {
			return nil, workerFailed("read spec %s: %w", w.store.URI(key), err)
		}
	}
	if len(data) > maxSpecBytes {
		return nil, workerFailed("dispatch spec is larger than %d bytes", maxSpecBytes)
	}
	spec, err := schemas.ParseDispatchSpec(data)
	if err != nil {
		return nil, workerFailed("%w", err)
	}
	if spec.DispatchID != w.cfg.DispatchID {
		return nil, workerFailed("dispatch spec is for dispatch %q but "+schemas.EnvDispatchID+" is %q", spec.DispatchID, w.cfg.DispatchID)
	}
	return spec, nil
}

// resumeState returns the previous round's partial_state, checked and
// indented for .agora/resume.json (nil when there is none), fetching and
// verifying it when the spec carries a ref instead of the value.
func (w *run) resumeState(ctx context.Context) (indentedState, error) {
	r := w.spec.Resume
	switch {
	case r == nil:
		return nil, nil
	case r.PartialStateRef != nil:
		ref := r.PartialStateRef
		data, err := fetchBlob(ctx, w.store, "resume partial_state", ref.URI, ref.SHA256, maxPartialStateBytes)
		if err != nil {
			return nil, err
		}
		if int64(len(data)) != ref.Size {
			return nil, &outcomeError{reason: schemas.ReasonIntegrityFailed, err: fmt.Errorf("resume partial_state %s: size %d, want %d", ref.URI, len(data), ref.Size)}
		}
		state, err := indentState(data)
		if err != nil {
			return nil, workerFailed("resume partial_state %s is not JSON", ref.URI)
		}
		return state, nil
	}
	if len(r.PartialState) == 0 || string(r.PartialState) == "null" {
		return nil, nil
	}
	state, err := indentState(r.PartialState)
	if err != nil {
		return nil, workerFailed("resume partial_state is not JSON: %w", err)
	}
	return state, nil
}

// needsInput builds dispatch.needs_input, moving a partial_state too large
// for one NATS message to object storage.
func (w *run) needsInput(ctx context.Context, q *schemas.NeedsInput) schemas.Event {
	ev := w.event(schemas.KindNeedsInput)
	ev.ExitCode = intPtr(ExitOK)
	w.redact.needsInput(q) // before a large partial_state is stored
	ev.NeedsInput = q
	data, err := json.Marshal(ev)
	if err != nil {
		return w.failed(workerFailed("encode needs_input event: %w", err), ExitFailed)
	}
	// Inline unless the state is large: the event must fit one NATS message
	// (with headroom for headers), and the orchestrator keeps the question in
	// its KV task record, which big values would bloat.
	tooBig := int64(len(data)) > w.emit.maxPayload()-8<<10
	if len(q.PartialState) <= InlinePartialStateMax && !tooBig {
		return ev
	}
	if w.store == nil {
		if tooBig {
			w.log.Warn("partial_state too large for one NATS message and no storage to offload it to; the runner recovers the event from stdout", "bytes", len(data))
		}
		return ev
	}
	_, ref, err := storage.PutBlob(ctx, w.store, strings.NewReader(string(q.PartialState)))
	if err != nil {
		return w.failed(&outcomeError{reason: schemas.ReasonWorkerFailed, err: fmt.Errorf("store large partial_state: %w", err)}, ExitFailed)
	}
	q.PartialState = nil
	q.PartialStateRef = &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
	return ev
}

// event starts an event of kind for this dispatch.
func (w *run) event(kind schemas.EventKind) schemas.Event {
	ev := schemas.Event{Kind: kind, DispatchID: w.cfg.DispatchID, Time: time.Now().UTC()}
	if w.spec != nil {
		ev.TaskID = w.spec.TaskID
		ev.Round = w.spec.EffectiveRound()
		ev.Subagent = w.spec.Subagent.Name
		ev.Runtime = w.spec.Subagent.Runtime
	}
	if kind.Terminal() {
		ms := time.Since(w.timings.Start).Milliseconds()
		ev.DurationMS = &ms
	}
	return ev
}

func (w *run) failed(err error, code int) schemas.Event {
	reason := schemas.ReasonWorkerFailed
	var oe *outcomeError
	if errors.As(err, &oe) {
		reason = oe.reason
	}
	ev := w.event(schemas.KindFailed)
	ev.ExitCode = intPtr(code)
	ev.Failure = &schemas.Failure{Reason: reason, Detail: w.redact.String(err.Error())}
	return ev
}

func (w *run) cancelled(code int) schemas.Event {
	ev := w.event(schemas.KindCancelled)
	ev.ExitCode = intPtr(code)
	return ev
}

func exitCode(ev schemas.Event) int {
	if ev.ExitCode != nil {
		return *ev.ExitCode
	}
	return ExitFailed
}

func intPtr(n int) *int { return &n }

// openStore opens AGORA_STORAGE_URI, once; without it there is no store.
func (w *run) openStore(ctx context.Context) error {
	if w.store != nil || w.cfg.StorageURI == "" {
		return nil
	}
	store, err := storage.Open(ctx, w.cfg.StorageURI, storage.Options{Logger: w.log})
	if err != nil {
		return err
	}
	w.store = store
	return nil
}

// readPrivate reads and deletes $AGORA_EXCHANGE_KEY/private.json. A cancel
// does not interrupt it: the values must not stay in storage for a
// dispatch that ends early.
func (w *run) readPrivate(ctx context.Context) ([]byte, []string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), privateTimeout)
	defer cancel()
	if err := w.openStore(ctx); err != nil {
		return nil, nil, err
	}
	return readPrivate(ctx, w.store, w.cfg.Exchange)
}

// readNATSCreds reads and deletes the runner's NATS credentials file; nil
// means none. The file is removed even when it cannot be read.
func readNATSCreds(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if rmErr := os.Remove(path); err == nil && rmErr != nil {
		return nil, fmt.Errorf("remove %s (the sub-agent could read it): %w", path, rmErr)
	}
	if err != nil {
		return nil, fmt.Errorf("read "+schemas.EnvNATSCredsFile+": %w", err)
	}
	return data, nil
}

// readEventKey reads and deletes the runner's event key file; "" means no
// key. The file is removed even when it does not parse.
func readEventKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if rmErr := os.Remove(path); err == nil && rmErr != nil {
		return nil, fmt.Errorf("remove %s (the sub-agent could read it): %w", path, rmErr)
	}
	if err != nil {
		return nil, fmt.Errorf("read "+schemas.EnvEventKeyFile+": %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != schemas.EventKeyBytes {
		return nil, fmt.Errorf(schemas.EnvEventKeyFile+" %s: want %d hex-encoded bytes", path, schemas.EventKeyBytes)
	}
	return key, nil
}
