package faults

import (
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
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// The cluster workload: sized so the batch spans the faults and the whole
// test stays within a couple of minutes on two cores.
const (
	clusterTasks    = 12 // three rounds each: two questions, then done
	clusterRounds   = 3
	clusterSlots    = 2 // per runner; three runners
	clusterReplicas = 3
	clusterDeadline = 4 * time.Minute
)

// TestClusterFaults runs agora past one machine: a three-node NATS
// JetStream cluster (agora's streams and buckets at R3), versitygw as S3,
// two `agora orchestrator` processes and three `agora runner` processes.
// During a batch of three-round tasks answered through both orchestrators'
// APIs it SIGKILLs one NATS node, one orchestrator and one runner (seeded
// order, victims and moments) and restarts each. Then every task must have
// finished with its own answers, every dispatch exactly one terminal event,
// every dispatch at most one container (exactly one for each round that
// ran), and no container left.
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster fault test runs real processes and containers for minutes")
	}
	seed, rng := faultSeed(t)

	eng := computetest.Docker(t)
	computetest.Busybox(t)
	c := newCluster(t)
	c.agora, c.natsBin, c.image = buildAll(t, eng, "cluster")
	c.configure()
	t.Cleanup(func() {
		for _, id := range c.runnerIDs {
			left, _ := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
			for _, ctr := range left {
				_ = eng.Remove(context.Background(), ctr.ID)
			}
		}
	})
	creates := countCreates(t, c.runnerIDs)
	t.Cleanup(c.stopAll)
	c.startAll()
	clients := []*client.Client{client.New("http://"+c.apiAddrs[0], ""), client.New("http://"+c.apiAddrs[1], "")}
	for i, cl := range clients {
		testutil.Eventually(t, 2*time.Minute, "the API of orchestrator "+strconv.Itoa(i), func() bool {
			_, err := cl.List(context.Background(), wire.ListOptions{})
			return err == nil
		})
	}

	started := time.Now()
	w := &clusterWorkload{t: t, clients: clients, tokens: map[string]string{}}
	run := fmt.Sprintf("c%d", testutil.RunNumber())
	for i := range clusterTasks {
		id := fmt.Sprintf("%s-%02d", run, i)
		w.ids = append(w.ids, id)
		w.tokens[id] = fmt.Sprintf("tok%d%d", i, rng.IntN(1e6))
	}
	w.submit(rng)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	faultsDone := make(chan struct{})
	wg.Add(2)
	go func() { defer wg.Done(); w.answer(stop) }()
	go func() { defer wg.Done(); defer close(faultsDone); c.faults(rng) }()
	ended := waitUntil(clusterDeadline, func() bool {
		select {
		case <-faultsDone:
		default:
			return false
		}
		return w.allEnded()
	})
	close(stop)
	wg.Wait()
	if !ended {
		c.dumpLogs()
		t.Fatalf("after %s not every task had ended:\n%s", clusterDeadline, w.describe())
	}
	elapsed := time.Since(started)

	left := c.containersLeft(eng)
	if left != "" {
		t.Errorf("containers left after every task ended: %s", left)
	}
	dispatches := w.check(c.natsURLs())
	time.Sleep(time.Second) // the last create events in flight
	counts := creates()
	total := 0
	for id, n := range counts {
		total += n
		if n > 1 {
			t.Errorf("dispatch %s: %d containers created; a round ran more than once", id, n)
		}
	}
	for _, id := range dispatches {
		if counts[id] != 1 {
			t.Errorf("dispatch %s ran but %d containers were created for it", id, counts[id])
		}
	}
	outcomes := w.outcomes()
	c.stopAll()
	if t.Failed() {
		c.dumpLogs()
	}
	t.Logf("figures: seed %d · %d tasks × %d rounds · NATS %d nodes, streams and buckets R%d · 2 orchestrators · 3 runners × %d slots · S3 versitygw · %d SIGKILLs (%s) · %d dispatches, %d containers · batch ended in %s · outcomes: %s",
		seed, clusterTasks, clusterRounds, len(c.natsPorts), clusterReplicas, clusterSlots, len(c.kills), strings.Join(c.kills, ", "),
		len(dispatches), total, elapsed.Round(time.Second), outcomes)
}

