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
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
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

	// The bare runs reuse round 2's compiled container: its spec, its spec
	// file and its restored workspace, copied when the runner creates it in
	// the warm-up round (untimed), and a fresh copy of the workspace per run.
	captured := filepath.Join(b.TempDir(), "captured")
	var template compute.ContainerSpec
	s.eng.setOnCreate(func(spec compute.ContainerSpec) {
		if spec.Labels[compute.LabelRound] != "2" {
			return
		}
		for _, m := range spec.Mounts {
			var dst string
			switch m.Target {
			case "/agora":
				dst = filepath.Join(captured, "spec")
			case "/workspace":
				dst = filepath.Join(captured, "workspace")
			default:
				continue
			}
			if err := copyTree(dst, m.Source); err != nil {
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
		task := s.submit(SubmitRequest{TaskID: fmt.Sprintf("bench-%d-%d", os.Getpid(), iter), Subagent: askerWith(1)})
		s.waitState(task.ID, StateNeedsInput)
		s.waitIdle()
		next := task.dispatchID(2, 1)
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
		if _, err := s.orch.Answer(ctx, AnswerRequest{TaskID: task.ID, Answer: "green", By: "bench"}); err != nil {
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
		if t := s.waitState(task.ID, StateFinished, StateFailed); t.State != StateFinished {
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
		ws := filepath.Join(b.TempDir(), "ws")
		if err := copyTree(ws, filepath.Join(captured, "workspace")); err != nil {
			b.Fatal(err)
		}
		spec := template
		spec.Name = fmt.Sprintf("agora-bench-bare-%d-%d", os.Getpid(), iter)
		spec.Labels = maps.Clone(template.Labels)
		spec.Labels[runner.LabelRunner] = "bench-bare" // no runner adopts it
		spec.Mounts = slices.Clone(template.Mounts)
		for i, m := range spec.Mounts {
			switch m.Target {
			case "/agora":
				spec.Mounts[i].Source = filepath.Join(captured, "spec")
			case "/workspace":
				spec.Mounts[i].Source = ws
			}
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
	ctx := context.Background()
	srv := natstest.Start(tb)
	b, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: tb.Name()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	storeDir := tb.TempDir()
	store, err := storage.Open(ctx, "file://"+storeDir, storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := docker.New(docker.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	runnerID := fmt.Sprintf("orch-bench-%d-%d", os.Getpid(), seq.Add(1))
	tb.Cleanup(func() {
		left, _ := raw.List(context.Background(), map[string]string{runner.LabelRunner: runnerID})
		for _, c := range left {
			tb.Errorf("container %s of dispatch %s left behind", c.ID[:12], c.Labels[compute.LabelDispatchID])
			_ = raw.Remove(context.Background(), c.ID)
		}
		raw.Close()
	})
	log := natstest.LoggerLevel(tb, slog.LevelWarn)
	eng := &markingEngine{Engine: raw, marks: map[string]*engineMarks{}, dispatchOf: map[string]string{}}
	r, err := runner.New(runner.Config{ID: runnerID, Slots: 2, Image: workerImage, DataDir: tb.TempDir(),
		StorageURI: "file://" + storeDir, Store: store, Bus: b, Engine: eng, Grace: 3 * time.Second, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Stop(ctx)
	})
	o, err := New(Config{Bus: b, Store: store, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		tb.Fatalf("start orchestrator: %v", err)
	}
	tb.Cleanup(func() { _ = o.Stop(context.Background()) })
	return &benchStack{tb: tb, bus: b, orch: o, runner: r, raw: raw, eng: eng}
}

func (s *benchStack) submit(req SubmitRequest) *Task {
	s.tb.Helper()
	t, err := s.orch.Submit(context.Background(), req)
	if err != nil {
		s.tb.Fatalf("Submit: %v", err)
	}
	return t
}

// waitState polls the task until it is in one of states.
func (s *benchStack) waitState(id string, states ...State) *Task {
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

// BenchmarkAttentionAtScale measures the orchestrator's read side with
// 10,000 tasks in KV — 1,000 waiting on a question with options, the rest
// queued, running or finished — stored the way Submit and apply store
// them: List (attention for all), List by state, and Questions. Only NATS
// runs; nothing is enqueued. It logs a table; docs/benchmarks.md records
// the numbers.
//
//	go test -run '^$' -bench AttentionAtScale -benchtime 5x ./orchestrator
func BenchmarkAttentionAtScale(b *testing.B) {
	const total, open = 10_000, 1_000
	ctx := context.Background()
	srv := natstest.Start(b)
	bs, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer bs.Close()
	o, err := New(Config{Bus: bs, Logger: natstest.LoggerLevel(b, slog.LevelWarn)})
	if err != nil {
		b.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer o.Stop(ctx)

	heapBefore := heapAlloc()
	jsonBytes, err := loadTasks(ctx, o, total, open)
	if err != nil {
		b.Fatal(err)
	}
	heapLoaded := heapAlloc()
	kvBytes, err := streamBytes(ctx, srv.ClientURL(), "KV_"+TaskBucket)
	if err != nil {
		b.Logf("stream info of KV_%s: %v", TaskBucket, err)
	}

	calls := []struct {
		name string
		want int
		fn   func() (int, error)
	}{
		{"List, all (attention for every task)", total, func() (int, error) {
			ts, sum, err := o.List(ctx, ListOptions{})
			if err == nil && sum.Counts[StateNeedsInput] != open {
				err = fmt.Errorf("summary %q", sum.Text)
			}
			return len(ts), err
		}},
		{"List, state=needs_input", open, func() (int, error) {
			ts, _, err := o.List(ctx, ListOptions{State: StateNeedsInput})
			return len(ts), err
		}},
		{"Questions", open, func() (int, error) {
			qs, err := o.Questions(ctx)
			return len(qs), err
		}},
		// The same listing with the cache set aside: what every call cost
		// before the orchestrator kept its tasks decoded.
		{"List, all, read from the bucket (no cache)", total, func() (int, error) {
			o.store.cache.setReady(false)
			defer o.store.cache.setReady(true)
			ts, _, err := o.List(ctx, ListOptions{})
			return len(ts), err
		}},
	}
	// The cache has caught up with the bucket before anything is timed.
	for !o.store.cache.each(func(*Task) {}) {
		time.Sleep(10 * time.Millisecond)
	}
	times := make([][]time.Duration, len(calls))
	allocs := make([]uint64, len(calls))
	var m0, m1 runtime.MemStats
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range calls {
			j := (i + k) % len(calls) // rotate the order
			c := calls[j]
			runtime.ReadMemStats(&m0)
			began := time.Now()
			n, err := c.fn()
			took := time.Since(began)
			runtime.ReadMemStats(&m1)
			if err != nil || n != c.want {
				b.Fatalf("%s = %d items, %v; want %d", c.name, n, err, c.want)
			}
			times[j] = append(times[j], took)
			allocs[j] += m1.TotalAlloc - m0.TotalAlloc
		}
	}
	b.StopTimer()

	// What one full listing holds while a caller has it: the live heap with
	// the result held, less the live heap once it is dropped (both right
	// after a listing, so the in-process server's caches are alike); the
	// least of three, as the server's own churn only adds.
	retained, heldTasks := int64(-1), 0
	for range 3 {
		held, _, err := o.List(ctx, ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		heldTasks = len(held)
		withResult := heapAlloc()
		runtime.KeepAlive(held)
		held = nil
		if d := int64(withResult) - int64(heapAlloc()); retained < 0 || d < retained {
			retained = d
		}
	}

	b.ReportMetric(0, "ns/op")
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d tasks (%d needs_input with options), n=%d, GOMAXPROCS=%d\n", total, open, b.N, runtime.GOMAXPROCS(0))
	fmt.Fprintf(&sb, "%-44s %8s %8s %8s %12s\n", "call", "items", "p50 ms", "max ms", "alloc MB")
	for j, c := range calls {
		p50 := percentile(times[j], 50)
		fmt.Fprintf(&sb, "%-44s %8d %8.1f %8.1f %12.1f\n", c.name, c.want, ms(p50), ms(percentile(times[j], 100)),
			float64(allocs[j])/float64(b.N)/(1<<20))
	}
	b.ReportMetric(ms(percentile(times[0], 50)), "list-all-ms")
	b.ReportMetric(ms(percentile(times[1], 50)), "list-state-ms")
	b.ReportMetric(ms(percentile(times[2], 50)), "questions-ms")
	fmt.Fprintf(&sb, "KV_%s stream bytes: %.1f MB (JSON values: %.1f MB, %d B per task)\n", TaskBucket,
		float64(kvBytes)/(1<<20), float64(jsonBytes)/(1<<20), jsonBytes/total)
	fmt.Fprintf(&sb, "heap after GC: %.1f MB before loading, %.1f MB after (the in-process NATS server's caches and the orchestrator's task cache)\n",
		float64(heapBefore)/(1<<20), float64(heapLoaded)/(1<<20))
	fmt.Fprintf(&sb, "heap held by one List result of %d tasks: %.1f MB\n", heldTasks, float64(retained)/(1<<20))
	b.ReportMetric(float64(retained)/(1<<20), "list-held-MB")
	b.ReportMetric(float64(kvBytes)/(1<<20), "kv-MB")
	if b.N > 1 {
		b.Log("\n" + strings.TrimSuffix(sb.String(), "\n"))
	}
}

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// streamBytes is the stored size of a JetStream stream.
func streamBytes(ctx context.Context, url, stream string) (uint64, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Bytes, nil
}

// loadTasks stores total tasks as Submit and apply would leave them: open
// of them waiting on a question with options, the rest a third each
// queued, running and finished (after one answered question). It returns
// the bytes of JSON stored.
func loadTasks(ctx context.Context, o *Orchestrator, total, open int) (int, error) {
	base := time.Now().UTC().Add(-48 * time.Hour)
	sub := askerWith(1)
	build := func(i int) *Task {
		req := SubmitRequest{TaskID: fmt.Sprintf("t-%06d", i), Subagent: sub,
			Input: json.RawMessage(fmt.Sprintf(`{"goal":"paint room %d"}`, i)), Labels: map[string]string{"batch": fmt.Sprintf("b%d", i%10)}}
		created := base.Add(time.Duration(i) * 10 * time.Second)
		t := &Task{ID: req.TaskID, Request: req, SubagentHash: subagentHash(req), CreatedAt: created, UpdatedAt: created}
		r1 := Round{N: 1, Attempt: 1, DispatchID: t.dispatchID(1, 1), State: StateQueued, QueuedAt: created, Enqueued: true}
		question := &schemas.NeedsInput{Question: "Pick a colour for step 1", Options: []string{"red", "green", "blue"},
			Context: "round 1", PartialState: json.RawMessage(`{"seen":1}`)}
		exit0 := 0
		usage := &schemas.Usage{Model: "exec", Turns: 1}
		switch {
		case i < open:
			asked := created.Add(2 * time.Second)
			r1.State, r1.StartedAt, r1.EndedAt, r1.ExitCode = StateNeedsInput, created.Add(time.Second), asked, &exit0
			r1.Question, r1.AskedAt, r1.StepDeadline = question, asked, asked.Add(24*time.Hour)
			t.State, t.Rounds = StateNeedsInput, []Round{r1}
		case (i-open)%3 == 0:
			t.State, t.Rounds = StateQueued, []Round{r1}
		case (i-open)%3 == 1:
			r1.State, r1.StartedAt = StateRunning, created.Add(time.Second)
			t.State, t.Rounds = StateRunning, []Round{r1}
		default:
			asked, answered := created.Add(2*time.Second), created.Add(time.Minute)
			r1.State, r1.StartedAt, r1.EndedAt, r1.ExitCode, r1.Usage = StateNeedsInput, created.Add(time.Second), asked, &exit0, usage
			r1.Question, r1.AskedAt = question, asked
			r1.Answer = &Answer{Value: "green", By: "alice", Channel: "api", At: answered, WaitMS: answered.Sub(asked).Milliseconds()}
			r1.Decisions = []Decision{{Step: "api", Result: "answered", Detail: "by alice", At: answered}}
			r2 := Round{N: 2, Attempt: 1, DispatchID: t.dispatchID(2, 1), State: StateFinished, QueuedAt: answered,
				StartedAt: answered.Add(time.Second), EndedAt: answered.Add(3 * time.Second), ExitCode: &exit0, Usage: usage, Enqueued: true}
			t.State, t.Rounds, t.WaitedMS = StateFinished, []Round{r1, r2}, r1.Answer.WaitMS
			t.Outcome = &Outcome{Reason: "finished", Detail: "round 2 finished"}
		}
		return t
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		size     int
		firstErr error
		next     = make(chan int)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := build(i)
				data, err := json.Marshal(t)
				if err == nil {
					err = o.store.create(ctx, t)
				}
				mu.Lock()
				size += len(data)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	return size, firstErr
}
