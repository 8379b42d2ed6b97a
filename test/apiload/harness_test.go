package apiload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// plan is one run of the harness.
type plan struct {
	// endpoints are attacked in this order, each at every rate.
	endpoints []string
	rates     []int
	// each is how long one endpoint is attacked at one rate.
	each time.Duration
	// stepUp, when set, attacks the mix from the highest rate on, half as
	// much again each step, until errors begin or the rate passes maxRate.
	stepUp  bool
	maxRate int
	streams int
	// timeout bounds each request: one that takes longer is an error.
	timeout time.Duration
	// profileDir, when set, keeps a CPU profile of serve per attack
	// (serve built with the agorapprof tag).
	profileDir string
	// progress is told each row as it is measured.
	progress func(string)
}

// endpoints the harness knows; mix is them in turn (get twice).
const (
	epSubmit = "submit"
	epGet    = "get"
	epList   = "list"
	epAnswer = "answer"
	epMix    = "mix"
)

var mixOrder = []string{epSubmit, epGet, epList, epGet, epAnswer}

// row is one attack's figures.
type row struct {
	endpoint       string
	rate           int
	requests       uint64
	p50, p99, max  time.Duration
	errors         uint64
	firstError     string
	streamsOpen    int
	streamsEnded   int64
	load           string
	achievedPerSec float64
	// cpu is serve's CPU time (user and system) from the attack's start
	// until the streams have read its changes: what the row's requests
	// cost serve, the delivery of their changes included.
	cpu time.Duration
}

// report is a run's table and what the streams saw.
type report struct {
	rows []row
	// errorsAt is the lowest rate of the step-up with errors (0: none).
	errorsAt     int
	streams      int
	streamsOpen  int
	streamEvents int64
	streamErrors int64
	reconnects   int64
	loadBefore   string
	loadAfter    string
	seeded       int
}

// maxErrorShare is the share of failed requests at which the step-up stops:
// "errors begin".
const maxErrorShare = 0.01

