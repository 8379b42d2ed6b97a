package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// examples is where the scale-out example lives, from this package.
const examples = "../../examples/scaling"

// TestDeployFromExamples (issue 20, finding 9) deploys agora past one
// machine as docs/scaling.md says, from examples/scaling as written: the
// identities made by `agora nats-auth init`, three nats-server nodes each
// started from nats-server.conf (with the generated agora-auth.conf
// beside it), S3 (versitygw), and `agora orchestrator` and `agora runner`
// started with the ExecStart lines of their systemd units, agora.env as
// their environment and the credentials their LoadCredential lines name.
// Only what names a host is replaced: host names and ports by loopback,
// /etc/agora and /var/lib by temporary directories, %H by the runner's id,
// and the runner gets --image (its ExecStartPre builds the image; the test
// builds it once). An anonymous client is refused, a missing bucket stops
// the orchestrator at start with a one-line error, and one dispatch goes
// through.
func TestDeployFromExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys a cluster of real processes")
	}
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	c := newCluster(t)
	c.agora, c.natsBin, c.image = buildAll(t, eng, "deploy")
	runnerID := fmt.Sprintf("deploy-%d.example.internal", testutil.RunNumber())
	t.Cleanup(func() {
		left, _ := eng.List(context.Background(), map[string]string{runner.LabelRunner: runnerID})
		for _, ctr := range left {
			t.Errorf("container %s of the runner left behind", ctr.ID)
			_ = eng.Remove(context.Background(), ctr.ID)
		}
	})
	t.Cleanup(c.stopAll)
	add := func(p *proc) {
		p.logPath = filepath.Join(c.dir, p.name+".log")
		c.procs[p.name] = p
		c.order = append(c.order, p.name)
	}

	// 1. The identities (docs/scaling.md, step 1).
	etc := filepath.Join(c.dir, "etc", "agora")
	authDir := filepath.Join(etc, "nats-auth")
	out, err := exec.Command(c.agora, "nats-auth", "init", authDir, "--runner", runnerID, "--max-disk", "1G").CombinedOutput()
	if err != nil {
		t.Fatalf("agora nats-auth init: %v\n%s", err, out)
	}
	if fi, err := os.Stat(authDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, %v; want a 0700 directory", authDir, fi, err)
	}

	// 2. Three NATS nodes from nats-server.conf, each with agora-auth.conf.
	conf := readExample(t, "nats-server.conf")
	authConf, err := os.ReadFile(filepath.Join(authDir, "agora-auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		node := filepath.Join(c.dir, fmt.Sprintf("nats%d", i))
		if err := os.MkdirAll(node, 0o700); err != nil {
			t.Fatal(err)
		}
		var routes []string
		for j, p := range c.cluPorts {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		nodeConf := replaceAll(t, "nats-server.conf", conf,
			"server_name: n1", fmt.Sprintf("server_name: n%d", i+1),
			"listen: 0.0.0.0:4222", fmt.Sprintf("listen: 127.0.0.1:%d", c.natsPorts[i]),
			"store_dir: /var/lib/nats", "store_dir: "+filepath.Join(node, "store"),
			"max_file_store: 20G", "max_file_store: 1G",
			"listen: 0.0.0.0:6222", fmt.Sprintf("listen: 127.0.0.1:%d", c.cluPorts[i]),
			"nats-route://n2.internal:6222", routes[0],
			"nats-route://n3.internal:6222", routes[1],
		)
		write(t, filepath.Join(node, "agora-auth.conf"), authConf)
		write(t, filepath.Join(node, "nats-server.conf"), []byte(nodeConf))
		add(&proc{name: fmt.Sprintf("nats%d", i), bin: c.natsBin, args: []string{"-c", filepath.Join(node, "nats-server.conf")}})
	}
	for i := range 3 {
		c.procs[fmt.Sprintf("nats%d", i)].start(t)
	}
	for _, p := range c.natsPorts {
		waitPort(t, p)
	}
	// Authentication is on: nobody gets in without credentials.
	for _, url := range strings.Split(c.natsURLs(), ",") {
		if nc, err := nats.Connect(url, nats.Timeout(5*time.Second)); err == nil {
			nc.Close()
			c.dumpLogs()
			t.Fatalf("anonymous client connected to %s; want an authorization violation", url)
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Fatalf("anonymous client to %s: %v; want an authorization violation", url, err)
		}
	}
	waitR3(t, c, filepath.Join(authDir, "orchestrator.creds"))

	// 3. S3, and agora.env as shipped but for the NATS URLs and the bucket.
	gw, err := versityGW()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	s3Root := filepath.Join(c.dir, "s3")
	if err := os.MkdirAll(s3Root, 0o755); err != nil {
		t.Fatal(err)
	}
	add(&proc{name: "s3", bin: gw, args: []string{"--port", fmt.Sprintf("127.0.0.1:%d", c.s3Port), "--access", s3Access, "--secret", s3Secret, "--quiet", "posix", s3Root}})
	c.procs["s3"].start(t)
	waitPort(t, c.s3Port)
	storage := "s3://" + s3Bucket + "/agora?endpoint=" + fmt.Sprintf("http://127.0.0.1:%d", c.s3Port) + "&path_style=true&region=us-east-1"
	env := readEnvFile(t, "agora.env")
	for key, want := range map[string]string{"AGORA_NATS": "nats://n1.internal:4222,nats://n2.internal:4222,nats://n3.internal:4222",
		"AGORA_STORAGE": "s3://agora-prod/agora?region=eu-west-1"} {
		if env[key] != want {
			t.Fatalf("agora.env: %s=%q; the test replaces %q", key, env[key], want)
		}
	}
	env["AGORA_NATS"], env["AGORA_STORAGE"] = c.natsURLs(), storage
	procEnv := []string{"AWS_ACCESS_KEY_ID=" + s3Access, "AWS_SECRET_ACCESS_KEY=" + s3Secret, "AWS_REGION=us-east-1", "HOME=" + filepath.Join(c.dir, "home")}
	for k, v := range env {
		procEnv = append(procEnv, k+"="+v)
	}

	// 4. The units' ExecStart lines, as systemd would run them.
	apiAddr := c.apiAddrs[0]
	orchArgs := unitCommand(t, c, "agora-orchestrator.service", env, runnerID, authDir,
		"0.0.0.0:7070", apiAddr)
	runnerArgs := unitCommand(t, c, "agora-runner.service", env, runnerID, authDir,
		"/var/lib/agora/runner", filepath.Join(c.dir, "var", "runner"))
	runnerArgs = append(runnerArgs, "--image", c.image, "--grace", "3s")

	// A bucket that does not exist stops the orchestrator at start.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.agora, orchArgs...)
	cmd.Env = append(os.Environ(), procEnv...)
	out, err = cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), "s3://"+s3Bucket) ||
		!strings.Contains(string(out), "the bucket does not exist") {
		t.Fatalf("orchestrator on a missing bucket: exit %d, %v; want exit 1 naming the bucket:\n%s", code, err, out)
	}
	c.createBucket()

	add(&proc{name: "orch0", bin: c.agora, env: procEnv, args: orchArgs})
	add(&proc{name: "runner0", bin: c.agora, env: procEnv, args: runnerArgs})
	c.procs["orch0"].start(t)
	c.procs["runner0"].start(t)

	// 5. One dispatch through, with the example's ci token.
	secret := strings.SplitN(env["AGORA_TOKEN_CI"], ":", 3)[1]
	cl := client.New("http://"+apiAddr, secret)
	testutil.Eventually(t, 2*time.Minute, "the orchestrator's API", func() bool {
		_, err := cl.List(context.Background(), wire.ListOptions{})
		return err == nil
	})
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	task, err := cl.Submit(ctx, wire.SubmitRequest{TaskID: fmt.Sprintf("deploy-%d", testutil.RunNumber()),
		Subagent: schemas.Subagent{Name: "hello", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", "echo hello from the cluster"}}})
	if err != nil {
		c.dumpLogs()
		t.Fatalf("Submit: %v", err)
	}
	for !task.State.Terminal() {
		if task, err = cl.Wait(ctx, task.ID); err != nil {
			c.dumpLogs()
			t.Fatalf("Wait: %v", err)
		}
	}
	if task.State != wire.StateFinished {
		c.dumpLogs()
		t.Fatalf("task ended %s (%+v); want finished", task.State, task.Attention)
	}
	var logs strings.Builder
	if err := cl.Logs(ctx, task.ID, 1, false, &logs); err != nil || !strings.Contains(logs.String(), "hello from the cluster") {
		t.Errorf("output = %q, %v; want the dispatch's", logs.String(), err)
	}
	for _, name := range []string{"orch0", "runner0"} {
		if b, _ := os.ReadFile(c.procs[name].logPath); strings.Contains(string(b), "NATS LETS ANYONE IN") {
			t.Errorf("%s warned that the bus is open; it is not", name)
		}
	}
	c.stopAll()
	if t.Failed() {
		c.dumpLogs()
	}
}

// waitR3 waits until the cluster holds an R3 stream, connected as the
// orchestrator.
func waitR3(t *testing.T, c *cluster, creds string) {
	t.Helper()
	nc, err := nats.Connect(c.natsURLs(), nats.UserCredentials(creds), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	if !waitUntil(time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, last = js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEPLOY_PROBE", Subjects: []string{"deploy.probe"}, Replicas: 3}); last != nil {
			return false
		}
		last = js.DeleteStream(ctx, "DEPLOY_PROBE")
		return last == nil
	}) {
		c.dumpLogs()
		t.Fatalf("the NATS cluster never held an R3 stream: %v", last)
	}
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examples, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceAll replaces each old with its new in s, failing when an old is
// not in s: the example changed, and the test must follow it.
func replaceAll(t *testing.T, name, s string, oldNew ...string) string {
	t.Helper()
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s has no %q any more; update the test with the example", name, oldNew[i])
		}
		s = strings.ReplaceAll(s, oldNew[i], oldNew[i+1])
	}
	return s
}

