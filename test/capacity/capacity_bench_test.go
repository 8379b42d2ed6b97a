package capacity

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute/procbench"
	"github.com/agoradev/agora/runner/runnertest"
	"github.com/agoradev/agora/wire"
)

// Flags of BenchmarkCapacity (go test … -args -capacity-tasks=300).
var (
	capTasks   = flag.Int("capacity-tasks", 150, "BenchmarkCapacity: two-round tasks per configuration (after a warm-up of 10)")
	capSlots   = flag.Int("capacity-slots", 4, "BenchmarkCapacity: slots of each runner")
	capProfile = flag.String("capacity-cpuprofile", "", "BenchmarkCapacity: keep each configuration's CPU profiles (labelled by part) in `DIR`: <configuration>.early.pprof until half the measured dispatches are done, <configuration>.late.pprof after")
	capEngines = flag.String("capacity-engines", "process,replay", "BenchmarkCapacity: the measuring engine's modes to run each configuration on, side by side: process (the worker each time), replay (a recorded run per dispatch shape)")
	capShapes  = flag.String("capacity-shapes", "", "BenchmarkCapacity: only these configurations, comma-separated ORCHxRUNNERS[xNODES][/rN], e.g. 1x4,1x4x3,2x4,1x4/r1 (/rN: N router workers; default: 1x1,1x4,1x16,1x4x3,2x4,1x4/r1,1x4x3/r1)")
)

// BenchmarkCapacity measures agora's own ceiling on the measuring engine
// (no containers; the real worker as a process, or, in replay mode, a
// recorded run of it replayed), each configuration on both modes side by
// side (-capacity-engines): for each configuration —
// one orchestrator with 1, 4 and 16 runners, the same with a 3-node NATS
// cluster, and two orchestrators — it submits -capacity-tasks two-round
// tasks (round 1 asks, a lookup rule answers, round 2 finishes) and
// reports dispatches per second from the first submit to the last task
// ended, events stored per second, the CPU each part used (pprof labels;
// the workers' from rusage), where a dispatch's time goes, and names the
// first part to saturate. It prints the machine's load beside the table.
//
//	make bench-capacity
func BenchmarkCapacity(b *testing.B) {
	shapes, err := parseShapes(*capShapes, *capSlots)
	if err != nil {
		b.Fatal(err)
	}
	loadBefore := loadavg()
	var rows []capRow
	engines := strings.Split(*capEngines, ",")
	for _, eng := range engines {
		if eng != procbench.Name && eng != procbench.ReplayName {
			b.Fatalf("-capacity-engines %q: want %s and/or %s", *capEngines, procbench.Name, procbench.ReplayName)
		}
	}
	for _, sh := range shapes {
		for _, eng := range engines {
			sh.engine = eng
			b.Run(strings.ReplaceAll(sh.key(), " ", ""), func(b *testing.B) {
				for b.Loop() {
					rows = append(rows, measure(b, sh, *capTasks))
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(rows[len(rows)-1].dispatchesPerSec(), "dispatches/s")
			})
		}
	}
	// Printed whole: the testing package cuts a benchmark's log after ten
	// lines.
	fmt.Println(capTable(rows, loadBefore, loadavg()))
}

func (s shape) key() string {
	k := fmt.Sprintf("%dx%d", s.orchestrators, s.runners)
	if s.natsNodes > 1 {
		k += fmt.Sprintf("x%d", s.natsNodes)
	}
	if s.routers > 0 {
		k += fmt.Sprintf("_r%d", s.routers)
	}
	return k + "_" + s.engineName()
}

func parseShapes(list string, slots int) ([]shape, error) {
	if list == "" {
		list = "1x1,1x4,1x16,1x4x3,2x4,1x4/r1,1x4x3/r1"
	}
	var shapes []shape
	for _, f := range strings.Split(list, ",") {
		f, routers, hasRouters := strings.Cut(strings.TrimSpace(f), "/r")
		parts := strings.Split(f, "x")
		nums := make([]int, 0, 3)
		for _, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-capacity-shapes %q: want ORCHxRUNNERS[xNODES] of positive numbers, e.g. 1x4,1x4x3", f)
			}
			nums = append(nums, n)
		}
		if len(nums) < 2 || len(nums) > 3 {
			return nil, fmt.Errorf("-capacity-shapes %q: want ORCHxRUNNERS[xNODES], e.g. 1x4 or 1x4x3", f)
		}
		sh := shape{orchestrators: nums[0], runners: nums[1], slots: slots, natsNodes: 1}
		if len(nums) == 3 {
			sh.natsNodes = nums[2]
		}
		if hasRouters {
			n, err := strconv.Atoi(routers)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-capacity-shapes %q: /rN wants a positive number of router workers", f)
			}
			sh.routers = n
		}
		shapes = append(shapes, sh)
	}
	return shapes, nil
}

