// Package faults is agora's fault suite: the built binaries — a NATS
// server built from the nats-server module, `agora serve` (orchestrator and
// a runner) and a second `agora runner` — run a multi-round batch on the
// real Docker engine while the suite kills them with SIGKILL at random
// moments and brings them back, cancels and removes tasks in every state,
// and feeds stray events. Then it checks that every task ended as it
// should, each dispatch has exactly one terminal event, no round ran
// twice, round 2 saw its answer and partial_state, and nothing is left.
// docs/reliability.md records its figures.
//
// AGORA_FAULT_SEED=N replays a run's schedule (the seed is logged).
package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/nats-io/nats.go"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestMain removes the binaries the harness built.
func TestMain(m *testing.M) {
	os.Exit(testenv.RemovingBinaries(m).Run())
}

// The workload and the faults. Sized to end within a few minutes on two
// cores while other test packages run beside it.
const (
	plainTasks = 16 // two rounds each, answered by the suite
	kills      = 6  // SIGKILLs, each of serve, the runner and NATS twice
	slots      = 2  // per runner; two runners
	deadline   = 5 * time.Minute
)

// op is an operation the suite performs on one task once it is in a state.
type op struct {
	verb  string // "cancel" or "rm"
	state wire.State
}

// ops cover cancel and rm in every state a task can be observed in.
var ops = []op{
	{"cancel", wire.StateQueued}, {"rm", wire.StateQueued},
	{"cancel", wire.StateRunning}, {"rm", wire.StateRunning},
	{"cancel", wire.StateNeedsInput}, {"rm", wire.StateNeedsInput},
	{"cancel", wire.StateFinished}, {"rm", wire.StateFinished},
}

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite runs real processes and containers for minutes")
	}
	seed, rng := faultSeed(t)

	eng := computetest.Docker(t)
	computetest.Busybox(t)
	h := newHarness(t, eng)
	h.startAll()
	c := client.New("http://"+h.apiAddr, "")
	h.waitAPI(c)

	started := time.Now()
	w := newWorkload(t, c, rng)
	w.submit()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(4)
	go func() { defer wg.Done(); w.answer(stop) }()
	go func() { defer wg.Done(); w.operate(stop) }()
	go func() { defer wg.Done(); h.strays(stop) }()
	faultsDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(faultsDone); h.faults(rng, stop) }()

	ended := w.waitEnded(deadline, faultsDone)
	close(stop)
	wg.Wait()
	if !ended {
		h.dumpLogs()
		t.Fatalf("after %s not every task had ended:\n%s", deadline, w.describe())
	}
	elapsed := time.Since(started)
	h.checkNoContainers()
	w.check(h)
	h.checkCreates(w)
	outcomes := w.outcomes()
	h.stopAll()
	if t.Failed() {
		h.dumpLogs()
	}
	t.Logf("figures: seed %d · %d tasks (%d plain two-round, %d with cancel/rm) · %d SIGKILLs (%s) · %d stray events · %d containers · batch ended in %s · outcomes: %s",
		seed, len(w.tasks), plainTasks, len(ops), h.killCount.Load(), h.killsText(), h.strayCount.Load(), h.createCount(), elapsed.Round(time.Second), outcomes)
}

// harness owns the processes and what they share.
type harness struct {
	t          *testing.T
	eng        *docker.Engine
	dir        string
	agora      string
	natsBin    string
	image      string
	natsPort   int
	apiAddr    string
	runnerIDs  []string
	procs      map[string]*proc
	killCount  atomic.Int64
	strayCount atomic.Int64
	mu         sync.Mutex
	killed     map[string]int
	creates    map[string]int // dispatch id → containers created for it
}

