package orchestrator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/runner/runnertest"
	"github.com/agoradev/agora/wire"
)

// Flags of BenchmarkThroughput (go test … -args -tasks=1000 -slots=4).
var (
	throughputTasks  = flag.Int("tasks", 40, "BenchmarkThroughput: tasks of two rounds each, per side")
	throughputSlots  = flag.Int("slots", 4, "BenchmarkThroughput: the runner's slots, and the bare side's containers at a time")
	throughputBlocks = flag.Int("blocks", 2, "BenchmarkThroughput: the tasks are run in this many blocks per side, alternating agora and bare (ABBA…) so both share the machine's noise")
	throughputLogs   = flag.Bool("bare-logs", false, "BenchmarkThroughput: a third side, the bare containers with their output followed from Start to the end as the runner does")
	throughputCPU    = flag.String("throughput-cpuprofile", "", "BenchmarkThroughput: write a CPU profile of the agora blocks (orchestrator, runner and NATS, all in this process) to this file")
)

// BenchmarkThroughput runs -tasks tasks of two rounds each through agora —
// embedded NATS, the orchestrator, a Docker runner with -slots slots — with
// the sub-agent's question answered automatically by a lookup rule, and
// side by side in the same run the same 2·tasks containers straight on the
// engine, -slots at a time: Create, Start, Wait, Remove, nothing else. The
// bare containers are the ones the runner created in a warm-up task (round
// 1 and round 2: image, command, environment, mounts, user), each with a
// fresh copy of the files the runner had mounted, made before the clock
// runs. It logs tasks per minute for each side, their ratio, and where a
// dispatch's time goes inside agora, from the runner's Trace phases and
// the task records. docs/benchmarks.md, "Throughput at the floor".
//
//	make bench-throughput    # = go test -run '^$' -bench Throughput -benchtime 1x -timeout 3h ./orchestrator -args -tasks=1000 -slots=4
func BenchmarkThroughput(b *testing.B) {
	testenv.NeedDocker(b, workerImage, dockerErr)
	tasks, slots, blocks := *throughputTasks, *throughputSlots, max(*throughputBlocks, 1)
	s := newThroughputStack(b, slots)

	// Warm-up: one task through agora, capturing its two containers.
	s.eng.capture = filepath.Join(b.TempDir(), "captured")
	s.runAgora(b, "warm", 1)
	s.eng.mu.Lock()
	templates := slices.Clone(s.eng.captured)
	s.eng.capture = ""
	s.eng.mu.Unlock()
	if len(templates) != 2 {
		b.Fatalf("the warm-up captured %d containers, want 2 (rounds 1 and 2)", len(templates))
	}
	s.traces.Reset()
	s.tasks, s.submits = nil, nil

	var res throughputResult
	for b.Loop() {
		res = throughputResult{tasks: tasks, slots: slots, blocks: blocks}
		per := tasks / blocks
		for i := range blocks {
			n := per
			if i == blocks-1 {
				n = tasks - per*(blocks-1)
			}
			// A B L, L B A, A B L, …: each side first as often as last.
			sides := []string{"agora", "bare", "bare+logs"}
			if !*throughputLogs {
				sides = sides[:2]
			}
			if i%2 == 1 {
				slices.Reverse(sides)
			}
			for _, side := range sides {
				if side == "agora" {
					var stop func()
					if *throughputCPU != "" {
						stop = startProfile(b, *throughputCPU, i)
					}
					took := s.runAgora(b, fmt.Sprintf("b%d", i), n)
					fmt.Printf("block %d: agora, %d tasks: %.1f s\n", i, n, took.Seconds())
					res.agora += took
					if stop != nil {
						stop()
					}
				} else {
					follow := side == "bare+logs"
					took := s.runBare(b, templates, fmt.Sprintf("b%d%s", i, map[bool]string{true: "l"}[follow]), n, follow)
					fmt.Printf("block %d: %s, %d tasks: %.1f s\n", i, side, n, took.Seconds())
					if follow {
						res.bareLogs += took
					} else {
						res.bare += took
					}
				}
			}
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(res.perMinute(res.agora), "agora-tasks/min")
	b.ReportMetric(res.perMinute(res.bare), "bare-tasks/min")
	b.ReportMetric(float64(res.agora)/float64(res.bare), "agora/bare")
	// Printed whole: the testing package cuts a benchmark's log after ten
	// lines.
	res.failed = s.failed
	fmt.Println(res.table(s.parts()))
}

// startProfile starts a CPU profile into path (block i after the first
// gets its own file) and returns what stops it.
func startProfile(b *testing.B, path string, block int) func() {
	if block > 0 {
		path = fmt.Sprintf("%s.%d", path, block)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

type throughputResult struct {
	tasks, slots, blocks, failed int
	agora, bare, bareLogs        time.Duration
}

func (r throughputResult) perMinute(d time.Duration) float64 {
	return float64(r.tasks) / d.Minutes()
}

func (r throughputResult) table(parts []partRow) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "throughput: %d tasks of 2 rounds (%d containers) per side, %d slots, %d blocks per side; %d tasks failed\n",
		r.tasks, 2*r.tasks, r.slots, r.blocks, r.failed)
	fmt.Fprintf(&sb, "%-44s %10s %10s %8s\n", "", "wall s", "tasks/min", "ratio")
	fmt.Fprintf(&sb, "%-44s %10.1f %10.1f %7.3f×\n", "bare: Create, Start, Wait, Remove", r.bare.Seconds(), r.perMinute(r.bare), 1.0)
	if r.bareLogs > 0 {
		fmt.Fprintf(&sb, "%-44s %10.1f %10.1f %7.3f×\n", "bare + output followed (Logs, as the runner)", r.bareLogs.Seconds(), r.perMinute(r.bareLogs), float64(r.bareLogs)/float64(r.bare))
	}
	fmt.Fprintf(&sb, "%-44s %10.1f %10.1f %7.3f×\n", "agora: submit → every task finished", r.agora.Seconds(), r.perMinute(r.agora), float64(r.agora)/float64(r.bare))
	fmt.Fprintf(&sb, "%-44s %10s %10s %10s %8s\n", "part (per dispatch unless said)", "mean ms", "p50 ms", "p90 ms", "of slot")
	for _, p := range parts {
		share := ""
		if p.slotShare >= 0 {
			share = fmt.Sprintf("%7.1f%%", 100*p.slotShare)
		}
		fmt.Fprintf(&sb, "%-44s %10.1f %10.1f %10.1f %8s\n", p.name, p.mean, p.p50, p.p90, share)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// throughputStack is the agora side: embedded NATS, file storage, the
// runner on the real engine (its engine wrapped to capture containers) and
// the orchestrator answering by a lookup rule.
type throughputStack struct {
	orch     *Orchestrator
	runner   *runner.Runner
	raw      compute.Engine
	eng      *capturingEngine
	traces   *runnertest.PhaseLog
	runnerID string
	// tasks are the ids of the measured tasks, for parts.
	tasks []string
	// submits are how long each Submit call took.
	submits []time.Duration
	mu      sync.Mutex
	// bareSpans are the bare containers' spans, by whether their output
	// was followed.
	bareSpans map[bool][]bareSpans3
	// finished counts the tasks run so far, warm-up included; failed those
	// that ended other than finished.
	finished, failed int
}

func newThroughputStack(tb testing.TB, slots int) *throughputStack {
	tb.Helper()
	runnerID := fmt.Sprintf("throughput-%d-%d", testutil.RunNumber(), seq.Add(1))
	p := newStackParts(tb, runnerID, runnerID+"-bare")
	rules := filepath.Join(tb.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(`[{"question": "^Pick a colour", "answer": "green"}]`), 0o600); err != nil {
		tb.Fatal(err)
	}
	log := natstest.LoggerLevel(tb, slog.LevelWarn)
	s := &throughputStack{raw: p.docker, bareSpans: map[bool][]bareSpans3{}, traces: runnertest.NewPhaseLog(), runnerID: runnerID}
	s.eng = &capturingEngine{Engine: p.docker}
	rc := p.runnerConfig(tb, runnerID, log)
	rc.Slots, rc.Engine, rc.Trace = slots, s.eng, s.traces.Note
	s.runner = startRunner(tb, rc)
	s.orch = startOrchestrator(tb, Config{Bus: p.bus, Store: p.store, Logger: log, Answerers: &answer.Resolver{RulesFile: rules, Logger: log}})
	return s
}

// runAgora submits n tasks that ask on round 1 (answered by the lookup
// rule) and finish on round 2, and returns the time from the first submit
// until every task is finished and the runner has let go of every
// dispatch.
func (s *throughputStack) runAgora(b *testing.B, name string, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("tp-%d-%s-%d", testutil.RunNumber(), name, i)
	}
	began := time.Now()
	for _, id := range ids {
		at := time.Now()
		if _, err := s.orch.Submit(ctx, wire.SubmitRequest{TaskID: id, Subagent: askerWith(1), Route: "lookup"}); err != nil {
			b.Fatalf("Submit %s: %v", id, err)
		}
		s.submits = append(s.submits, time.Since(at))
	}
	deadline := time.Now().Add(time.Duration(n)*10*time.Second + 5*time.Minute)
	for {
		done := 0
		if err := s.orch.EachTaskStats(ctx, func(st *TaskStats) {
			if st.State.Terminal() {
				done++
			}
		}); err != nil {
			b.Fatal(err)
		}
		done -= s.finished
		if done == n && len(s.runner.Active()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks finished by the deadline", done, n)
		}
		time.Sleep(100 * time.Millisecond) // reading every task's stats costs CPU the stack shares
	}
	took := time.Since(began)
	// A task that ended other than finished is agora's failure: it is
	// counted in the time, and reported.
	for _, id := range ids {
		if t, err := s.orch.Get(ctx, id); err != nil || t.State != wire.StateFinished {
			s.failed++
			if err == nil {
				b.Errorf("task %s ended %s: %+v", id, t.State, t.Outcome)
			} else {
				b.Error(err)
			}
		}
	}
	s.tasks = append(s.tasks, ids...)
	s.finished += n
	return took
}

// runBare runs n copies of each captured container straight on the
// engine, slots at a time, each with fresh copies of its mounts made
// before the clock runs, and returns the wall time.
func (s *throughputStack) runBare(b *testing.B, templates []capturedContainer, name string, n int, follow bool) time.Duration {
	b.Helper()
	ctx := context.Background()
	root := b.TempDir()
	var specs []compute.ContainerSpec
	for i := range n {
		for r, tpl := range templates {
			spec := tpl.spec
			spec.Name = fmt.Sprintf("agora-bare-%d-%s-%d-r%d", testutil.RunNumber(), name, i, r+1)
			spec.Labels = maps.Clone(tpl.spec.Labels)
			spec.Labels[runner.LabelRunner] = s.runnerID + "-bare" // no runner adopts it
			spec.Mounts = slices.Clone(tpl.spec.Mounts)
			for m := range spec.Mounts {
				src, ok := tpl.copies[m]
				if !ok {
					continue
				}
				dst := filepath.Join(root, fmt.Sprintf("%d-r%d-m%d", i, r+1, m))
				if err := copyTree(dst, src); err != nil {
					b.Fatal(err)
				}
				spec.Mounts[m].Source = dst
			}
			specs = append(specs, spec)
		}
	}
	// The copies go to disk before the clock runs, not during the block.
	syscall.Sync()
	work := make(chan compute.ContainerSpec)
	var wg sync.WaitGroup
	errs := make(chan error, len(specs))
	began := time.Now()
	for range *throughputSlots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for spec := range work {
				sp, err := runOne(ctx, s.raw, spec, follow)
				if err != nil {
					errs <- err
					continue
				}
				s.mu.Lock()
				s.bareSpans[follow] = append(s.bareSpans[follow], sp)
				s.mu.Unlock()
			}
		}()
	}
	for _, spec := range specs {
		work <- spec
	}
	close(work)
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		b.Error(err)
	}
	return took
}