// capRow is one configuration's measurement.
type capRow struct {
	shape  shape
	tasks  int
	failed int
	wall   time.Duration
	events uint64
	// cpu is CPU time by part: "orchestrator", "runner", "nats-server",
	// "engine" (the measuring engine's own: process starts, replays),
	// "workers" (the worker processes and their sub-agents), "other"
	// (the benchmark's own submits and polls, the Go runtime, GC).
	cpu   map[string]time.Duration
	parts []partRow
	// stored is what the bus holds per task run so far, by stream or
	// bucket: bytes and messages (keys, for a bucket).
	stored []storedRow
	// recorded and replayed count the measured dispatches that ran the
	// worker and those replayed (replay mode).
	recorded, replayed int64
	// runnerHalves is the runner's CPU ms per dispatch over the first
	// half of the measured dispatches and over the second.
	runnerHalves [2]float64
}

// runHalves profiles a run in two halves: until a number of dispatches is
// done, then the rest. Its watch (switchAt) ends before the run's last stop.
type runHalves struct {
	s     *stack
	paths [2]string
	f     *os.File
	cur   int
	used  []int
	// self is the process's CPU (rusage) in each half, done the
	// dispatches finished in it; both hold the start until it ends.
	self [2]time.Duration
	done [2]int64
}

func (h *runHalves) start(i int) error {
	f, err := os.Create(h.paths[i])
	if err != nil {
		return err
	}
	h.self[i], h.done[i] = rusage(syscall.RUSAGE_SELF), h.s.done.Load()
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	h.f, h.cur, h.used = f, i, append(h.used, i)
	return nil
}

// stop ends the current half.
func (h *runHalves) stop() error {
	pprof.StopCPUProfile()
	i := h.cur
	h.self[i], h.done[i] = rusage(syscall.RUSAGE_SELF)-h.self[i], h.s.done.Load()-h.done[i]
	return h.f.Close()
}

// switchAt starts the second half once done reaches at; the returned
// func ends the watch (the run is over) and returns once it has ended.
func (h *runHalves) switchAt(at int64, tb testing.TB) func() {
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for h.s.done.Load() < at {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
		if err := h.stop(); err != nil {
			tb.Error(err)
			return
		}
		if err := h.start(1); err != nil {
			tb.Error(err)
		}
	}()
	return func() {
		close(quit)
		<-ended
	}
}

// storedRow is one stream's or bucket's size per task.
type storedRow struct {
	name                string
	bytesPerTask        float64
	msgsPerTask         float64
	subjectsPerDispatch float64
}

// storedStreams are what the model of docs/capacity.md sizes: the
// events, the queue and the buckets (a bucket is the stream KV_<name>).
var storedStreams = []string{bus.EventStream, bus.QueueStream, "KV_agora_tasks", "KV_agora_dispatch_index", "KV_" + bus.ClaimBucket, "KV_" + bus.RunnerBucket}

func (r capRow) dispatchesPerSec() float64 { return float64(2*r.tasks) / r.wall.Seconds() }