// cluster owns the processes: nats0-2, s3, orch0-1, runner0-2.
type cluster struct {
	t                   *testing.T
	dir                 string
	agora, natsBin      string
	image               string
	natsPorts, cluPorts []int
	s3Port              int
	apiAddrs            []string
	runnerIDs           []string
	procs               map[string]*proc
	order               []string
	kills               []string
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), procs: map[string]*proc{}}
	for range 3 {
		c.natsPorts = append(c.natsPorts, freePort(t))
		c.cluPorts = append(c.cluPorts, freePort(t))
		c.runnerIDs = append(c.runnerIDs, fmt.Sprintf("cluster-r%d-%d", len(c.runnerIDs), testutil.RunNumber()))
	}
	c.s3Port = freePort(t)
	c.apiAddrs = []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	return c
}

func (c *cluster) natsURLs() string {
	var urls []string
	for _, p := range c.natsPorts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

const (
	s3Access = "clusteraccess"
	s3Secret = "clustersecret"
	s3Bucket = "agora-cluster"
)

func (c *cluster) configure() {
	t := c.t
	add := func(p *proc) {
		p.logPath = filepath.Join(c.dir, p.name+".log")
		c.procs[p.name] = p
		c.order = append(c.order, p.name)
	}
	clusterName := fmt.Sprintf("agora-faults-%d", testutil.RunNumber())
	for i := range 3 {
		var routes []string
		for j, p := range c.cluPorts {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
			}
		}
		add(&proc{name: fmt.Sprintf("nats%d", i), bin: c.natsBin, args: []string{"-a", "127.0.0.1", "-p", strconv.Itoa(c.natsPorts[i]),
			"-js", "-sd", filepath.Join(c.dir, fmt.Sprintf("nats%d", i)), "--server_name", fmt.Sprintf("n%d", i),
			"--cluster_name", clusterName, "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", c.cluPorts[i]), "--routes", strings.Join(routes, ",")}})
	}
	gw, err := versityGW()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err) // as computetest does: no vacuous skip in CI
		}
		t.Skip(err)
	}
	s3Root := filepath.Join(c.dir, "s3")
	if err := os.MkdirAll(s3Root, 0o755); err != nil {
		t.Fatal(err)
	}
	add(&proc{name: "s3", bin: gw, args: []string{"--port", fmt.Sprintf("127.0.0.1:%d", c.s3Port), "--access", s3Access, "--secret", s3Secret, "--quiet", "posix", s3Root}})
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", c.s3Port)
	storage := "s3://" + s3Bucket + "/run?endpoint=" + endpoint + "&path_style=true&region=us-east-1"
	awsEnv := []string{"AWS_ACCESS_KEY_ID=" + s3Access, "AWS_SECRET_ACCESS_KEY=" + s3Secret, "AWS_REGION=us-east-1", "AGORA_DATA_DIR=" + filepath.Join(c.dir, "home")}
	replicas := strconv.Itoa(clusterReplicas)
	for i, addr := range c.apiAddrs {
		add(&proc{name: fmt.Sprintf("orch%d", i), bin: c.agora, env: awsEnv, args: []string{"orchestrator", "--nats", c.natsURLs(),
			"--nats-replicas", replicas, "--storage", storage, "--listen", addr}})
	}
	for i, id := range c.runnerIDs {
		add(&proc{name: fmt.Sprintf("runner%d", i), bin: c.agora, env: awsEnv, args: []string{"runner", "--nats", c.natsURLs(),
			"--nats-replicas", replicas, "--storage", storage, "--data-dir", filepath.Join(c.dir, fmt.Sprintf("runner%d", i)),
			"--slots", strconv.Itoa(clusterSlots), "--image", c.image, "--id", id, "--grace", "3s"}})
	}
}