func newHarness(t *testing.T, eng *docker.Engine) *harness {
	t.Helper()
	h := &harness{t: t, eng: eng, dir: t.TempDir(), procs: map[string]*proc{}, killed: map[string]int{}, creates: map[string]int{}}
	h.agora, h.natsBin, h.image = buildAll(t, eng, "faults")
	h.natsPort = freePort(t)
	h.apiAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	h.runnerIDs = []string{fmt.Sprintf("faults-serve-%d", testutil.RunNumber()), fmt.Sprintf("faults-runner-%d", testutil.RunNumber())}
	// Registered before any process starts, so it runs after they stop:
	// whatever a failed run left is removed.
	t.Cleanup(func() {
		for _, id := range h.runnerIDs {
			left, _ := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
			for _, c := range left {
				_ = eng.Remove(context.Background(), c.ID)
			}
		}
	})
	h.watchCreates()
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", h.natsPort)
	storage := "file://" + filepath.Join(h.dir, "storage")
	h.procs["nats"] = &proc{name: "nats", bin: h.natsBin, args: []string{"-a", "127.0.0.1", "-p", strconv.Itoa(h.natsPort),
		"-js", "-sd", filepath.Join(h.dir, "nats"), "--server_name", "faults"}}
	h.procs["serve"] = &proc{name: "serve", bin: h.agora, args: []string{"serve", "--nats", natsURL, "--storage", storage,
		"--data-dir", filepath.Join(h.dir, "serve"), "--listen", h.apiAddr, "--slots", strconv.Itoa(slots),
		"--image", h.image, "--id", h.runnerIDs[0]}}
	h.procs["runner"] = &proc{name: "runner", bin: h.agora, args: []string{"runner", "--nats", natsURL, "--storage", storage,
		"--data-dir", filepath.Join(h.dir, "runner"), "--slots", strconv.Itoa(slots), "--image", h.image,
		"--id", h.runnerIDs[1], "--grace", "3s"}}
	for _, p := range h.procs {
		p.logPath = filepath.Join(h.dir, p.name+".log")
	}
	t.Cleanup(h.stopAll)
	return h
}

// proc is one process the suite starts, kills and restarts.
type proc struct {
	name, bin, logPath string
	args, env          []string // env: added to the suite's own
	mu                 sync.Mutex
	cmd                *exec.Cmd
	exited             chan struct{}
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "==== start %s %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(append(os.Environ(), "CI=true", openapitest.Env(t)), p.env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
	p.cmd, p.exited = cmd, exited
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
}

// stop interrupts the process and waits for it to stop (a minute at most).
func (p *proc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

func (h *harness) startAll() {
	for _, name := range []string{"nats", "serve", "runner"} {
		h.procs[name].start(h.t)
		if name == "nats" {
			h.waitPort(h.natsPort)
		}
	}
}

func (h *harness) stopAll() {
	for _, name := range []string{"runner", "serve", "nats"} {
		h.procs[name].stop()
	}
}

func (h *harness) waitPort(port int) {
	h.t.Helper()
	testutil.Eventually(h.t, 30*time.Second, fmt.Sprintf("port %d", port), func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (h *harness) waitAPI(c *client.Client) {
	h.t.Helper()
	testutil.Eventually(h.t, 2*time.Minute, "the API of agora serve", func() bool {
		_, err := c.List(context.Background(), wire.ListOptions{})
		return err == nil
	})
}

// faults kills one process at a time with SIGKILL at random moments and
// brings it back after a random pause: each of serve, the runner and NATS
// twice, in a seeded order.
func (h *harness) faults(rng *rand.Rand, stop <-chan struct{}) {
	victims := []string{"serve", "runner", "nats", "serve", "runner", "nats"}[:kills]
	rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
	pauses := make([]time.Duration, len(victims))
	downs := make([]time.Duration, len(victims))
	for i := range victims {
		pauses[i] = time.Duration(3000+rng.IntN(5000)) * time.Millisecond
		downs[i] = time.Duration(200+rng.IntN(1800)) * time.Millisecond
	}
	for i, name := range victims {
		select {
		case <-stop:
			return
		case <-time.After(pauses[i]):
		}
		p := h.procs[name]
		h.t.Logf("fault %d: SIGKILL %s, back in %s", i+1, name, downs[i])
		p.kill()
		h.killCount.Add(1)
		h.mu.Lock()
		h.killed[name]++
		h.mu.Unlock()
		time.Sleep(downs[i])
		p.start(h.t)
		if name == "nats" {
			h.waitPort(h.natsPort)
		}
	}
}

func (h *harness) killsText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("serve ×%d, runner ×%d, NATS ×%d", h.killed["serve"], h.killed["runner"], h.killed["nats"])
}

// strays publishes events no task can use, every few hundred milliseconds
// until stopped: for unknown tasks by task id and by dispatch id only, off
// the schema, of an unknown kind, and on another dispatch's subject.
func (h *harness) strays(stop <-chan struct{}) {
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", h.natsPort), nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		h.t.Errorf("connect for stray events: %v", err)
		return
	}
	defer nc.Close()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	bodies := []struct{ subject, body string }{
		{"agora.events.ghost-r1", `{"kind":"dispatch.finished","dispatch_id":"ghost-r1","task_id":"ghost","time":"` + now + `","exit_code":0,"duration_ms":1}`},
		{"agora.events.nobody-r3", `{"kind":"dispatch.cancelled","dispatch_id":"nobody-r3","time":"` + now + `","exit_code":0,"duration_ms":1}`},
		{"agora.events.garbage", `not json at all`},
		{"agora.events.odd-r1", `{"kind":"dispatch.teleported","dispatch_id":"odd-r1","time":"` + now + `"}`},
		{"agora.events.elsewhere-r1", `{"kind":"dispatch.started","dispatch_id":"somebody-else-r1","task_id":"somebody-else","time":"` + now + `"}`},
		{"agora.events.bad-task-r1", `{"kind":"dispatch.started","dispatch_id":"bad-task-r1","task_id":"a b >","time":"` + now + `"}`},
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(300 * time.Millisecond):
		}
		s := bodies[i%len(bodies)]
		// Request, not Publish: JetStream acknowledges what it stored.
		if _, err := nc.Request(s.subject, []byte(s.body), time.Second); err == nil {
			h.strayCount.Add(1)
		}
	}
}

