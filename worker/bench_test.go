package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	execadapter "github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/schemas"
)

// noop is the runtime of every benchmarked dispatch: it does nothing, so what
// is left is the worker's own cost.
const noop = "/bin/true"

// BenchmarkWorkerOverhead measures what the worker adds to one dispatch
// whose runtime does nothing (/bin/true), against a real NATS server in this
// process. Each iteration runs four things, in a rotating order so they
// share the machine's noise:
//
//   - the floor: exec.Command("/bin/true").Run();
//   - worker.Run in-process for a no-op exec dispatch, split by
//     Result.Timings into start → runtime exec, the runtime itself, and
//     runtime exit → terminal event acknowledged by NATS;
//   - the agora-worker binary (built once, static and stripped, as in the
//     image) started as a process for the same dispatch: the honest
//     per-dispatch cost. `agora-worker version` is timed too, to tell the
//     process's start and package initialisation from the dispatch itself.
//
// Every dispatch gets a fresh workspace and spec file, made outside the
// measured spans, and one untimed round warms caches up first (so the
// in-process rows are the steady state; the binary pays its cold start every
// time, as in a container). ns/op (one round of everything plus that setup)
// means nothing and is suppressed; the metrics are medians and 90th
// percentiles in milliseconds, and the table at the end compares them with
// the floor.
func BenchmarkWorkerOverhead(b *testing.B) {
	if _, err := os.Stat(noop); err != nil {
		b.Fatalf("the no-op runtime: %v", err)
	}
	srv := natstest.Start(b)
	ctx := context.Background()
	events, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "worker benchmark"})
	if err != nil {
		b.Fatalf("connect to NATS: %v", err)
	}
	b.Cleanup(events.Close)
	if err := events.EnsureEventStream(ctx); err != nil {
		b.Fatalf("create the event stream: %v", err)
	}
	workerBin := testenv.Binary(b, "github.com/agoradev/agora/cmd/agora-worker", false)
	beforeBin := os.Getenv(beforeWorkerEnv)
	dir := b.TempDir()

	var s overheadSamples
	var lastInProcess, lastBinary string
	var wholeDispatch func(bin string, last *string) (wall, cpu time.Duration, faults int64)
	seq := 0
	newDispatch := func(kind string) (id, specFile, ws string) {
		seq++
		id = fmt.Sprintf("bench-%s-%d", kind, seq)
		d := filepath.Join(dir, id)
		ws = filepath.Join(d, "workspace")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		specFile = writeSpec(b, d, &schemas.DispatchSpec{DispatchID: id, TaskID: "t-" + id, Round: 1,
			Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{noop}}})
		return id, specFile, ws
	}
	floor := func() {
		t0 := time.Now()
		if err := exec.Command(noop).Run(); err != nil {
			b.Fatalf("exec %s: %v", noop, err)
		}
		s.floor = append(s.floor, time.Since(t0))
	}
	version := func() {
		t0 := time.Now()
		if out, err := exec.Command(workerBin, "version").CombinedOutput(); err != nil {
			b.Fatalf("agora-worker version: %v\n%s", err, out)
		}
		s.version = append(s.version, time.Since(t0))
	}
	inProcess := func() {
		id, specFile, ws := newDispatch("inproc")
		res := Run(ctx, Config{
			DispatchID: id, SpecFile: specFile, Workspace: ws, NATSURL: srv.ClientURL(),
			Environ: []string{"PATH=/usr/bin:/bin"}, Adapters: []adapters.Adapter{execadapter.New()},
		})
		if res.Terminal.Kind != schemas.KindFinished || !res.Published {
			b.Fatalf("worker.Run %s = %s (%+v), published %t; want finished and published", id, res.Terminal.Kind, res.Terminal.Failure, res.Published)
		}
		tm := res.Timings
		s.startToExec = append(s.startToExec, tm.RuntimeExec.Sub(tm.Start))
		s.runtime = append(s.runtime, tm.RuntimeExit.Sub(tm.RuntimeExec))
		s.exitToAck = append(s.exitToAck, tm.Done.Sub(tm.RuntimeExit))
		s.total = append(s.total, tm.Done.Sub(tm.Start))
		s.own = append(s.own, tm.Done.Sub(tm.Start)-tm.RuntimeExit.Sub(tm.RuntimeExec))
		lastInProcess = id
	}
	binary := func() {
		wall, cpu, faults := wholeDispatch(workerBin, &lastBinary)
		s.binary, s.binaryCPU, s.binaryFaults = append(s.binary, wall), append(s.binaryCPU, cpu), append(s.binaryFaults, faults)
	}
	before := func() {
		wall, cpu, faults := wholeDispatch(beforeBin, nil)
		s.before, s.beforeCPU, s.beforeFaults = append(s.before, wall), append(s.beforeCPU, cpu), append(s.beforeFaults, faults)
	}
	wholeDispatch = func(bin string, last *string) (wall, cpu time.Duration, faults int64) {
		id, specFile, ws := newDispatch("bin")
		cmd := exec.Command(bin)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "AGORA_DISPATCH_ID=" + id, "AGORA_SPEC_FILE=" + specFile,
			"AGORA_WORKSPACE=" + ws, "AGORA_NATS_URL=" + srv.ClientURL()}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		err := cmd.Run()
		took := time.Since(t0)
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		ev, perr := schemas.ParseEvent([]byte(lines[len(lines)-1]))
		if err != nil || perr != nil || ev.Kind != schemas.KindFinished {
			b.Fatalf("%s %s: %v; last event %v (%v); want finished\nstdout:\n%s\nstderr:\n%s", bin, id, err, ev, perr, &stdout, &stderr)
		}
		if last != nil {
			*last = id
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			faults = ru.Minflt + ru.Majflt
		}
		return took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), faults
	}

	variants := []func(){floor, inProcess, version, binary}
	if beforeBin != "" {
		variants = append(variants, before)
	}
	for _, v := range variants {
		v() // warm-up, not counted
	}
	s = overheadSamples{}
	for i := 0; b.Loop(); i++ {
		for k := range variants {
			variants[(i+k)%len(variants)]()
		}
	}

	// The last dispatches of each kind were stored once each, in order.
	for _, id := range []string{lastInProcess, lastBinary} {
		stored, err := events.Events(ctx, id)
		if err != nil {
			b.Fatalf("read events of %s: %v", id, err)
		}
		if len(stored) != 2 || stored[0].Kind != schemas.KindStarted || stored[1].Kind != schemas.KindFinished {
			b.Fatalf("events stored for %s = %v, want started then finished", id, stored)
		}
	}
	s.report(b)
}

