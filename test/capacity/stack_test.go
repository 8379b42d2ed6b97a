// Package capacity measures agora's own ceiling: the orchestrator, runners
// and NATS with the measuring engine (internal/compute/procbench), which
// runs each dispatch's real agora-worker as a process instead of a
// container, so only the container engine's cost is gone.
// BenchmarkCapacity is `make bench-capacity` (docs/capacity.md);
// TestMeasuringEngine keeps the engine working under `make test`.
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
	"github.com/agoradev/agora/internal/compute/procbench"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/runner"
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
}

func (s shape) String() string {
	str := fmt.Sprintf("%d orch · %d runners × %d slots · NATS %s", s.orchestrators, s.runners, s.slots,
		map[bool]string{true: "1 node", false: strconv.Itoa(s.natsNodes) + "-node cluster R3"}[s.natsNodes == 1])
	if s.routers > 0 {
		str += fmt.Sprintf(" · %d router", s.routers)
	}
	return str
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
	traces  *phaseLog
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
	s := &stack{shape: sh, traces: &phaseLog{at: map[string]map[runner.Phase]time.Time{}}}
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
			eng, err := procbench.New(procbench.Config{Worker: worker, Image: procbench.Image, Dir: tb.TempDir()})
			if err != nil {
				tb.Fatal(err)
			}
			r, err := runner.New(runner.Config{ID: id, Slots: sh.slots, Image: procbench.Image, DataDir: tb.TempDir(),
				StorageURI: "file://" + storeDir, Store: store, Bus: connect(id), Engine: eng, Grace: 3 * time.Second,
				Logger: log, Trace: s.traces.note})
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
// each Submit took.
func (s *stack) submit(tb testing.TB, name string, n int) ([]string, []time.Duration) {
	tb.Helper()
	ids := make([]string, n)
	took := make([]time.Duration, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("cap-%d-%s-%d", os.Getpid(), name, i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	const clients = 4
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				o := s.orchs[i%len(s.orchs)]
				at := time.Now()
				if _, err := o.Submit(context.Background(), wire.SubmitRequest{TaskID: ids[i], Subagent: twoRounds(), Route: "lookup"}); err != nil {
					errs <- fmt.Errorf("submit %s: %w", ids[i], err)
				}
				took[i] = time.Since(at)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return ids, took
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

// phaseLog is the runners' Trace: when each dispatch passed each phase.
type phaseLog struct {
	mu sync.Mutex
	at map[string]map[runner.Phase]time.Time
}

func (l *phaseLog) note(id string, p runner.Phase, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.at[id]
	if m == nil {
		m = map[runner.Phase]time.Time{}
		l.at[id] = m
	}
	if _, ok := m[p]; !ok {
		m[p] = at
	}
}

func (l *phaseLog) of(id string) map[runner.Phase]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.at[id])
}