// run starts serve, seeds the questions the answers need, opens the event
// streams and attacks.
func run(tb testing.TB, p plan) report {
	tb.Helper()
	rep := report{streams: p.streams, loadBefore: loadavg()}
	if p.profileDir != "" {
		if err := os.MkdirAll(p.profileDir, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	need := answersNeeded(p)
	dir := tb.TempDir()
	ids := seedQuestions(tb, dir, need)
	rep.seeded = len(ids)
	srv := startServe(tb, dir, p.profileDir != "")
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	st := openStreams(ctx, tb, srv, p.streams)

	tg := &targets{srv: srv, questions: ids}
	if err := tg.init(); err != nil {
		tb.Fatal(err)
	}
	attack := func(ep, label string, rate int) row {
		st.settle()
		var prof *profile
		if p.profileDir != "" {
			prof = srv.profile(tb, p.each, filepath.Join(p.profileDir, fmt.Sprintf("%s-%d.pprof", ep, rate)))
		}
		cpu0 := srv.cpu()
		r := tg.attack(ep, rate, p.each, p.timeout)
		r.endpoint = label
		prof.wait(tb)
		r.streamsOpen, r.streamsEnded, r.load = st.open(), st.ended.Load(), loadavg()
		st.settle()
		r.cpu = srv.cpu() - cpu0
		p.progress(r.line())
		return r
	}
	for _, ep := range p.endpoints {
		for _, rate := range p.rates {
			r := attack(ep, ep, rate)
			rep.rows = append(rep.rows, r)
			if ep == epMix && rep.errorsAt == 0 && r.failing() {
				rep.errorsAt = rate
			}
		}
	}
	// The step-up goes on from the highest rate unless errors began
	// already.
	if p.stepUp && rep.errorsAt == 0 {
		rate := p.rates[len(p.rates)-1]
		for rate = rate * 3 / 2; rate <= p.maxRate; rate = rate * 3 / 2 {
			r := attack(epMix, "mix, stepping up", rate)
			rep.rows = append(rep.rows, r)
			if r.failing() {
				rep.errorsAt = rate
				break
			}
		}
	}
	rep.streamsOpen, rep.streamEvents, rep.streamErrors, rep.reconnects = st.open(), st.events.Load(), st.errorEvents.Load(), st.reconnects.Load()
	rep.loadAfter = loadavg()
	cancel()
	st.wait()
	srv.stop(tb)
	return rep
}

// answersNeeded is how many open questions the plan's answers take.
func answersNeeded(p plan) int {
	n := 0.0
	per := func(ep string, rate int) {
		secs := p.each.Seconds() * float64(rate)
		switch ep {
		case epAnswer:
			n += secs
		case epMix:
			n += secs / float64(len(mixOrder))
		}
	}
	for _, ep := range p.endpoints {
		for _, rate := range p.rates {
			per(ep, rate)
		}
	}
	if p.stepUp {
		for rate := p.rates[len(p.rates)-1] * 3 / 2; rate <= p.maxRate; rate = rate * 3 / 2 {
			per(epMix, rate)
		}
	}
	return int(n*1.05) + 10
}

// failing reports whether errors began in r: at least maxErrorShare of
// its requests failed.
func (r row) failing() bool {
	return r.requests > 0 && float64(r.errors) >= maxErrorShare*float64(r.requests)
}

// line is r as one table row.
func (r row) line() string {
	first := ""
	if r.firstError != "" {
		first = "  (" + clip(r.firstError, 70) + ")"
	}
	cpuPer := 0.0
	if r.requests > 0 {
		cpuPer = ms(r.cpu) / float64(r.requests)
	}
	return fmt.Sprintf("%-18s %6d %8d %9.1f %9.1f %9.1f %7d %6d/%d %9.2f %s%s", r.endpoint, r.rate, r.requests,
		ms(r.p50), ms(r.p99), ms(r.max), r.errors, r.streamsOpen, r.streamsEnded, cpuPer, r.load, first)
}

// table prints the report whole.
func (rep report) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agora serve under vegeta: %d event streams open throughout; %d open questions seeded; load average before %s\n",
		rep.streams, rep.seeded, rep.loadBefore)
	fmt.Fprintf(&b, "%-18s %6s %8s %9s %9s %9s %7s %8s %9s %s\n", "endpoint", "rate/s", "requests", "p50 ms", "p99 ms", "max ms", "errors", "streams", "CPU ms/r", "load average (1, 5, 15 min)")
	for _, r := range rep.rows {
		b.WriteString(r.line() + "\n")
	}
	if rep.errorsAt > 0 {
		fmt.Fprintf(&b, "errors begin (≥ %.0f%% of requests) at %d requests/s of the mix\n", maxErrorShare*100, rep.errorsAt)
	} else {
		b.WriteString("errors begin: not reached\n")
	}
	b.WriteString("errors begin, by endpoint (the lowest rate with ≥ 1% failed):")
	seen := map[string]bool{}
	for _, r := range rep.rows {
		if ep := strings.TrimSuffix(r.endpoint, ", stepping up"); !seen[ep] {
			seen[ep] = true
			at := "not reached"
			for _, o := range rep.rows {
				if strings.TrimSuffix(o.endpoint, ", stepping up") == ep && o.failing() {
					at = strconv.Itoa(o.rate) + "/s"
					break
				}
			}
			fmt.Fprintf(&b, " %s %s;", ep, at)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "streams: %d of %d open at the end; %d task events read, %d error events, %d reconnects; load average after %s\n",
		rep.streamsOpen, rep.streams, rep.streamEvents, rep.streamErrors, rep.reconnects, rep.loadAfter)
	b.WriteString("(streams column: open now / ended so far; CPU ms/r: serve's CPU time per request, from the attack's start until the streams have read its changes)\n")
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// token is the bearer secret serve is given, as a submitter named owner:
// it sees and answers its own tasks, and its list counts only them.
const (
	owner  = "bench"
	secret = "agora_apiload-harness-secret"
)

// asker is the sub-agent of every task: round 1 asks which colour, round
// 2 finishes. serve runs no runner here (see startServe), so the submitted
// tasks stay queued; the questions answered are seeded (seedQuestions).
func asker() schemas.Subagent {
	return schemas.Subagent{Name: "asker", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c",
		`[ -n "$AGORA_ANSWER" ] || exec agora-worker ask "Pick a colour" --option red --option green`}}
}

// seedQuestions stores n tasks waiting on asker's question in the tasks
// bucket of an embedded server on dir/nats, as the orchestrator leaves
// them when round 1 has asked, then stops the server; serve starts on dir
// next. Running n real dispatches would take minutes on this machine and
// their workers' CPU would be in every figure.
func seedQuestions(tb testing.TB, dir string, n int) []string {
	tb.Helper()
	ctx := context.Background()
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Shutdown()
	bs, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "apiload seed"})
	if err != nil {
		tb.Fatal(err)
	}
	defer bs.Close()
	kv, err := bs.KeyValueMarkers(ctx, orchestrator.TaskBucket, "agora tasks, one key per task id", orchestrator.MarkerTTL)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now().UTC().Add(-time.Minute)
	ids := make([]string, n)
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				t := question(i, now)
				data, err := json.Marshal(t)
				if err == nil {
					_, err = kv.Put(ctx, t.ID, data)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
				ids[i] = t.ID
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
	return ids
}