// beforeWorkerEnv names another agora-worker binary (one built from an
// earlier commit, say) that the binary benchmarks also run, interleaved
// with this tree's, so a change is measured before and after in one run.
const beforeWorkerEnv = "AGORA_BENCH_WORKER_BEFORE"

// overheadSamples are the measured spans, one per iteration each.
type overheadSamples struct {
	floor                                       []time.Duration
	startToExec, runtime, exitToAck, total, own []time.Duration
	version, binary                             []time.Duration
	before                                      []time.Duration // beforeWorkerEnv's binary, when set
	// The CPU time (user + system) of the binary's whole dispatch: less
	// moved by other work on the machine than the wall-clock rows.
	binaryCPU, beforeCPU []time.Duration
	// The page faults of the binary's whole dispatch (getrusage's minor and
	// major): on a VM whose memory the host backs lazily, each costs
	// 10–40 µs, so the pages a process touches are much of its time
	// (docs/benchmarks.md). A count, steady whatever the load.
	binaryFaults, beforeFaults []int64
}

// percentile is the nearest-rank p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report sets the benchmark's metrics and logs the table (benchmark logs are
// printed with or without -v).
func (s *overheadSamples) report(b *testing.B) {
	rows := []struct {
		label, metric string
		ds            []time.Duration
	}{
		{"exec /bin/true (the floor)", "bare-exec", s.floor},
		{"worker.Run in-process: start → runtime exec", "start-to-exec", s.startToExec},
		{"  runtime (/bin/true under internal/proc)", "runtime", s.runtime},
		{"  runtime exit → terminal event acked", "exit-to-ack", s.exitToAck},
		{"  total", "total", s.total},
		{"  the worker's own (total − runtime)", "own", s.own},
		{"agora-worker version (process start, init)", "binary-version", s.version},
		{"agora-worker binary, whole dispatch", "binary", s.binary},
	}
	if len(s.before) > 0 {
		rows = append(rows, struct {
			label, metric string
			ds            []time.Duration
		}{"  the same, " + beforeWorkerEnv + "'s binary", "binary-before", s.before})
	}
	b.ReportMetric(0, "ns/op") // one round of unrelated things; see the doc comment
	for metric, ds := range map[string][]time.Duration{"binary-cpu": s.binaryCPU, "binary-before-cpu": s.beforeCPU} {
		if len(ds) > 0 {
			b.ReportMetric(ms(percentile(ds, 50)), "p50-"+metric+"-ms")
		}
	}
	for metric, fs := range map[string][]int64{"binary": s.binaryFaults, "binary-before": s.beforeFaults} {
		if len(fs) > 0 {
			sorted := slices.Clone(fs)
			slices.Sort(sorted)
			b.ReportMetric(float64(sorted[(len(sorted)-1)/2]), "p50-"+metric+"-faults")
		}
	}
	floor := percentile(s.floor, 50)
	var tbl strings.Builder
	// At most 9 lines: the testing package cuts benchmark logs at 10.
	fmt.Fprintf(&tbl, "worker overhead, n=%d, GOMAXPROCS=%d; columns: p50 ms, p90 ms, p50 × floor\n", len(s.total), runtime.GOMAXPROCS(0))
	for _, r := range rows {
		p50, p90 := percentile(r.ds, 50), percentile(r.ds, 90)
		b.ReportMetric(ms(p50), "p50-"+r.metric+"-ms")
		b.ReportMetric(ms(p90), "p90-"+r.metric+"-ms")
		if r.metric == "total" && len(s.before) > 0 {
			continue // its metrics only: the before row takes its line
		}
		ratio := "-"
		if floor > 0 {
			ratio = fmt.Sprintf("%.1f×", float64(p50)/float64(floor))
		}
		fmt.Fprintf(&tbl, "%-46s %9.2f %9.2f %11s\n", r.label, ms(p50), ms(p90), ratio)
	}
	b.Log(strings.TrimSuffix(tbl.String(), "\n"))
}