// readEnvFile reads an EnvironmentFile: KEY=VALUE lines, # comments.
func readEnvFile(t *testing.T, name string) map[string]string {
	t.Helper()
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(readExample(t, name)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", name, line)
		}
		env[k] = v
	}
	return env
}

// unitCommand is a unit's ExecStart as systemd runs it: continuation lines
// joined, ${VAR} from env, %H the host name (the runner id), %d the
// credentials directory holding what its LoadCredential lines name (their
// /etc/agora/nats-auth read from authDir), /usr/local/bin/agora the built
// binary, and each of hostOld replaced by its hostNew. It returns the
// arguments after the binary.
func unitCommand(t *testing.T, c *cluster, name string, env map[string]string, host, authDir string, hostOldNew ...string) []string {
	t.Helper()
	unit := readExample(t, name)
	unit = strings.ReplaceAll(unit, "\\\n", " ")
	credDir := filepath.Join(c.dir, "credentials", strings.TrimSuffix(name, ".service"))
	if err := os.MkdirAll(credDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var execStart string
	for line := range strings.SplitSeq(unit, "\n") {
		line = strings.ReplaceAll(line, "%H", host)
		switch {
		case strings.HasPrefix(line, "LoadCredential="):
			cred, src, ok := strings.Cut(strings.TrimPrefix(line, "LoadCredential="), ":")
			if !ok || !strings.HasPrefix(src, "/etc/agora/nats-auth/") {
				t.Fatalf("%s: LoadCredential=%s: want NAME:/etc/agora/nats-auth/FILE", name, line)
			}
			data, err := os.ReadFile(filepath.Join(authDir, strings.TrimPrefix(src, "/etc/agora/nats-auth/")))
			if err != nil {
				t.Fatalf("%s: %v (made by agora nats-auth init?)", name, err)
			}
			write(t, filepath.Join(credDir, cred), data)
		case strings.HasPrefix(line, "ExecStart="):
			execStart = strings.TrimPrefix(line, "ExecStart=")
		}
	}
	if execStart == "" {
		t.Fatalf("%s has no ExecStart", name)
	}
	execStart = strings.ReplaceAll(execStart, "%d", credDir)
	execStart = replaceAll(t, name, execStart, hostOldNew...)
	if strings.Contains(execStart, "%") {
		t.Fatalf("%s: ExecStart has a specifier the test does not know: %s", name, execStart)
	}
	for k, v := range env {
		execStart = strings.ReplaceAll(execStart, "${"+k+"}", v)
	}
	if strings.Contains(execStart, "${") {
		t.Fatalf("%s: ExecStart names a variable agora.env does not set: %s", name, execStart)
	}
	args := strings.Fields(execStart)
	if args[0] != "/usr/local/bin/agora" {
		t.Fatalf("%s: ExecStart runs %s; want /usr/local/bin/agora", name, args[0])
	}
	t.Logf("%s: agora %s", name, strconv.Quote(strings.Join(args[1:], " ")))
	return args[1:]
}