// versityGW finds the versitygw binary (make tools installs it).
func versityGW() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("versitygw not found on PATH or in GOPATH/bin; install it: make tools")
	}
	return p, nil
}

func (c *cluster) startAll() {
	t := c.t
	for i := range 3 {
		c.procs[fmt.Sprintf("nats%d", i)].start(t)
	}
	for _, p := range c.natsPorts {
		waitPort(t, p)
	}
	c.waitJetStream()
	c.procs["s3"].start(t)
	waitPort(t, c.s3Port)
	c.createBucket()
	for _, name := range c.order {
		if strings.HasPrefix(name, "orch") || strings.HasPrefix(name, "runner") {
			c.procs[name].start(t)
		}
	}
}

// waitJetStream waits until the cluster can create (and delete) an R3
// stream: a meta leader is elected and all three peers are known.
func (c *cluster) waitJetStream() {
	c.t.Helper()
	nc, err := nats.Connect(c.natsURLs(), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
	if err != nil {
		c.t.Fatalf("connect to the cluster: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	var last error
	ok := waitUntil(time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, last = js.CreateStream(ctx, jetstream.StreamConfig{Name: "CLUSTER_PROBE", Subjects: []string{"cluster.probe"}, Replicas: 3}); last != nil {
			return false
		}
		last = js.DeleteStream(ctx, "CLUSTER_PROBE")
		return last == nil
	})
	if !ok {
		c.dumpLogs()
		c.t.Fatalf("the NATS cluster never held an R3 stream: %v", last)
	}
}

func (c *cluster) createBucket() {
	c.t.Helper()
	cl := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(fmt.Sprintf("http://127.0.0.1:%d", c.s3Port)), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s3Access, s3Secret, "")})
	err := retry(20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s3Bucket)})
		return err
	})
	if err != nil {
		c.t.Fatalf("create bucket %s: %v", s3Bucket, err)
	}
}

func (c *cluster) stopAll() {
	for i := len(c.order) - 1; i >= 0; i-- {
		c.procs[c.order[i]].stop()
	}
}

// faults kills one NATS node, one orchestrator and one runner, in a seeded
// order, each at a seeded moment 2–5 s after the last is back, each down for
// 0.5–2 s.
func (c *cluster) faults(rng *rand.Rand) {
	victims := []string{fmt.Sprintf("nats%d", rng.IntN(3)), fmt.Sprintf("orch%d", rng.IntN(2)), fmt.Sprintf("runner%d", rng.IntN(3))}
	rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
	for i, name := range victims {
		pause := time.Duration(2000+rng.IntN(3000)) * time.Millisecond
		down := time.Duration(500+rng.IntN(1500)) * time.Millisecond
		time.Sleep(pause)
		c.t.Logf("fault %d: SIGKILL %s, back in %s", i+1, name, down)
		p := c.procs[name]
		p.kill()
		c.kills = append(c.kills, name)
		time.Sleep(down)
		p.start(c.t)
	}
}

func (c *cluster) containersLeft(eng interface {
	List(context.Context, map[string]string) ([]compute.Container, error)
}) string {
	var left []string
	waitUntil(time.Minute, func() bool {
		left = left[:0]
		for _, id := range c.runnerIDs {
			cs, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: id})
			if err != nil {
				return false
			}
			for _, ctr := range cs {
				left = append(left, ctr.Labels[compute.LabelDispatchID]+" ("+ctr.State+")")
			}
		}
		return len(left) == 0
	})
	return strings.Join(left, ", ")
}

func (c *cluster) dumpLogs() {
	for _, name := range c.order {
		b, err := os.ReadFile(c.procs[name].logPath)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) > 80 {
			lines = lines[len(lines)-80:]
		}
		c.t.Logf("---- last lines of %s ----\n%s", name, strings.Join(lines, "\n"))
	}
}

func waitPort(t *testing.T, port int) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("port %d", port), func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
}

