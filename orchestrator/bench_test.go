package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// BenchmarkAnswerToNextRound measures, side by side in one run on the same
// image, how long an accepted answer takes to become the next round's
// running sub-agent — Answer called → the round-2 dispatch.started event
// seen on the bus — against the floor of starting that same compiled
// container by hand: engine Create + Start → the worker's dispatch.started
// line on the container's stdout. The agora span is split by the times the
// runner called the engine. It logs a table; docs/benchmarks.md records the
// numbers.
//
//	go test -run '^$' -bench AnswerToNextRound -benchtime 10x ./orchestrator
func BenchmarkAnswerToNextRound(b *testing.B) {
	testenv.NeedDocker(b, workerImage, dockerErr)
	ctx := context.Background()
	s := newBenchStack(b)

	// The bare runs reuse round 2's compiled container: its spec and every
	// directory mounted into it (spec file, restored workspace, staged
	// store, key and cancel directories), copied when the runner creates it
	// in the warm-up round (untimed) — the runner removes them when the
	// round settles — and a fresh copy of each per run, since the worker
	// changes them (it deletes its key file, writes its workspace).
	captured := filepath.Join(b.TempDir(), "captured")
	var template compute.ContainerSpec
	s.eng.setOnCreate(func(spec compute.ContainerSpec) {
		if spec.Labels[compute.LabelRound] != "2" {
			return
		}
		for i, m := range spec.Mounts {
			if err := copyTree(filepath.Join(captured, strconv.Itoa(i)), m.Source); err != nil {
				b.Errorf("copy %s of round 2: %v", m.Target, err)
			}
		}
		template = spec
	})

	var iter int
	// throughAgora submits a task that asks on round 1 and finishes on
	// round 2, waits (untimed) until it asks and round 1's container is
	// gone, then times the answer until round 2 has started.
	throughAgora := func() agoraSpans {
		iter++
		task := s.submit(wire.SubmitRequest{TaskID: fmt.Sprintf("bench-%d-%d", testutil.RunNumber(), iter), Subagent: askerWith(1)})
		s.waitState(task.ID, wire.StateNeedsInput)
		s.waitIdle()
		next := dispatchIDOf(task, 2, 1)
		seen := make(chan time.Time, 1)
		stop, err := s.bus.SubscribeEvents(next, func(ev schemas.Event) {
			if ev.Kind == schemas.KindStarted {
				select {
				case seen <- time.Now():
				default:
				}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		defer stop()

		began := time.Now()
		if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "green", By: "bench"}); err != nil {
			b.Fatalf("Answer: %v", err)
		}
		answered := time.Now()
		var started time.Time
		select {
		case started = <-seen:
		case <-time.After(2 * time.Minute):
			b.Fatalf("no dispatch.started for %s", next)
		}
		m := s.eng.marksOf(next)
		if t := s.waitState(task.ID, wire.StateFinished, wire.StateFailed); t.State != wire.StateFinished {
			b.Fatalf("task %s ended %s: %+v", t.ID, t.State, t.Outcome)
		}
		s.waitIdle()
		return agoraSpans{
			answerCall:  answered.Sub(began),
			toCreate:    m.create.Sub(began),
			createStart: m.started.Sub(m.create),
			toStarted:   started.Sub(m.started),
			total:       started.Sub(began),
		}
	}
	// bare creates and starts the captured container straight on the engine
	// and follows its stdout until the worker prints dispatch.started.
	bare := func() bareSpans {
		iter++
		spec := template
		spec.Name = fmt.Sprintf("agora-bench-bare-%d-%d", testutil.RunNumber(), iter)
		spec.Labels = maps.Clone(template.Labels)
		spec.Labels[runner.LabelRunner] = "bench-bare" // no runner adopts it
		spec.Mounts = slices.Clone(template.Mounts)
		for i := range spec.Mounts {
			fresh := filepath.Join(b.TempDir(), strconv.Itoa(i))
			if err := copyTree(fresh, filepath.Join(captured, strconv.Itoa(i))); err != nil {
				b.Fatal(err)
			}
			spec.Mounts[i].Source = fresh
		}
		seen := make(chan time.Time, 1)
		stdout := &startedWatcher{seen: seen}

		began := time.Now()
		id, err := s.raw.Create(ctx, spec)
		if err != nil {
			b.Fatalf("create the bare container: %v", err)
		}
		defer func() {
			if err := s.raw.Remove(context.Background(), id); err != nil {
				b.Errorf("remove the bare container: %v", err)
			}
		}()
		if err := s.raw.Start(ctx, id); err != nil {
			b.Fatalf("start the bare container: %v", err)
		}
		startedAt := time.Now()
		logsDone := make(chan error, 1)
		go func() { logsDone <- s.raw.Logs(ctx, id, true, stdout, io.Discard) }()
		var started time.Time
		select {
		case started = <-seen:
		case <-time.After(2 * time.Minute):
			b.Fatalf("no dispatch.started line from the bare container")
		}
		if res, err := s.raw.Wait(ctx, id); err != nil || !res.Successful() {
			b.Errorf("bare run: %+v, %v", res, err)
		}
		if err := <-logsDone; err != nil {
			b.Errorf("logs of the bare container: %v", err)
		}
		return bareSpans{createStart: startedAt.Sub(began), toStarted: started.Sub(startedAt), total: started.Sub(began)}
	}

	// Warm up both paths once; the agora one captures the container
	// (setOnCreate(nil) orders that capture before the reads below).
	throughAgora()
	s.eng.setOnCreate(nil)
	if template.Image == "" {
		b.Fatal("round 2's container was not captured")
	}
	bare()
	var agoraRuns []agoraSpans
	var bareRuns []bareSpans
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate the order so both paths share the machine's noise.
		if i%2 == 0 {
			bareRuns = append(bareRuns, bare())
			agoraRuns = append(agoraRuns, throughAgora())
		} else {
			agoraRuns = append(agoraRuns, throughAgora())
			bareRuns = append(bareRuns, bare())
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")

	col := func(f func(agoraSpans) time.Duration) []time.Duration {
		var out []time.Duration
		for _, r := range agoraRuns {
			out = append(out, f(r))
		}
		return out
	}
	bcol := func(f func(bareSpans) time.Duration) []time.Duration {
		var out []time.Duration
		for _, r := range bareRuns {
			out = append(out, f(r))
		}
		return out
	}
	bareTotal := bcol(func(r bareSpans) time.Duration { return r.total })
	agoraTotal := col(func(r agoraSpans) time.Duration { return r.total })
	floor := percentile(bareTotal, 50)
	var sb strings.Builder
	// Nine lines: the testing package cuts a benchmark's log after ten.
	fmt.Fprintf(&sb, "answer → next round's dispatch.started, n=%d, same image and container\n", b.N)
	fmt.Fprintf(&sb, "%-58s %8s %8s %8s\n", "", "p50 ms", "p90 ms", "p50/bare")
	row := func(name string, ds []time.Duration, ratio bool) {
		fmt.Fprintf(&sb, "%-58s %8.1f %8.1f", name, ms(percentile(ds, 50)), ms(percentile(ds, 90)))
		if ratio {
			fmt.Fprintf(&sb, " %7.2f×", float64(percentile(ds, 50))/float64(floor))
		}
		sb.WriteString("\n")
	}
	row("bare: Create + Start → dispatch.started on stdout", bareTotal, true)
	row("  of which Start → dispatch.started line", bcol(func(r bareSpans) time.Duration { return r.toStarted }), false)
	row("agora: Answer called → dispatch.started on the bus", agoraTotal, true)
	row("  Answer call (CAS, enqueue, accepted, outbox flag)", col(func(r agoraSpans) time.Duration { return r.answerCall }), false)
	row("  Answer called → runner calls Create", col(func(r agoraSpans) time.Duration { return r.toCreate }), false)
	row("  Create + Start", col(func(r agoraSpans) time.Duration { return r.createStart }), false)
	row("  Start → dispatch.started relayed and received", col(func(r agoraSpans) time.Duration { return r.toStarted }), false)
	b.ReportMetric(ms(percentile(agoraTotal, 50)), "answer-to-started-ms")
	b.ReportMetric(ms(floor), "bare-to-started-ms")
	b.ReportMetric(float64(percentile(agoraTotal, 50))/float64(floor), "agora/bare")
	if b.N > 1 { // the one-iteration probe run says little
		b.Log(strings.TrimSuffix(sb.String(), "\n"))
	}
}

type agoraSpans struct{ answerCall, toCreate, createStart, toStarted, total time.Duration }

type bareSpans struct{ createStart, toStarted, total time.Duration }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)]
}