// question is seeded task i: asker's round 1 asked and waits.
func question(i int, now time.Time) *wire.Task {
	id := fmt.Sprintf("q-%06d", i)
	at := now.Add(time.Duration(i) * time.Microsecond)
	req := wire.SubmitRequest{TaskID: id, Subagent: asker(), Input: json.RawMessage(`{"goal":"pick a colour"}`),
		Route: "human=24h", Labels: map[string]string{"batch": "apiload"}}
	return &wire.Task{ID: id, Request: req, Owner: owner, State: wire.StateNeedsInput, CreatedAt: at, UpdatedAt: at,
		Rounds: []wire.Round{{N: 1, Attempt: 1, DispatchID: id + "-r1", State: wire.StateNeedsInput, QueuedAt: at,
			StartedAt: at, EndedAt: at, AskedAt: at, Enqueued: true, StepDeadline: at.Add(24 * time.Hour),
			Question: &schemas.NeedsInput{Question: "Pick a colour", Options: []string{"red", "green"}}}}}
}

// server is agora serve in a process of its own.
type server struct {
	url  string
	cmd  *exec.Cmd
	out  *testutil.Buffer
	done chan struct{}
	// pprof is the address of serve's profiling listener, when built
	// with it.
	pprof string
}

// startServe starts the real agora binary's serve on dir: the embedded
// NATS server, the orchestrator and the API with one token, and no runner
// (--no-runner), so what is measured is the API, the orchestrator and NATS
// alone, not dispatches running beside them.
func startServe(tb testing.TB, dir string, profiled bool) *server {
	tb.Helper()
	bin := agoraBinary(tb, profiled)
	s := &server{url: "http://" + testutil.FreeAddr(tb), out: &testutil.Buffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--data-dir", dir, "--listen", strings.TrimPrefix(s.url, "http://"), "--no-runner")
	s.cmd.Env = append(os.Environ(), "AGORA_TOKENS="+owner+":"+secret, "HOME="+dir)
	if profiled {
		s.pprof = testutil.FreeAddr(tb)
		s.cmd.Env = append(s.cmd.Env, "AGORA_PPROF_LISTEN="+s.pprof)
	}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	tb.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	err := testutil.Poll(context.Background(), 2*time.Minute, 50*time.Millisecond, func() error {
		select {
		case <-s.done:
			return testutil.Permanent(fmt.Errorf("serve exited: %s", s.out.String()))
		default:
		}
		resp, err := http.Get(s.url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("serve did not start: %v\n%s", err, s.out.String())
	}
	return s
}

// agoraBinary builds cmd/agora as a release is built (static, stripped);
// with profiled, with the agorapprof tag (a listener of net/http/pprof at
// $AGORA_PPROF_LISTEN). Not testenv.Binary: that one is built with the
// openapicheck tag, which checks every request and response against
// openapi.json — a test build that cost serve about twice its CPU a
// request here, and made submit's and answer's p99 at 200/s 0.6–3 s where
// the release build's is 10–60 ms (docs/capacity.md). The tests (not the
// benchmark) keep that build: the harness's requests are checked too.
func agoraBinary(tb testing.TB, profiled bool) string {
	tb.Helper()
	if _, bench := tb.(*testing.B); !bench && !profiled {
		return testenv.Binary(tb, "github.com/agoradev/agora/cmd/agora", false)
	}
	out := filepath.Join(tb.TempDir(), "agora")
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}
	if profiled {
		args = append(args, "-tags", "agorapprof")
	}
	cmd := exec.Command("go", append(args, "github.com/agoradev/agora/cmd/agora")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// stop ends serve as an operator does (SIGTERM) and waits for it.
func (s *server) stop(tb testing.TB) {
	tb.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
		tb.Errorf("serve did not stop within a minute of SIGTERM")
	}
}

// cpu is serve's CPU time so far, user and system (/proc/PID/stat; 0
// where there is none).
func (s *server) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// Clock ticks of USER_HZ, 100 a second on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// profile is a CPU profile of serve being taken.
type profile struct {
	done chan error
}

// profile takes a CPU profile of serve for d into file, aside.
func (s *server) profile(tb testing.TB, d time.Duration, file string) *profile {
	tb.Helper()
	p := &profile{done: make(chan error, 1)}
	go func() {
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, max(1, int(d.Seconds()))))
		if err != nil {
			p.done <- err
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		p.done <- err
	}()
	return p
}

func (p *profile) wait(tb testing.TB) {
	tb.Helper()
	if p == nil {
		return
	}
	if err := <-p.done; err != nil {
		tb.Errorf("profile: %v", err)
	}
}

// targets makes vegeta's requests.
type targets struct {
	srv       *server
	header    http.Header
	submit    []byte
	questions []string
	// asked is the next question to answer; got turns over the tasks.
	asked, got, turn atomic.Int64
}

func (tg *targets) init() error {
	tg.header = http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}}
	body, err := json.Marshal(wire.SubmitRequest{Subagent: asker(), Input: json.RawMessage(`{"goal":"pick a colour"}`),
		Labels: map[string]string{"batch": "apiload-submit"}})
	tg.submit = body
	return err
}