// watchCreates counts, from the engine's event stream, the containers
// created for each dispatch of this suite's runners.
func (h *harness) watchCreates() {
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		h.t.Fatalf("docker client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mine := map[string]bool{h.runnerIDs[0]: true, h.runnerIDs[1]: true}
	msgs, errs := cli.Events(ctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("label", compute.LabelDispatchID))})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-msgs:
				if mine[m.Actor.Attributes[runner.LabelRunner]] {
					h.mu.Lock()
					h.creates[m.Actor.Attributes[compute.LabelDispatchID]]++
					h.mu.Unlock()
				}
			case err := <-errs:
				if ctx.Err() == nil {
					h.t.Errorf("docker events: %v", err)
				}
				return
			}
		}
	}()
	h.t.Cleanup(func() { cancel(); <-done; cli.Close() })
}

// checkCreates: no dispatch got a second container: no round ran twice.
func (h *harness) checkCreates(w *workload) {
	h.t.Helper()
	time.Sleep(time.Second) // the last create events in flight
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, n := range h.creates {
		if n > 1 {
			h.t.Errorf("dispatch %s: %d containers created; a round ran more than once", id, n)
		}
	}
	for _, id := range w.finishedDispatches() {
		if h.creates[id] != 1 {
			h.t.Errorf("dispatch %s finished but %d containers were created for it", id, h.creates[id])
		}
	}
}

func (h *harness) createCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.creates {
		n += c
	}
	return n
}

// checkNoContainers waits for the runners to remove every container.
func (h *harness) checkNoContainers() {
	h.t.Helper()
	var left []string
	ok := waitUntil(time.Minute, func() bool {
		left = left[:0]
		for _, id := range h.runnerIDs {
			cs, err := h.eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
			if err != nil {
				return false
			}
			for _, c := range cs {
				left = append(left, c.Labels[compute.LabelDispatchID]+" ("+c.State+")")
			}
		}
		return len(left) == 0
	})
	if !ok {
		h.t.Errorf("containers left after every task ended: %v", left)
	}
}