// countCreates follows the engine's events and counts the containers
// created for each dispatch of the given runners; the returned function
// reads the counts.
func countCreates(t *testing.T, runnerIDs []string) func() map[string]int {
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	mine := map[string]bool{}
	for _, id := range runnerIDs {
		mine[id] = true
	}
	var mu sync.Mutex
	counts := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	msgs, errs := cli.Events(ctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("label", compute.LabelDispatchID))})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-msgs:
				if mine[m.Actor.Attributes[runner.LabelRunner]] {
					mu.Lock()
					counts[m.Actor.Attributes[compute.LabelDispatchID]]++
					mu.Unlock()
				}
			case err := <-errs:
				if ctx.Err() == nil {
					t.Errorf("docker events: %v", err)
				}
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cli.Close() })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

// clusterWorkload is the batch: tasks that ask on every round but the
// last and check on each that the answers and partial_state are theirs.
type clusterWorkload struct {
	t       *testing.T
	clients []*client.Client // one per orchestrator
	ids     []string
	tokens  map[string]string
}

// clusterScript asks on rounds 1 and 2 (its token in partial_state) and
// checks, on rounds 2 and 3, that the answer is ans-<token>-<round-1> and
// that .agora/resume.json holds its token.
func clusterScript(token string, sleep time.Duration) string {
	return fmt.Sprintf(`set -e
sleep %.1f
r=${AGORA_ROUND:-1}
if [ "$r" -gt 1 ]; then
  [ "$AGORA_ANSWER" = "ans-%s-$((r-1))" ] || { echo "round $r got the answer '$AGORA_ANSWER'" >&2; exit 7; }
  grep -q '"token": *"%s"' "$AGORA_RESUME_FILE" || { echo "round $r lost its partial_state" >&2; exit 8; }
fi
if [ "$r" -lt %d ]; then
  echo "{\"token\":\"%s\",\"step\":$r}" > /tmp/state.json
  agora-worker ask "token please (round $r)" --state /tmp/state.json
  exit 0
fi
echo "round $r saw its answers and partial_state"
`, sleep.Seconds(), token, token, clusterRounds, token)
}

// any tries fn on each orchestrator, starting with a different one each
// call, until one succeeds.
func (w *clusterWorkload) any(i int, fn func(*client.Client) error) error {
	var err error
	for k := range w.clients {
		if err = fn(w.clients[(i+k)%len(w.clients)]); err == nil {
			return nil
		}
	}
	return err
}

func (w *clusterWorkload) submit(rng *rand.Rand) {
	w.t.Helper()
	for i, id := range w.ids {
		sleep := time.Duration(200+rng.IntN(1300)) * time.Millisecond
		req := wire.SubmitRequest{TaskID: id, Route: "human",
			Subagent: schemas.Subagent{Name: "clustered", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", clusterScript(w.tokens[id], sleep)}}}
		err := retry(time.Minute, func() error {
			return w.any(i, func(c *client.Client) error { _, err := c.Submit(context.Background(), req); return err })
		})
		if err != nil {
			w.t.Fatalf("submit %s: %v", id, err)
		}
	}
}

// answer answers every open question, through the orchestrators in turn,
// until stopped; an orchestrator may be down or the question answered.
func (w *clusterWorkload) answer(stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		var qs []wire.QuestionView
		if w.any(i, func(c *client.Client) error {
			var err error
			qs, err = c.QuestionsAll(context.Background())
			return err
		}) != nil {
			continue
		}
		for j, q := range qs {
			tok, ok := w.tokens[q.TaskID]
			if !ok {
				continue
			}
			req := wire.AnswerRequest{TaskID: q.TaskID, Round: q.Round, Answer: fmt.Sprintf("ans-%s-%d", tok, q.Round), By: "cluster-faults"}
			_ = w.any(i+j, func(c *client.Client) error { _, err := c.Answer(context.Background(), req); return err })
		}
	}
}

func (w *clusterWorkload) get(id string) (*wire.Task, error) {
	var t *wire.Task
	err := w.any(0, func(c *client.Client) error { var err error; t, err = c.Get(context.Background(), id); return err })
	return t, err
}

func (w *clusterWorkload) allEnded() bool {
	for _, id := range w.ids {
		t, err := w.get(id)
		if err != nil || !t.State.Terminal() {
			return false
		}
	}
	return true
}

func (w *clusterWorkload) describe() string {
	var b strings.Builder
	for _, id := range w.ids {
		t, err := w.get(id)
		if err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", id, err)
			continue
		}
		fmt.Fprintf(&b, "  %s: %s (%s); %s\n", id, t.State, roundsText(t), t.Attention.Summary)
	}
	return b.String()
}

