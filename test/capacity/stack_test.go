// Package capacity measures agora's own ceiling: the orchestrator, runners
// and NATS with the measuring engine (internal/compute/procbench), which
// runs each dispatch's real agora-worker as a process instead of a
// container (process mode), or replays one recorded run of it per
// dispatch shape (replay mode), so only the container engine's cost — and
// in replay mode the worker's — is gone. BenchmarkCapacity is `make
// bench-capacity` (docs/capacity.md); TestMeasuringEngine and
// TestMeasuringEngineReplay keep both modes working under `make test`.
package capacity

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/procbench"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/runner/runnertest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RemovingBinaries(m).Run())
}

// seq makes task ids unique within the process; the pid makes them unique
// across two suites sharing nothing but the machine.
var seq atomic.Int64

// shape is one measured configuration.
type shape struct {
	orchestrators, runners, slots int
	// natsNodes is 1 (the embedded server, as agora serve) or 3 (a
	// cluster, every stream and bucket with 3 replicas).
	natsNodes int
	// routers is the orchestrators' RouterWorkers; 0 is the default.
	routers int
	// engine is the measuring engine's mode: procbench.Name (the worker
	// as a process each time) or procbench.ReplayName (a recorded run
	// replayed per shape); "" is process.
	engine string
}

func (s shape) engineName() string {
	if s.engine == "" {
		return procbench.Name
	}
	return s.engine
}

func (s shape) String() string {
	str := fmt.Sprintf("%d orch · %d runners × %d slots · NATS %s", s.orchestrators, s.runners, s.slots,
		map[bool]string{true: "1 node", false: strconv.Itoa(s.natsNodes) + "-node cluster R3"}[s.natsNodes == 1])
	if s.routers > 0 {
		str += fmt.Sprintf(" · %d router", s.routers)
	}
	return str + " · " + s.engineName()
}

// stack is agora in this process on the measuring engine: NATS (one node
// or a cluster), file storage, the orchestrators (answering by a lookup
// rule) and the runners, each with its own NATS connection and engine as
// a separate process would have. Every part's goroutines carry a pprof
// label "part" (orchestrator, runner, nats-server), inherited by the
// goroutines they start, so a CPU profile splits by part.
type stack struct {
	shape   shape
	urls    string
	orchs   []*orchestrator.Orchestrator
	runners []*runner.Runner
	probe   *bus.Bus
	traces  *runnertest.PhaseLog
	// replayers are the runners' engines in replay mode.
	replayers []*procbench.Replayer
	// done counts the dispatches the runners have finished (PhaseDone).
	done atomic.Int64
}

// workerRuns is how many dispatches ran the worker and how many were
// replays (replay mode only).
func (s *stack) workerRuns() (recorded, replayed int64) {
	for _, e := range s.replayers {
		rec, rep := e.Stats()
		recorded += rec
		replayed += rep
	}
	return recorded, replayed
}

// labelledEngine runs the engine's own work under the label part=engine,
// so that the measuring engine's cost (a process start, a replay's file
// writes) is not counted as the runner's: with a container engine it
// would be dockerd's. Wait and Logs are left to the runner: they wait, and
// the output they copy is parsed by the runner's writers.
type labelledEngine struct{ compute.Engine }

func asEngine[T any](ctx context.Context, fn func(context.Context) (T, error)) (out T, err error) {
	pprof.Do(ctx, pprof.Labels("part", "engine"), func(ctx context.Context) { out, err = fn(ctx) })
	// Do leaves the goroutine with ctx's labels, and the runner's ctx
	// carries none: the caller is the runner's.
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("part", "runner")))
	return out, err
}

func (l labelledEngine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	return asEngine(ctx, func(ctx context.Context) (string, error) { return l.Engine.Create(ctx, spec) })
}

func (l labelledEngine) Start(ctx context.Context, id string) error {
	_, err := asEngine(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.Engine.Start(ctx, id) })
	return err
}