func (h *harness) dumpLogs() {
	for _, name := range []string{"nats", "serve", "runner"} {
		f, err := os.Open(h.procs[name].logPath)
		if err != nil {
			continue
		}
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
		if len(lines) > 150 {
			lines = lines[len(lines)-150:]
		}
		h.t.Logf("---- last lines of %s ----\n%s", name, strings.Join(lines, "\n"))
	}
}

// taskPlan is one task of the workload and what should become of it.
type taskPlan struct {
	id, token string
	op        *op
	// Set by operate: what the operation found and did.
	mu         sync.Mutex
	done       bool
	opResult   string // "cancelled", "removed", "wrong_state"
	dispatches []string
}

type workload struct {
	t     *testing.T
	c     *client.Client
	rng   *rand.Rand
	tasks []*taskPlan
}

func newWorkload(t *testing.T, c *client.Client, rng *rand.Rand) *workload {
	w := &workload{t: t, c: c, rng: rng}
	run := fmt.Sprintf("f%d", testutil.RunNumber())
	for i := range plainTasks + len(ops) {
		p := &taskPlan{id: fmt.Sprintf("%s-%02d", run, i), token: fmt.Sprintf("tok%d%d", i, rng.IntN(1e6))}
		if j := i - plainTasks; j >= 0 {
			p.op = &ops[j]
		}
		w.tasks = append(w.tasks, p)
	}
	// The queued-state operations must find their tasks still queued:
	// submitted first, four slots are taken by others before them.
	return w
}

// script asks on round 1 (its token in partial_state) and, on round 2,
// checks that the answer and the partial_state are its own.
func script(token string, sleep1, sleep2 time.Duration) string {
	return fmt.Sprintf(`set -e
if [ -z "$AGORA_ANSWER" ]; then
  sleep %.1f
  echo '{"token":"%s","step":1}' > /tmp/state.json
  agora-worker ask "token please" --state /tmp/state.json
  exit 0
fi
sleep %.1f
[ "$AGORA_ANSWER" = "ans-%s" ] || { echo "round 2 got the answer '$AGORA_ANSWER'" >&2; exit 7; }
grep -q '"token": *"%s"' "$AGORA_RESUME_FILE" || { echo "round 2 lost its partial_state" >&2; exit 8; }
echo "round 2 saw its answer and partial_state"
`, sleep1.Seconds(), token, sleep2.Seconds(), token, token)
}

func (w *workload) submit() {
	w.t.Helper()
	// Operations on queued tasks go in last, behind the others.
	order := append([]*taskPlan(nil), w.tasks...)
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		if order[i].op != nil && order[i].op.state == wire.StateQueued {
			order[i], order[j] = order[j], order[i]
		}
	}
	for _, p := range order {
		sleep1 := time.Duration(300+w.rng.IntN(2500)) * time.Millisecond
		sleep2 := time.Duration(200+w.rng.IntN(1500)) * time.Millisecond
		if p.op != nil && p.op.state == wire.StateRunning {
			sleep1 = 30 * time.Second // long enough to be found running
		}
		req := wire.SubmitRequest{TaskID: p.id, Route: "human",
			Subagent: schemas.Subagent{Name: "faulty", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script(p.token, sleep1, sleep2)}}}
		if err := retry(time.Minute, func() error { _, err := w.c.Submit(context.Background(), req); return err }); err != nil {
			w.t.Fatalf("submit %s: %v", p.id, err)
		}
	}
}

// answer answers every open question with its task's token until stopped;
// the API may be down (serve killed) or the question answered already.
func (w *workload) answer(stop <-chan struct{}) {
	tokens := map[string]string{}
	for _, p := range w.tasks {
		tokens[p.id] = p.token
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		qs, err := w.c.QuestionsAll(context.Background())
		if err != nil {
			continue
		}
		for _, q := range qs {
			p := w.plan(q.TaskID)
			if p == nil || (p.op != nil && p.op.state == wire.StateNeedsInput && !p.isDone()) {
				continue // left waiting for its operation
			}
			_, _ = w.c.Answer(context.Background(), wire.AnswerRequest{TaskID: q.TaskID, Round: q.Round, Answer: "ans-" + tokens[q.TaskID], By: "faults"})
		}
	}
}