// measure runs one configuration: a warm-up, then tasks two-round tasks
// under a CPU profile.
func measure(b *testing.B, sh shape, tasks int) capRow {
	b.Helper()
	s := newStack(b, sh)
	warm, _, errs := s.trySubmit("warm", 10)
	for _, err := range errs {
		b.Logf("warm-up: %v", err)
	}
	s.wait(b, warm, 5*time.Minute)

	js := jetStream(b, s.urls)
	eventsBefore := streamMsgs(b, js, bus.EventStream)
	// Two profiles: until half the measured dispatches are done, and the
	// rest, so one run shows whether a dispatch costs more late than early.
	profiles := [2]string{filepath.Join(b.TempDir(), "early.pprof"), filepath.Join(b.TempDir(), "late.pprof")}
	if *capProfile != "" {
		profiles = [2]string{filepath.Join(*capProfile, sh.key()+".early.pprof"), filepath.Join(*capProfile, sh.key()+".late.pprof")}
	}
	halves := &runHalves{s: s, paths: profiles}
	childBefore := rusage(syscall.RUSAGE_CHILDREN)
	if err := halves.start(0); err != nil {
		b.Fatal(err)
	}
	// Stopped here too when the run fails half-way, or the next
	// configuration could not profile.
	b.Cleanup(pprof.StopCPUProfile)
	switched := halves.switchAt(s.done.Load()+int64(tasks), b)
	recBefore, repBefore := s.workerRuns()
	began := time.Now()
	ids, submits, submitErrs := s.trySubmit(fmt.Sprintf("m%d", seq.Add(1)), tasks)
	s.wait(b, ids, time.Duration(tasks)*time.Second+2*time.Minute)
	wall := time.Since(began)
	switched()
	if err := halves.stop(); err != nil {
		b.Fatal(err)
	}
	child := rusage(syscall.RUSAGE_CHILDREN) - childBefore
	row := capRow{shape: sh, tasks: tasks, wall: wall, events: streamMsgs(b, js, bus.EventStream) - eventsBefore, failed: len(submitErrs)}
	for _, err := range submitErrs {
		b.Log(err)
	}
	rec, rep := s.workerRuns()
	row.recorded, row.replayed = rec-recBefore, rep-repBefore
	for _, id := range ids {
		t, err := s.orchs[0].Get(context.Background(), id)
		switch {
		case err != nil:
			row.failed++
			b.Logf("task %s: %v", id, err)
		case t.State != wire.StateFinished:
			row.failed++
			data, _ := json.Marshal(t)
			b.Logf("task %s ended %s: %s", id, t.State, data)
		}
	}
	if row.failed > 0 {
		b.Errorf("%s: %d of %d tasks did not finish", sh, row.failed, tasks)
	}
	for _, name := range storedStreams {
		st, err := js.Stream(context.Background(), name)
		if err != nil {
			continue // not made in this configuration
		}
		info, err := st.Info(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		all := float64(len(warm) + tasks)
		row.stored = append(row.stored, storedRow{name: name, bytesPerTask: float64(info.State.Bytes) / all,
			msgsPerTask: float64(info.State.Msgs) / all, subjectsPerDispatch: float64(info.State.NumSubjects) / (2 * all)})
	}
	row.cpu = map[string]time.Duration{}
	for _, i := range halves.used {
		cpu := cpuByPart(b, halves.paths[i], halves.self[i])
		for part, d := range cpu {
			row.cpu[part] += d
		}
		row.runnerHalves[i] = ms(cpu["runner"]) / float64(max(halves.done[i], 1))
	}
	row.cpu["workers"] = child
	row.parts = s.parts(ids, submits)
	fmt.Printf("%s: %d tasks in %.1f s, %.1f dispatches/s\n", sh, tasks, wall.Seconds(), row.dispatchesPerSec())
	return row
}

func jetStream(tb testing.TB, urls string) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}