// startedWatcher is a container's stdout: it notes when the worker's
// dispatch.started line arrives.
type startedWatcher struct {
	buf  []byte
	seen chan<- time.Time
	done bool
}

func (w *startedWatcher) Write(p []byte) (int, error) {
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := slices.Index(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		var ev schemas.Event
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &ev) == nil && ev.Kind == schemas.KindStarted {
			w.seen <- time.Now()
			w.done = true
			return len(p), nil
		}
	}
}

// benchStack is newStack for benchmarks: embedded NATS, a Docker runner
// and the orchestrator, on testing.TB, logging warnings only, with the
// runner's engine wrapped so the benchmark sees when it creates and starts
// each container.
type benchStack struct {
	tb     testing.TB
	bus    *bus.Bus
	orch   *Orchestrator
	runner *runner.Runner
	raw    compute.Engine
	eng    *markingEngine
}

func newBenchStack(tb testing.TB) *benchStack {
	tb.Helper()
	runnerID := fmt.Sprintf("orch-bench-%d-%d", testutil.RunNumber(), seq.Add(1))
	p := newStackParts(tb, runnerID)
	log := natstest.LoggerLevel(tb, slog.LevelWarn)
	eng := &markingEngine{Engine: p.docker, marks: map[string]*engineMarks{}, dispatchOf: map[string]string{}}
	rc := p.runnerConfig(tb, runnerID, log)
	rc.Engine = eng
	r := startRunner(tb, rc)
	o := startOrchestrator(tb, Config{Bus: p.bus, Store: p.store, Logger: log})
	return &benchStack{tb: tb, bus: p.bus, orch: o, runner: r, raw: p.docker, eng: eng}
}