// target fills t for one request to ep.
func (tg *targets) target(ep string, t *vegeta.Target) error {
	t.Header, t.Body = tg.header, nil
	switch ep {
	case epSubmit:
		t.Method, t.URL, t.Body = http.MethodPost, tg.srv.url+"/v1/tasks", tg.submit
	case epGet:
		id := tg.questions[int(tg.got.Add(1)-1)%len(tg.questions)]
		t.Method, t.URL = http.MethodGet, tg.srv.url+"/v1/tasks/"+id
	case epList:
		t.Method, t.URL = http.MethodGet, tg.srv.url+"/v1/tasks?limit=50"
	case epAnswer:
		i := int(tg.asked.Add(1) - 1)
		if i >= len(tg.questions) {
			return fmt.Errorf("all %d seeded questions answered", len(tg.questions))
		}
		t.Method, t.URL = http.MethodPost, tg.srv.url+"/v1/tasks/"+tg.questions[i]+"/answer"
		t.Body = []byte(`{"answer":"green"}`)
	case epMix:
		return tg.target(mixOrder[int(tg.turn.Add(1)-1)%len(mixOrder)], t)
	default:
		return fmt.Errorf("unknown endpoint %q", ep)
	}
	return nil
}

// attack sends ep requests at rate a second for d with vegeta.
func (tg *targets) attack(ep string, rate int, d, timeout time.Duration) row {
	a := vegeta.NewAttacker(vegeta.Timeout(timeout), vegeta.KeepAlive(true))
	tr := func(t *vegeta.Target) error { return tg.target(ep, t) }
	var m vegeta.Metrics
	r := row{endpoint: ep, rate: rate}
	for res := range a.Attack(tr, vegeta.Rate{Freq: rate, Per: time.Second}, d, ep) {
		m.Add(res)
		if res.Error != "" || res.Code < 200 || res.Code > 299 {
			r.errors++
			if r.firstError == "" {
				r.firstError = fmt.Sprintf("%d %s %s", res.Code, res.Error, bytes.TrimSpace(res.Body))
			}
		}
	}
	m.Close()
	r.requests, r.p50, r.p99, r.max, r.achievedPerSec = m.Requests, m.Latencies.P50, m.Latencies.P99, m.Latencies.Max, m.Rate
	return r
}