func (w *workload) plan(id string) *taskPlan {
	for _, p := range w.tasks {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (p *taskPlan) isDone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// operate performs each task's operation as soon as the task is seen in
// the operation's state.
func (w *workload) operate(stop <-chan struct{}) {
	for {
		pending := 0
		for _, p := range w.tasks {
			if p.op == nil || p.isDone() {
				continue
			}
			pending++
			t, err := w.c.Get(context.Background(), p.id)
			if err != nil || t.State != p.op.state {
				continue
			}
			w.perform(p, t)
		}
		if pending == 0 {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (w *workload) perform(p *taskPlan, t *wire.Task) {
	var dispatches []string
	for _, r := range t.Rounds {
		dispatches = append(dispatches, r.DispatchID)
	}
	var result string
	switch p.op.verb {
	case "cancel":
		_, err := w.c.Cancel(context.Background(), p.id)
		switch {
		case err == nil:
			result = "cancelled"
		case errors.Is(err, wire.ErrWrongState):
			result = "wrong_state"
		default:
			return // the API is down or NATS is: try again
		}
	case "rm":
		if err := w.c.Remove(context.Background(), p.id); err != nil {
			return
		}
		result = "removed"
	}
	w.t.Logf("%s %s while %s: %s", p.op.verb, p.id, t.State, result)
	p.mu.Lock()
	p.done, p.opResult, p.dispatches = true, result, dispatches
	p.mu.Unlock()
}

// waitEnded waits until every task has ended (or is gone after rm) and the
// faults are over.
func (w *workload) waitEnded(d time.Duration, faultsDone <-chan struct{}) bool {
	return waitUntil(d, func() bool {
		select {
		case <-faultsDone:
		default:
			return false
		}
		for _, p := range w.tasks {
			if p.op != nil && !p.isDone() {
				return false
			}
			t, err := w.c.Get(context.Background(), p.id)
			switch {
			case errors.Is(err, wire.ErrNotFound) && p.opResult == "removed":
			case err != nil:
				return false
			case !t.State.Terminal():
				return false
			}
		}
		return true
	})
}

func (w *workload) describe() string {
	var b strings.Builder
	for _, p := range w.tasks {
		t, err := w.c.Get(context.Background(), p.id)
		op := "-"
		if p.op != nil {
			op = p.op.verb + " when " + string(p.op.state)
		}
		if err != nil {
			fmt.Fprintf(&b, "  %s (%s, %s): %v\n", p.id, op, p.opResult, err)
			continue
		}
		fmt.Fprintf(&b, "  %s (%s, %s): %s; %s\n", p.id, op, p.opResult, t.State, t.Attention.Summary)
	}
	return b.String()
}

// check holds every task to what should have become of it.
func (w *workload) check(h *harness) {
	w.t.Helper()
	b, err := bus.Connect(context.Background(), fmt.Sprintf("nats://127.0.0.1:%d", h.natsPort), bus.Options{Name: "faults-check"})
	if err != nil {
		w.t.Fatal(err)
	}
	defer b.Close()
	oneTerminal := func(dispatchID string) {
		stored, err := b.StoredEvents(context.Background(), dispatchID)
		if err != nil {
			w.t.Errorf("events of %s: %v", dispatchID, err)
			return
		}
		var kinds []string
		for _, ev := range stored {
			if ev.Kind.Terminal() {
				kinds = append(kinds, string(ev.Kind))
			}
		}
		if len(kinds) != 1 {
			w.t.Errorf("dispatch %s has %d terminal events %v, want exactly one", dispatchID, len(kinds), kinds)
		}
	}
	for _, p := range w.tasks {
		if p.opResult == "removed" {
			if _, err := w.c.Get(context.Background(), p.id); !errors.Is(err, wire.ErrNotFound) {
				w.t.Errorf("%s was removed but Get says %v", p.id, err)
			}
			for _, d := range p.dispatches {
				oneTerminal(d)
			}
			continue
		}
		t, err := w.c.Get(context.Background(), p.id)
		if err != nil {
			w.t.Errorf("%s: %v", p.id, err)
			continue
		}
		for _, r := range t.Rounds {
			oneTerminal(r.DispatchID)
		}
		if p.opResult == "cancelled" {
			if t.State != wire.StateCancelled {
				w.t.Errorf("%s was cancelled but is %s", p.id, t.State)
			}
			continue
		}
		// Plain tasks, and cancels that came after the task finished.
		if t.State != wire.StateFinished {
			w.t.Errorf("%s is %s (%s), want finished", p.id, t.State, outcome(t))
			continue
		}
		if len(t.Rounds) != 2 || t.Rounds[0].N != 1 || t.Rounds[1].N != 2 || t.Rounds[0].Attempt != 1 || t.Rounds[1].Attempt != 1 {
			w.t.Errorf("%s has rounds %v, want round 1 and round 2 once each", p.id, roundsText(t))
		}
		if a := t.Rounds[0].Answer; a == nil || a.Value != "ans-"+p.token {
			w.t.Errorf("%s round 1 answer = %+v, want ans-%s", p.id, a, p.token)
		}
	}
}

func (w *workload) finishedDispatches() []string {
	var out []string
	for _, p := range w.tasks {
		if p.opResult != "" {
			continue
		}
		t, err := w.c.Get(context.Background(), p.id)
		if err != nil {
			continue
		}
		for _, r := range t.Rounds {
			if r.State == wire.StateFinished || r.State == wire.StateNeedsInput {
				out = append(out, r.DispatchID)
			}
		}
	}
	return out
}

func (w *workload) outcomes() string {
	counts := map[string]int{}
	for _, p := range w.tasks {
		if p.opResult == "removed" {
			counts["removed"]++
			continue
		}
		t, err := w.c.Get(context.Background(), p.id)
		if err != nil {
			counts["unknown"]++
			continue
		}
		counts[string(t.State)]++
	}
	var parts []string
	for _, k := range []string{"finished", "cancelled", "removed", "failed", "expired", "unknown"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

func outcome(t *wire.Task) string {
	if t.Outcome != nil {
		return t.Outcome.Reason + ": " + t.Outcome.Detail
	}
	return "no outcome"
}

func roundsText(t *wire.Task) string {
	var parts []string
	for _, r := range t.Rounds {
		parts = append(parts, fmt.Sprintf("r%d.%d %s", r.N, r.Attempt, r.State))
	}
	return strings.Join(parts, ", ")
}

func freePort(t *testing.T) int { return testutil.FreePort(t) }

// faultPoll is how often the fault suite asks: its checks are whole API
// calls and container listings, not worth doing every 20 ms.
const faultPoll = 100 * time.Millisecond

// waitUntil reports whether ok held within d (testutil.Poll).
func waitUntil(d time.Duration, ok func() bool) bool {
	return testutil.Poll(context.Background(), d, faultPoll, testutil.Cond(ok)) == nil
}

// retry calls fn until it succeeds or d passes, and returns its last error.
func retry(d time.Duration, fn func() error) error {
	return testutil.Poll(context.Background(), d, faultPoll, fn)
}

// buildAll gives the built agora and nats-server (testenv.Binary: built
// once per test binary) and builds the worker image tagged
// agora-worker:<name>-<pid> (removed in t.Cleanup).
func buildAll(t *testing.T, eng *docker.Engine, name string) (agora, natsBin, image string) {
	t.Helper()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	agora = testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true)
	natsBin = testenv.Binary(t, "github.com/nats-io/nats-server/v2", true)
	image = fmt.Sprintf("agora-worker:%s-%d", name, testutil.RunNumber())
	if _, err := images.Build(context.Background(), eng, images.Options{WorkerBinary: worker, Tag: image}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), image) })
	return agora, natsBin, image
}

// faultSeed is the run's seed — $AGORA_FAULT_SEED, else the clock — logged
// so a run can be replayed, and the schedule's random source.
func faultSeed(t *testing.T) (uint64, *rand.Rand) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("AGORA_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AGORA_FAULT_SEED=%q: want a whole number", s)
		}
		seed = v
	}
	t.Logf("seed %d (replay the schedule with AGORA_FAULT_SEED=%d)", seed, seed)
	return seed, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