// check holds every task to three rounds, once each, with its own answers,
// and every dispatch to exactly one terminal event. It returns the
// dispatches that ran (finished or asked).
func (w *clusterWorkload) check(natsURLs string) []string {
	w.t.Helper()
	b, err := bus.Connect(context.Background(), natsURLs, bus.Options{Name: "cluster-faults-check"})
	if err != nil {
		w.t.Fatal(err)
	}
	defer b.Close()
	var ran []string
	for _, id := range w.ids {
		t, err := w.get(id)
		if err != nil {
			w.t.Errorf("%s: %v", id, err)
			continue
		}
		if t.State != wire.StateFinished {
			w.t.Errorf("%s is %s (%s), want finished", id, t.State, outcome(t))
		}
		if len(t.Rounds) != clusterRounds {
			w.t.Errorf("%s has rounds %s, want %d rounds once each", id, roundsText(t), clusterRounds)
		}
		for i, r := range t.Rounds {
			if r.N != i+1 || r.Attempt != 1 {
				w.t.Errorf("%s has rounds %s, want rounds 1-%d once each", id, roundsText(t), clusterRounds)
				break
			}
		}
		for i, r := range t.Rounds {
			if r.State == wire.StateFinished || r.State == wire.StateNeedsInput {
				ran = append(ran, r.DispatchID)
			}
			if i < clusterRounds-1 {
				if want := fmt.Sprintf("ans-%s-%d", w.tokens[id], r.N); r.Answer == nil || r.Answer.Value != want {
					w.t.Errorf("%s round %d answer = %+v, want %s", id, r.N, r.Answer, want)
				}
			}
			stored, err := storedEvents(b, r.DispatchID)
			if err != nil {
				w.t.Errorf("events of %s: %v", r.DispatchID, err)
				continue
			}
			var kinds []string
			for _, ev := range stored {
				if ev.Kind.Terminal() {
					kinds = append(kinds, string(ev.Kind))
				}
			}
			if len(kinds) != 1 {
				w.t.Errorf("dispatch %s has %d terminal events %v, want exactly one", r.DispatchID, len(kinds), kinds)
			}
		}
	}
	return ran
}

func (w *clusterWorkload) outcomes() string {
	counts := map[wire.State]int{}
	rounds := 0
	for _, id := range w.ids {
		t, err := w.get(id)
		if err != nil {
			counts["unknown"]++
			continue
		}
		counts[t.State]++
		rounds += len(t.Rounds)
	}
	var parts []string
	for _, k := range []wire.State{wire.StateFinished, wire.StateFailed, wire.StateExpired, wire.StateCancelled, "unknown"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("%s (%d rounds)", strings.Join(parts, ", "), rounds)
}

// storedEvents reads a dispatch's events as the check needs them right
// after the last fault: the cluster may still be electing AGORA_EVENTS'
// leader after a node came back (its API then answers nothing for a few
// seconds), so a failed read is tried again for up to bus.EnsureWindow,
// as agora's own writes are.
func storedEvents(b *bus.Bus, dispatchID string) ([]bus.StoredEvent, error) {
	var stored []bus.StoredEvent
	err := testutil.Poll(context.Background(), bus.EnsureWindow, 500*time.Millisecond, func() error {
		var err error
		stored, err = b.StoredEvents(context.Background(), dispatchID)
		return err
	})
	return stored, err
}