// runOne is the floor for one container: create, start, wait, remove;
// with follow, its output is also followed from Start to its end, as the
// runner does. It returns the three engine spans.
func runOne(ctx context.Context, eng compute.Engine, spec compute.ContainerSpec, follow bool) (bareSpans3, error) {
	var sp bareSpans3
	began := time.Now()
	id, err := eng.Create(ctx, spec)
	if err != nil {
		return sp, fmt.Errorf("create %s: %w", spec.Name, err)
	}
	removed := false
	defer func() {
		if !removed {
			_ = eng.Remove(context.WithoutCancel(ctx), id)
		}
	}()
	if err := eng.Start(ctx, id); err != nil {
		return sp, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	started := time.Now()
	sp.createStart = started.Sub(began)
	logsDone := make(chan error, 1)
	if follow {
		go func() { logsDone <- eng.Logs(ctx, id, true, io.Discard, io.Discard) }()
	} else {
		logsDone <- nil
	}
	res, err := eng.Wait(ctx, id)
	if err != nil || !res.Successful() {
		return sp, fmt.Errorf("bare run of %s: %+v, %v", spec.Name, res, err)
	}
	if err := <-logsDone; err != nil {
		return sp, fmt.Errorf("logs of %s: %w", spec.Name, err)
	}
	exited := time.Now()
	sp.run = exited.Sub(started)
	removed = true
	if err := eng.Remove(ctx, id); err != nil {
		return sp, fmt.Errorf("remove %s: %w", spec.Name, err)
	}
	sp.remove = time.Since(exited)
	return sp, nil
}

// bareSpans3 is where a bare container's time went.
type bareSpans3 struct{ createStart, run, remove time.Duration }

// capturingEngine is the runner's engine; while capture is set, it copies
// each container's bind-mounted host files there as Create is called.
type capturingEngine struct {
	compute.Engine
	mu       sync.Mutex
	capture  string
	captured []capturedContainer
}

type capturedContainer struct {
	spec   compute.ContainerSpec
	copies map[int]string // mount index → copy of its source
}

func (e *capturingEngine) Create(ctx context.Context, spec compute.ContainerSpec) (string, error) {
	e.mu.Lock()
	if e.capture != "" {
		c := capturedContainer{spec: spec, copies: map[int]string{}}
		for i, m := range spec.Mounts {
			dst := filepath.Join(e.capture, fmt.Sprintf("c%d-m%d", len(e.captured), i))
			if err := copyTree(dst, m.Source); err != nil {
				e.mu.Unlock()
				return "", fmt.Errorf("capture %s: %w", m.Source, err)
			}
			c.copies[i] = dst
		}
		e.captured = append(e.captured, c)
	}
	e.mu.Unlock()
	return e.Engine.Create(ctx, spec)
}

// partRow is one line of the parts table; slotShare < 0 for a part
// outside the runner's slot.
type partRow struct {
	name           string
	mean, p50, p90 float64
	slotShare      float64
}

// parts splits the measured tasks' time into agora's parts: the Submit
// call; per dispatch, the runner's phases (queue wait, claim and host
// files, engine create/start, the container's run, output drain and
// relay, settle); and the orchestrator's apply, answer and re-dispatch,
// read from the task records.
func (s *throughputStack) parts() []partRow {
	ctx := context.Background()
	var tasks []runnertest.Task
	for _, id := range s.tasks {
		if t, err := s.orch.Get(ctx, id); err == nil {
			tasks = append(tasks, splitTask(t))
		}
	}
	times := s.traces.Split(tasks)
	row := func(name string, ds []time.Duration, share float64) partRow {
		return partRow{name: name, mean: ms(runnertest.Mean(ds)), p50: ms(percentile(ds, 50)), p90: ms(percentile(ds, 90)), slotShare: share}
	}
	slotMean := runnertest.Mean(times.Slot)
	rows := []partRow{
		row("submit (the Submit call, per task)", s.submits, -1),
		row("queue: queued → fetched (mostly a busy slot)", times.Queue, -1),
		row("slot: fetched → done", times.Slot, 1),
	}
	for i, sp := range runnertest.DispatchSpans {
		rows = append(rows, row("  "+sp.Name, times.Spans[i], float64(runnertest.Mean(times.Spans[i]))/float64(slotMean)))
	}
	for _, follow := range []bool{false, true} {
		spans := s.bareSpans[follow]
		if len(spans) == 0 {
			continue
		}
		var cs, run, rm, all []time.Duration
		for _, sp := range spans {
			cs, run, rm = append(cs, sp.createStart), append(run, sp.run), append(rm, sp.remove)
			all = append(all, sp.createStart+sp.run+sp.remove)
		}
		name := map[bool]string{false: "bare", true: "bare + logs"}[follow]
		rows = append(rows,
			row(name+": Create → Remove returns", all, -1),
			row("  create/start (engine)", cs, -1),
			row("  container runs: Start → Wait returns", run, -1),
			row("  remove (engine)", rm, -1))
	}
	rows = append(rows,
		row("apply: event stored → task updated", times.Apply, -1),
		row("answer, re-dispatch: asked → round 2 queued", times.Answered, -1),
		row("task: submitted → finished (per task)", times.Total, -1),
	)
	return rows
}

// splitTask is what runnertest.Split reads of a task.
func splitTask(t *wire.Task) runnertest.Task {
	out := runnertest.Task{CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	for _, r := range t.Rounds {
		out.Rounds = append(out.Rounds, runnertest.Round{DispatchID: r.DispatchID, QueuedAt: r.QueuedAt, AskedAt: r.AskedAt})
	}
	return out
}