func (l labelledEngine) Stop(ctx context.Context, id string, grace time.Duration) error {
	_, err := asEngine(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.Engine.Stop(ctx, id, grace) })
	return err
}

func (l labelledEngine) Remove(ctx context.Context, id string) error {
	_, err := asEngine(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, l.Engine.Remove(ctx, id) })
	return err
}

func (l labelledEngine) List(ctx context.Context, labels map[string]string) ([]compute.Container, error) {
	return asEngine(ctx, func(ctx context.Context) ([]compute.Container, error) { return l.Engine.List(ctx, labels) })
}

// labelled runs fn with the goroutine label part=name, so the goroutines
// it starts carry it too.
func labelled(name string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("part", name), func(context.Context) { fn() })
}

func newStack(tb testing.TB, sh shape) *stack {
	tb.Helper()
	ctx := context.Background()
	worker := testenv.Binary(tb, "github.com/agoradev/agora/cmd/agora-worker", false)
	log := natstest.LoggerLevel(tb, slog.LevelError)
	s := &stack{shape: sh, traces: runnertest.NewPhaseLog()}
	labelled("nats-server", func() {
		if sh.natsNodes > 1 {
			s.urls = natstest.StartClusterWith(tb, sh.natsNodes, natsserver.Config{Logger: log}).URLs()
		} else {
			s.urls = natstest.StartWith(tb, natsserver.Config{Logger: log}).ClientURL()
		}
	})
	replicas := min(sh.natsNodes, 3)
	connect := func(name string) *bus.Bus {
		var b *bus.Bus
		var err error
		if b, err = bus.Connect(ctx, s.urls, bus.Options{Name: name, Replicas: replicas}); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(b.Close)
		return b
	}
	storeDir := tb.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	rules := filepath.Join(tb.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(`[{"question": "^Pick a colour", "answer": "green"}]`), 0o600); err != nil {
		tb.Fatal(err)
	}
	for i := range sh.orchestrators {
		labelled("orchestrator", func() {
			o, err := orchestrator.New(orchestrator.Config{Bus: connect(fmt.Sprintf("orch%d", i)), Store: store, Logger: log,
				Answerers:     &answer.Resolver{RulesFile: rules, WebhookSecret: "capacity-webhook-secret", Logger: log},
				RouterWorkers: sh.routers})
			if err != nil {
				tb.Fatal(err)
			}
			if err := o.Start(ctx); err != nil {
				tb.Fatalf("start orchestrator: %v", err)
			}
			tb.Cleanup(func() { _ = o.Stop(context.Background()) })
			s.orchs = append(s.orchs, o)
		})
	}
	for i := range sh.runners {
		labelled("runner", func() {
			id := fmt.Sprintf("capacity-%d-%d-r%d", os.Getpid(), seq.Add(1), i)
			pcfg := procbench.Config{Worker: worker, Image: procbench.Image, Dir: tb.TempDir()}
			var eng compute.Engine
			var err error
			switch sh.engineName() {
			case procbench.Name:
				eng, err = procbench.New(pcfg)
			case procbench.ReplayName:
				var rep *procbench.Replayer
				rep, err = procbench.NewReplayer(procbench.ReplayConfig{Config: pcfg})
				eng = rep
				s.replayers = append(s.replayers, rep)
			default:
				err = fmt.Errorf("engine %q: want %s or %s", sh.engine, procbench.Name, procbench.ReplayName)
			}
			if err != nil {
				tb.Fatal(err)
			}
			r, err := runner.New(runner.Config{ID: id, Slots: sh.slots, Image: procbench.Image, DataDir: tb.TempDir(),
				StorageURI: "file://" + storeDir, Store: store, Bus: connect(id), Engine: labelledEngine{eng}, Grace: 3 * time.Second,
				Logger: log, Trace: func(id string, p runner.Phase, at time.Time) {
					s.traces.Note(id, p, at)
					if p == runner.PhaseDone {
						s.done.Add(1)
					}
				}})
			if err != nil {
				tb.Fatal(err)
			}
			if err := r.Start(ctx); err != nil {
				tb.Fatalf("start runner: %v", err)
			}
			tb.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_ = r.Stop(ctx)
			})
			s.runners = append(s.runners, r)
		})
	}
	s.probe = connect("probe")
	return s
}