func (s *benchStack) submit(req wire.SubmitRequest) *wire.Task {
	s.tb.Helper()
	t, err := s.orch.Submit(context.Background(), req)
	if err != nil {
		s.tb.Fatalf("Submit: %v", err)
	}
	return t
}

// waitState polls the task until it is in one of states.
func (s *benchStack) waitState(id string, states ...wire.State) *wire.Task {
	s.tb.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		t, err := s.orch.Get(context.Background(), id)
		if err != nil {
			s.tb.Fatal(err)
		}
		if slices.Contains(states, t.State) {
			return t
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("task %s is %s, want one of %v", id, t.State, states)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitIdle polls until the runner has let go of every dispatch (container
// removed, request acknowledged), so nothing of one measurement runs into
// the next.
func (s *benchStack) waitIdle() {
	s.tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(s.runner.Active()) > 0 {
		if time.Now().After(deadline) {
			s.tb.Fatalf("runner still busy with %v", s.runner.Active())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// markingEngine is the runner's engine, noting when Create is called and
// Start returns for each dispatch.
type markingEngine struct {
	compute.Engine
	mu         sync.Mutex
	marks      map[string]*engineMarks // dispatch id →
	dispatchOf map[string]string       // container id → dispatch id
	onCreate   func(compute.ContainerSpec)
}

type engineMarks struct{ create, started time.Time }

func (e *markingEngine) setOnCreate(fn func(compute.ContainerSpec)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onCreate = fn
}

func (e *markingEngine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	at := time.Now()
	// onCreate runs under the lock, so what it records is visible to
	// whoever calls setOnCreate next.
	e.mu.Lock()
	if e.onCreate != nil {
		e.onCreate(spec)
	}
	e.mu.Unlock()
	id, err := e.Engine.Create(ctx, spec)
	if err == nil {
		dispatch := spec.Labels[compute.LabelDispatchID]
		e.mu.Lock()
		e.marks[dispatch] = &engineMarks{create: at}
		e.dispatchOf[id] = dispatch
		e.mu.Unlock()
	}
	return id, err
}

func (e *markingEngine) Start(ctx context.Context, id string) error {
	err := e.Engine.Start(ctx, id)
	at := time.Now()
	e.mu.Lock()
	if m := e.marks[e.dispatchOf[id]]; m != nil && m.started.IsZero() {
		m.started = at
	}
	e.mu.Unlock()
	return err
}

func (e *markingEngine) marksOf(dispatchID string) engineMarks {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.marks[dispatchID]; m != nil {
		return *m
	}
	return engineMarks{}
}

// copyTree copies the directory src to dst, keeping modes and owners (the
// container's user must find its workspace as the runner left it).
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, 0o600); err != nil {
				return err
			}
		default:
			return nil
		}
		if d.Type()&fs.ModeSymlink == 0 {
			if err := os.Chmod(target, info.Mode().Perm()); err != nil {
				return err
			}
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil && !os.IsPermission(err) {
				return err
			}
		}
		return nil
	})
}