func streamMsgs(tb testing.TB, js jetstream.JetStream, name string) uint64 {
	tb.Helper()
	st, err := js.Stream(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.Msgs
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tagLine is a line of `go tool pprof -tags`: "  1.20s (45.11%): runner".
var tagLine = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s|m|h)\s+\(\s*[0-9.]+%\):\s+(\S+)\s*$`)

// cpuByPart splits this process's CPU time (self, from rusage) by the
// pprof label "part", read with the Go toolchain's own pprof; what no part
// carries is "other".
func cpuByPart(tb testing.TB, profile string, self time.Duration) map[string]time.Duration {
	tb.Helper()
	out, err := exec.Command("go", "tool", "pprof", "-tags", "-tagfocus=part=.", profile).CombinedOutput()
	cpu := map[string]time.Duration{}
	if err != nil {
		tb.Logf("go tool pprof -tags: %v\n%s", err, out)
		cpu["other"] = self
		return cpu
	}
	sampled := map[string]time.Duration{}
	var labelled time.Duration
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := tagLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[1] + strings.ReplaceAll(m[2], "us", "µs"))
		if err != nil {
			continue
		}
		sampled[m[3]] += d
		labelled += d
	}
	// The profile samples at 100 Hz; scale its split to rusage's total,
	// which counts every nanosecond. What the labels do not cover
	// (runtime, GC, the benchmark itself) is "other".
	total := totalSampled(tb, profile)
	if total <= 0 {
		total = labelled
	}
	for part, d := range sampled {
		cpu[part] = time.Duration(float64(self) * float64(d) / float64(total))
	}
	var parts time.Duration
	for _, d := range cpu {
		parts += d
	}
	cpu["other"] = max(self-parts, 0)
	return cpu
}

// totalSampled is the profile's total sampled CPU, labelled or not.
var totalLine = regexp.MustCompile(`Total samples = ([0-9.]+)(ns|us|µs|ms|s|m|h)`)

func totalSampled(tb testing.TB, profile string) time.Duration {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=1", profile).CombinedOutput()
	if err != nil {
		tb.Logf("go tool pprof -top: %v", err)
		return 0
	}
	m := totalLine.FindSubmatch(out)
	if m == nil {
		return 0
	}
	d, _ := time.ParseDuration(string(m[1]) + strings.ReplaceAll(string(m[2]), "us", "µs"))
	return d
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// partRow is one line of the time split: per dispatch unless said.
type partRow struct {
	name           string
	mean, p50, p90 time.Duration
}

// parts splits the measured tasks' time as BenchmarkThroughput does
// (runnertest.Split): the Submit call; per dispatch the wait on the
// queue, the runner's phases, and the orchestrator's apply, answer and
// re-dispatch, read from the task records.
func (s *stack) parts(ids []string, submits []time.Duration) []partRow {
	var tasks []runnertest.Task
	for _, id := range ids {
		t, err := s.orchs[0].Get(context.Background(), id)
		if err != nil {
			continue
		}
		task := runnertest.Task{CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
		for _, r := range t.Rounds {
			task.Rounds = append(task.Rounds, runnertest.Round{DispatchID: r.DispatchID, QueuedAt: r.QueuedAt, AskedAt: r.AskedAt})
		}
		tasks = append(tasks, task)
	}
	times := s.traces.Split(tasks)
	row := func(name string, ds []time.Duration) partRow {
		return partRow{name: name, mean: runnertest.Mean(ds), p50: runnertest.Percentile(ds, 50), p90: runnertest.Percentile(ds, 90)}
	}
	rows := []partRow{
		row("submit (the Submit call, per task)", submits),
		row("queue: queued → fetched by a slot", times.Queue),
		row("slot: fetched → done", times.Slot),
	}
	for i, sp := range runnertest.DispatchSpans {
		rows = append(rows, row("  "+sp.Name, times.Spans[i]))
	}
	return append(rows,
		row("apply: event stored → task updated", times.Apply),
		row("answer, re-dispatch: asked → round 2 queued", times.Answered),
		row("task: submitted → finished (per task)", times.Total))
}

// cpuParts are the CPU columns, in print order.
var cpuParts = []string{"orchestrator", "runner", "nats-server", "engine", "workers", "other"}

// capTable is the printed result: one line per configuration, the CPU
// split, then each configuration's time split, and the verdict.
func capTable(rows []capRow, loadBefore, loadAfter string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "capacity: the measuring engine (no containers: agora-worker as a process, or a recorded run replayed), two-round tasks (ask, lookup answer, finish)\n")
	fmt.Fprintf(&sb, "machine: %d CPUs; load average (1 5 15 min) %s before, %s after\n", runtime.NumCPU(), loadBefore, loadAfter)
	fmt.Fprintf(&sb, "the run's directories (TMPDIR): %s\n", fileSystem(os.TempDir()))
	fmt.Fprintf(&sb, "%-74s %6s %7s %12s %10s %6s %9s\n", "configuration", "tasks", "wall s", "dispatches/s", "events/s", "failed", "replayed")
	for _, r := range rows {
		replayed := "-"
		if r.shape.engineName() == procbench.ReplayName {
			replayed = fmt.Sprintf("%d/%d", r.replayed, r.recorded+r.replayed)
		}
		fmt.Fprintf(&sb, "%-74s %6d %7.1f %12.1f %10.1f %6d %9s\n", r.shape, r.tasks, r.wall.Seconds(), r.dispatchesPerSec(), float64(r.events)/r.wall.Seconds(), r.failed, replayed)
	}
	fmt.Fprintf(&sb, "\nCPU ms per dispatch, by part (agora's own: orchestrator + runner + nats-server; share of the machine's %d CPUs over the run)\n", runtime.NumCPU())
	fmt.Fprintf(&sb, "%-74s", "configuration")
	for _, p := range cpuParts {
		fmt.Fprintf(&sb, " %13s", p)
	}
	fmt.Fprintf(&sb, " %12s %8s\n", "agora's own", "agora %")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-74s", r.shape)
		var all time.Duration
		for _, p := range cpuParts {
			fmt.Fprintf(&sb, " %13.2f", ms(r.cpu[p])/float64(2*r.tasks))
			all += r.cpu[p]
		}
		own := r.cpu["orchestrator"] + r.cpu["runner"] + r.cpu["nats-server"]
		fmt.Fprintf(&sb, " %12.2f %7.0f%%\n", ms(own)/float64(2*r.tasks), 100*all.Seconds()/r.wall.Seconds()/float64(runtime.NumCPU()))
	}
	fmt.Fprintf(&sb, "\nrunner CPU ms per dispatch, first half of the measured dispatches → second half (a rise: the run makes its own dispatches dearer)\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-74s %6.2f → %.2f\n", r.shape, r.runnerHalves[0], r.runnerHalves[1])
	}
	for _, r := range rows {
		fmt.Fprintf(&sb, "\n%s: where a dispatch's time goes\n", r.shape)
		fmt.Fprintf(&sb, "%-74s %10s %10s %10s\n", "part (per dispatch unless said)", "mean ms", "p50 ms", "p90 ms")
		for _, p := range r.parts {
			fmt.Fprintf(&sb, "%-74s %10.1f %10.1f %10.1f\n", p.name, ms(p.mean), ms(p.p50), ms(p.p90))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintf(&sb, "\nstored on the bus per two-round task (%s)\n", rows[0].shape)
		fmt.Fprintf(&sb, "%-74s %12s %12s %16s\n", "stream or bucket", "bytes/task", "msgs/task", "subjects/dispatch")
		for _, st := range rows[0].stored {
			fmt.Fprintf(&sb, "%-74s %12.0f %12.2f %16.2f\n", st.name, st.bytesPerTask, st.msgsPerTask, st.subjectsPerDispatch)
		}
	}
	fmt.Fprintf(&sb, "\n%s", verdict(rows))
	return strings.TrimSuffix(sb.String(), "\n")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// verdict names the first part to saturate in each configuration: the
// stage a dispatch waited longest in — the queue (every runner slot busy),
// apply (the orchestrator's event pipeline) or the route (the
// orchestrator's router: asked → answered and re-queued) — since waits
// grow in front of the stage that is full; and which of agora's own parts
// used the most CPU. On a machine others load, agora's share of the CPUs
// (the "agora %" column) stays under 100 % however full its stages are.
func verdict(rows []capRow) string {
	var sb strings.Builder
	for _, r := range rows {
		top, topCPU, own := "", time.Duration(0), time.Duration(0)
		for _, p := range []string{"orchestrator", "runner", "nats-server"} {
			own += r.cpu[p]
			if r.cpu[p] > topCPU {
				top, topCPU = p, r.cpu[p]
			}
		}
		stage, wait := "", time.Duration(-1)
		for _, p := range r.parts {
			var name string
			switch {
			case strings.HasPrefix(p.name, "queue:"):
				name = "the runners' slots (queue wait)"
			case strings.HasPrefix(p.name, "apply:"):
				name = "the orchestrator's event apply"
			case strings.HasPrefix(p.name, "answer, re-dispatch:"):
				name = "the orchestrator's router (asked → round 2 queued)"
			default:
				continue
			}
			if p.mean > wait {
				stage, wait = name, p.mean
			}
		}
		fmt.Fprintf(&sb, "first to saturate, %s: %s, %.0f ms mean wait per dispatch; of agora's own CPU, %s uses %.0f%%\n",
			r.shape, stage, ms(wait), top, 100*topCPU.Seconds()/max(own.Seconds(), 1e-9))
	}
	return sb.String()
}

// fileSystem names the file system dir is on, and says when it is ext4
// without a journal: there every inode made costs more the more inodes
// were freed in the last minutes (the kernel skips them, one buffer
// lookup each), so a run that makes and removes files for each dispatch
// makes its own dispatches dearer as it goes (docs/capacity.md).
func fileSystem(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "unknown"
	}
	var point, kind, source string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) {
			continue
		}
		if p := f[4]; (dir == p || strings.HasPrefix(dir, strings.TrimSuffix(p, "/")+"/")) && len(p) >= len(point) {
			point, kind, source = p, f[sep+1], f[sep+2]
		}
	}
	if kind == "" {
		return "unknown"
	}
	out := fmt.Sprintf("%s (%s on %s)", kind, source, point)
	if kind == "ext4" && strings.HasPrefix(source, "/dev/") {
		if journals, _ := filepath.Glob("/proc/fs/jbd2/" + filepath.Base(source) + "-*"); len(journals) == 0 {
			out += ", without a journal: every inode made there costs more the more were freed in the last minutes, so the runner's CPU a dispatch grows with the run (docs/capacity.md)"
		}
	}
	return out
}