// twoRounds asks on round 1, keeping state in partial_state; on round 2 it
// checks the answer and the state came back, and leaves a result. It
// writes its scratch file under $TMPDIR, the dispatch's own /tmp.
func twoRounds() schemas.Subagent {
	return schemas.Subagent{Name: "two-rounds", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", `
set -e
if [ -z "$AGORA_ANSWER" ]; then
  echo '{"seen": 1}' > "$TMPDIR/state.json"
  exec agora-worker ask "Pick a colour" --option red --option green --context "round $AGORA_ROUND" --state "$TMPDIR/state.json"
fi
grep -q '"seen": *1' "$AGORA_RESUME_FILE"
echo "{\"colour\": \"$AGORA_ANSWER\", \"round\": $AGORA_ROUND}" > .agora/result.json
`}}
}

// submit submits n two-round tasks, spread over the orchestrators from a
// few goroutines, as API clients would, and returns their ids and how long
// each Submit call took. A Submit that fails fails the test.
func (s *stack) submit(tb testing.TB, name string, n int) ([]string, []time.Duration) {
	tb.Helper()
	ids, took, errs := s.trySubmit(name, n)
	for _, err := range errs {
		tb.Fatal(err)
	}
	return ids, took
}

// trySubmit is submit that keeps going past a failed Submit: it returns
// the ids whose Submit succeeded, their Submit calls' times, and the
// failures (a benchmark counts them as failed tasks: on a NATS cluster a
// Submit can still answer "task not found" for the task it has just
// created, docs/capacity.md's caveats).
func (s *stack) trySubmit(name string, n int) ([]string, []time.Duration, []error) {
	all := make([]string, n)
	took := make([]time.Duration, n)
	failed := make([]error, n)
	for i := range all {
		all[i] = fmt.Sprintf("cap-%d-%s-%d", os.Getpid(), name, i)
	}
	var wg sync.WaitGroup
	const clients = 4
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				o := s.orchs[i%len(s.orchs)]
				at := time.Now()
				if _, err := o.Submit(context.Background(), wire.SubmitRequest{TaskID: all[i], Subagent: twoRounds(), Route: "lookup"}); err != nil {
					failed[i] = fmt.Errorf("submit %s: %w", all[i], err)
				}
				took[i] = time.Since(at)
			}
		})
	}
	wg.Wait()
	var ids []string
	var times []time.Duration
	var errs []error
	for i, err := range failed {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids, times = append(ids, all[i]), append(times, took[i])
	}
	return ids, times, errs
}

// wait returns once every task in ids has ended and no runner holds a
// dispatch, polling the task records through the first orchestrator.
func (s *stack) wait(tb testing.TB, ids []string, limit time.Duration) {
	tb.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	busy := 0
	// Reading tasks costs CPU the stack shares: every 100 ms.
	err := testutil.Poll(context.Background(), limit, 100*time.Millisecond, func() error {
		pending := maps.Clone(want)
		for id := range pending {
			t, err := s.orchs[0].Get(context.Background(), id)
			if err == nil && t.State.Terminal() {
				delete(want, id)
			}
		}
		busy = 0
		for _, r := range s.runners {
			busy += len(r.Active())
		}
		if len(want) == 0 && busy == 0 {
			return nil
		}
		return fmt.Errorf("%d tasks not ended", len(want))
	})
	if err == nil {
		return
	}
	states := map[string]int{}
	for id := range want {
		if t, err := s.orchs[0].Get(context.Background(), id); err != nil {
			states[err.Error()]++
		} else {
			states[string(t.State)+fmt.Sprintf(" (round %d)", len(t.Rounds))]++
		}
	}
	tb.Fatalf("%d of %d tasks not ended within %s (%d dispatches held by runners): %v", len(want), len(ids), limit, busy, states)
}