// BenchmarkResumeState measures what a large partial_state costs the worker
// of a resumed round: the agora-worker binary (built as in the image) runs
// a no-op round 2 whose spec carries a partial_state_ref into a file://
// store, as the runner stages it, once with a tiny state and once with one
// of about 1 MB, in a rotating order, each with a fresh workspace. With
// AGORA_BENCH_WORKER_BEFORE set, that binary runs the same rounds,
// interleaved. The table gives the medians of exec → exit and the
// difference.
//
//	go test -run '^$' -bench ResumeState -benchtime 20x ./worker
func BenchmarkResumeState(b *testing.B) {
	ctx := context.Background()
	workerBin := testenv.Binary(b, "github.com/agoradev/agora/cmd/agora-worker", false)
	dir := b.TempDir()
	store, err := storage.Open(ctx, "file://"+filepath.Join(dir, "store"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	states := []struct {
		name string
		ref  *schemas.ObjectRef
	}{{name: "tiny"}, {name: "1 MB"}}
	for i, size := range []int{1, 1_000_000} {
		state := benchState(size)
		_, ref, err := storage.PutBlob(ctx, store, bytes.NewReader(state))
		if err != nil {
			b.Fatal(err)
		}
		states[i].ref = &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
	}
	bins := []string{workerBin}
	if before := os.Getenv(beforeWorkerEnv); before != "" {
		bins = append(bins, before)
	}
	seq := 0
	run := func(bin string, which int) time.Duration {
		seq++
		id := fmt.Sprintf("resume-%d", seq)
		d := filepath.Join(dir, id)
		ws := filepath.Join(d, "workspace")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		specFile := writeSpec(b, d, &schemas.DispatchSpec{DispatchID: id, TaskID: "t-" + id, Round: 2,
			Subagent: schemas.Subagent{Name: "noop", Runtime: schemas.RuntimeExec, Command: []string{noop}},
			Resume: &schemas.Resume{Question: "Keep going?", Answer: "yes", PartialStateRef: states[which].ref,
				History: []schemas.HistoryEntry{{Round: 1, Question: "Keep going?", Answer: "yes"}}}})
		cmd := exec.Command(bin)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "AGORA_DISPATCH_ID=" + id, "AGORA_SPEC_FILE=" + specFile,
			"AGORA_WORKSPACE=" + ws, "AGORA_STORAGE_URI=file://" + filepath.Join(dir, "store")}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		err := cmd.Run()
		took := time.Since(t0)
		if err != nil || !strings.Contains(stdout.String(), `"dispatch.finished"`) {
			b.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", bin, id, err, &stdout, &stderr)
		}
		return took
	}
	for _, bin := range bins { // warm-up
		run(bin, 0)
		run(bin, 1)
	}
	took := make([][2][]time.Duration, len(bins))
	for i := 0; b.Loop(); i++ {
		for k := range 2 * len(bins) {
			j := (i + k) % (2 * len(bins))
			bin, which := j/2, j%2
			took[bin][which] = append(took[bin][which], run(bins[bin], which))
		}
	}
	b.ReportMetric(0, "ns/op")
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "round 2 of a no-op dispatch, exec → exit, n=%d each; partial_state of %d B vs %d B; p50 ms\n", len(took[0][0]), states[1].ref.Size, states[0].ref.Size)
	fmt.Fprintf(&tbl, "%-40s %8s %8s %8s", "", "tiny", "1 MB", "diff")
	for i := range bins {
		tiny, large := percentile(took[i][0], 50), percentile(took[i][1], 50)
		label, suffix := "agora-worker (this tree)", ""
		if i > 0 {
			label, suffix = beforeWorkerEnv, "-before"
		}
		b.ReportMetric(ms(tiny), "p50-tiny"+suffix+"-ms")
		b.ReportMetric(ms(large), "p50-large"+suffix+"-ms")
		b.ReportMetric(ms(large-tiny), "large-minus-tiny"+suffix+"-ms")
		fmt.Fprintf(&tbl, "\n%-40s %8.2f %8.2f %+8.2f", label, ms(tiny), ms(large), ms(large-tiny))
	}
	b.Log(tbl.String())
}

// benchState is a partial_state of about size bytes: notes on files, as an
// agent might keep them (many small values, as the orchestrator benchmark's
// sub-agent writes).
func benchState(size int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"notes":[`)
	for n := 0; n == 0 || sb.Len() < size-140; n++ {
		if n > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"file":"src/pkg%d/file%d.go","line":%d,"note":"reads the config, then calls the store; check the error path"}`, n%50, n, n*7)
	}
	sb.WriteString(`],"last":1}`)
	return []byte(sb.String())
}