// streams are the open GET /v1/events streams.
type streams struct {
	wg                         sync.WaitGroup
	connected                  atomic.Int64
	events, errorEvents, ended atomic.Int64
	reconnects                 atomic.Int64
	client                     *http.Client
	firstOpen                  sync.WaitGroup
	mu                         sync.Mutex
	lastErr                    string
}

// openStreams opens n event streams, each read whole and reconnected when
// it ends, as a client should, until ctx ends; it returns once each has
// opened once.
func openStreams(ctx context.Context, tb testing.TB, srv *server, n int) *streams {
	tb.Helper()
	st := &streams{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}}
	st.firstOpen.Add(n)
	for range n {
		st.wg.Go(func() { st.follow(ctx, srv) })
	}
	opened := make(chan struct{})
	go func() { st.firstOpen.Wait(); close(opened) }()
	select {
	case <-opened:
	case <-time.After(2 * time.Minute):
		tb.Fatalf("the %d event streams did not all open within 2 minutes (%d open; last error %s)", n, st.open(), st.lastErr)
	}
	return st
}

func (st *streams) open() int { return int(st.connected.Load()) }

// settle waits, up to 15 s, until the streams have read nothing new for
// half a second: the previous attack's changes are through, so they are
// not counted against the next.
func (st *streams) settle() {
	prev := int64(-1)
	_ = testutil.Poll(context.Background(), 15*time.Second, 500*time.Millisecond, func() error {
		n := st.events.Load()
		if n != prev {
			prev = n
			return fmt.Errorf("the streams read %d events so far", n)
		}
		return nil
	})
}

func (st *streams) wait() { st.wg.Wait() }

// follow keeps one stream open until ctx ends.
func (st *streams) follow(ctx context.Context, srv *server) {
	first := true
	for ctx.Err() == nil {
		err := st.once(ctx, srv, func() {
			if first {
				first = false
				st.firstOpen.Done()
			}
		})
		if ctx.Err() != nil {
			break
		}
		st.ended.Add(1)
		if err != nil {
			st.mu.Lock()
			st.lastErr = err.Error()
			st.mu.Unlock()
		}
		st.reconnects.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if first {
		st.firstOpen.Done()
	}
}

// once reads one stream until it ends.
func (st *streams) once(ctx context.Context, srv *server, opened func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/v1/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := st.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("GET /v1/events: %s %s", resp.Status, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	connected := false
	defer func() {
		if connected {
			st.connected.Add(-1)
		}
	}()
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case !connected && bytes.Equal(line, []byte(": stream open")):
			connected = true
			st.connected.Add(1)
			opened()
		case bytes.Equal(line, []byte("event: task")):
			st.events.Add(1)
		case bytes.Equal(line, []byte("event: error")):
			st.errorEvents.Add(1)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
