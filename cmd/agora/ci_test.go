package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/wire"
)

// ciRoute is the test server's --ci-route: short, so a CI job's question
// ends by its default (or expires) within seconds.
const ciRoute = "human=3s"

// ciServer is a real `agora serve` process, as a CI job reaches it: its
// own data directory, a free port, the worker image built here, and the
// short CI route.
type ciServer struct {
	url    string
	agora  string // the agora binary
	eng    *docker.Engine
	client *client.Client
}

func startCIServe(t *testing.T) *ciServer {
	t.Helper()
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	ctx := context.Background()
	tag := fmt.Sprintf("agora-worker:ci-test-%d", testutil.RunNumber())
	if _, err := images.Build(ctx, eng, images.Options{WorkerBinary: testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false), Tag: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), tag) })
	runnerID := fmt.Sprintf("ci-test-%d", testutil.RunNumber())
	// Registered before serve starts, so it runs after serve has stopped
	// (which leaves running containers to the next process): after a
	// passing test no container is left; after a failure it is removed.
	t.Cleanup(func() {
		left, err := eng.List(context.Background(), map[string]string{runner.LabelRunner: runnerID})
		if err != nil {
			t.Errorf("list containers of runner %s: %v", runnerID, err)
		}
		for _, c := range left {
			if !t.Failed() {
				t.Errorf("container %s (task %s) left behind", c.ID[:12], c.Labels[compute.LabelTaskID])
			}
			_ = eng.Remove(context.Background(), c.ID)
		}
	})
	s := &ciServer{agora: testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true), eng: eng}
	addr := freeAddr(t)
	s.url = "http://" + addr
	s.client = client.New(s.url, "")
	logs := &testWriter{t: t}
	t.Cleanup(logs.stop)
	cmd := exec.Command(s.agora, "serve", "--data-dir", t.TempDir(), "--listen", addr, "--image", tag, "--id", runnerID, "--slots", "4",
		"--ci-route", ciRoute)
	cmd.Env, cmd.Stdout, cmd.Stderr = withoutCI(os.Environ()), logs, logs
	startStopped(t, cmd)
	testutil.Eventually(t, time.Minute, "agora serve to answer", func() bool {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return s
}

// withoutCI is environ without CI: each test says whether it is a CI job.
func withoutCI(environ []string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "CI=") })
}

// jobEnv is the environment of a CI job's step against server: agora on
// PATH, AGORA_SERVER set, plus extra.
func (s *ciServer) jobEnv(server string, extra ...string) []string {
	env := append(withoutCI(os.Environ()), "PATH="+filepath.Dir(s.agora)+":"+os.Getenv("PATH"), "AGORA_SERVER="+server, "AGORA_TOKEN=")
	return append(env, extra...)
}

// proc is a process of the test: its output, and its exit code once it ended.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *testutil.Buffer
	done           chan struct{}
	code           int
}

func startProc(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	return startProcIn(t, "", env, name, args...)
}

// startProcIn starts name in directory dir (empty: the test's).
func startProcIn(t *testing.T, dir string, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), stdout: &testutil.Buffer{}, stderr: &testutil.Buffer{}, done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = dir, env, p.stdout, p.stderr
	// Its own process group, as a CI runner starts a step: the test can
	// signal the group as timeout(1) does, and a test's ^C does not reach it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// wait returns the exit code, failing the test when the process has not
// ended within timeout.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("%s did not end within %s; stdout %q, stderr %q", strings.Join(p.cmd.Args, " "), timeout, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// waitRunning waits until task id runs in a container.
func (s *ciServer) waitRunning(t *testing.T, id string) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, "task "+id+" to run in a container", func() bool {
		task, err := s.client.Get(context.Background(), id)
		if err != nil || task.State != wire.StateRunning {
			return false
		}
		cs, err := s.eng.List(context.Background(), map[string]string{compute.LabelTaskID: id})
		return err == nil && len(cs) > 0
	})
}

// waitCancelled checks that task id ended cancelled and its container is
// gone within a bounded wait.
func (s *ciServer) waitCancelled(t *testing.T, id string) {
	t.Helper()
	task, err := s.client.Get(context.Background(), id)
	if err != nil || task.State != wire.StateCancelled {
		t.Fatalf("task %s = %+v, %v; want it cancelled", id, task, err)
	}
	testutil.Eventually(t, time.Minute, "task "+id+"'s container to be gone", func() bool {
		cs, err := s.eng.List(context.Background(), map[string]string{compute.LabelTaskID: id})
		return err == nil && len(cs) == 0
	})
}

func (s *ciServer) cancel(t *testing.T, id string) {
	t.Helper()
	if _, err := s.client.Cancel(context.Background(), id); err != nil && !errors.Is(err, wire.ErrWrongState) && !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("cancel %s: %v", id, err)
	}
}

// TestDispatchCI runs a real `agora dispatch --wait` process, as a CI job
// does, against a real `agora serve` with Docker: a signal cancels the
// task and its container goes (one signal is one, under timeout(1) too; a
// second exits at once; --detach-on-signal leaves it running), agora
// cancel of an ended task exits 0, a CI job's question without a route
// ends by its default or expires within the server's CI route, with the
// waiting lines; and the CI examples run as their runners would run them.
func TestDispatchCI(t *testing.T) {
	t.Parallel()
	s := startCIServe(t)
	sleeper := "echo working; sleep 300"

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := exitcode.SignalName(sig)
		t.Run(name+" cancels the task", func(t *testing.T) {
			t.Parallel()
			id := "sig-" + strings.ToLower(name)
			d := startProc(t, s.jobEnv(s.url), s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait")
			s.waitRunning(t, id)
			sent := time.Now()
			if err := d.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := d.wait(t, time.Minute)
			exited := time.Since(sent)
			defer func() {
				t.Logf("%s: dispatch --wait exited after %s, the container was gone after %s", name, exited, time.Since(sent))
			}()
			if code != 128+int(sig) {
				t.Errorf("dispatch --wait after %s exited %d, want %d; stderr %q", name, code, 128+int(sig), d.stderr.String())
			}
			for _, want := range []string{"agora dispatch: " + name + ": cancelling task " + id + " (--detach-on-signal would leave it running)\n",
				"agora dispatch: task " + id + " cancelled (cancelled while running); 'agora respawn " + id + "' runs it again\n"} {
				if !strings.Contains(d.stderr.String(), want) {
					t.Errorf("dispatch --wait stderr lacks %q:\n%s", want, d.stderr.String())
				}
			}
			s.waitCancelled(t, id)
		})
	}

	t.Run("one TERM to the process and its group is one signal", func(t *testing.T) {
		t.Parallel()
		id := "sig-group"
		d := startProc(t, s.jobEnv(s.url), s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait")
		s.waitRunning(t, id)
		// What timeout(1) does: the command, then the command's group.
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t, time.Minute); code != 143 || strings.Contains(d.stderr.String(), "second signal") {
			t.Errorf("dispatch --wait after one TERM sent twice exited %d, stderr %q; want 143 and no second signal", code, d.stderr.String())
		}
		s.waitCancelled(t, id)
	})

	t.Run("under timeout(1)", func(t *testing.T) {
		t.Parallel()
		id := "sig-timeout"
		d := startProc(t, s.jobEnv(s.url), "timeout", "8", s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait")
		if code := d.wait(t, 2*time.Minute); code != 124 {
			t.Errorf("timeout 8 agora dispatch --wait exited %d, want timeout's 124; stderr %q", code, d.stderr.String())
		}
		if strings.Contains(d.stderr.String(), "second signal") || !strings.Contains(d.stderr.String(), "SIGTERM: cancelling task "+id) {
			t.Errorf("timeout 8 agora dispatch --wait: stderr %q; want the cancel, and no second signal", d.stderr.String())
		}
		s.waitCancelled(t, id)
	})

	t.Run("a second signal exits at once", func(t *testing.T) {
		t.Parallel()
		// A proxy that holds the cancel, so the first signal's work is
		// still going on when the second comes.
		held, release := make(chan struct{}, 1), make(chan struct{})
		target, _ := url.Parse(s.url)
		proxy := httputil.NewSingleHostReverseProxy(target)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel") {
				held <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		t.Cleanup(func() { close(release) })
		id := "sig-twice"
		t.Cleanup(func() { s.cancel(t, id) })
		d := startProc(t, s.jobEnv(front.URL), s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait")
		s.waitRunning(t, id)
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-held:
		case <-time.After(time.Minute):
			t.Fatalf("no cancel reached the server after SIGTERM; stderr %q", d.stderr.String())
		}
		if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t, 10*time.Second); code != 130 || !strings.Contains(d.stderr.String(), "agora: second signal (interrupt): exiting now without waiting") {
			t.Errorf("dispatch --wait after a second signal exited %d, stderr %q; want 130 at once", code, d.stderr.String())
		}
	})

	for _, created := range []bool{true, false} {
		t.Run(fmt.Sprintf("a signal while submitting, the task created %v", created), func(t *testing.T) {
			t.Parallel()
			// A proxy that holds the submit's answer until the client gives
			// up; the server gets the submit (or not) all the same.
			held := make(chan struct{}, 1)
			target, _ := url.Parse(s.url)
			proxy := httputil.NewSingleHostReverseProxy(target)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/tasks" {
					if created {
						proxy.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithoutCancel(r.Context())))
					} else {
						// Read, or the server would not notice the client leave.
						_, _ = io.Copy(io.Discard, r.Body)
					}
					select {
					case held <- struct{}{}:
					default:
					}
					<-r.Context().Done()
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			id := fmt.Sprintf("sig-submit-%v", created)
			t.Cleanup(func() { s.cancel(t, id) })
			d := startProc(t, s.jobEnv(front.URL), s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait")
			select {
			case <-held:
			case <-time.After(time.Minute):
				t.Fatalf("no submit reached the proxy; stderr %q", d.stderr.String())
			}
			if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			want := "agora dispatch: interrupted before task " + id + " was submitted; nothing runs\n"
			if created {
				want = "agora dispatch: task " + id + " cancelled (cancelled while "
			}
			if code := d.wait(t, time.Minute); code != 143 || !strings.Contains(d.stderr.String(), want) {
				t.Errorf("dispatch --wait after SIGTERM while submitting: exit %d, stderr %q; want 143 and %q", code, d.stderr.String(), want)
			}
			if created {
				s.waitCancelled(t, id)
			} else if _, err := s.client.Get(context.Background(), id); !errors.Is(err, wire.ErrNotFound) {
				t.Errorf("task %s = %v; want none", id, err)
			}
		})
	}

	t.Run("--detach-on-signal leaves it running; cancel exits 0 however the task ended", func(t *testing.T) {
		t.Parallel()
		id := "sig-detach"
		d := startProc(t, s.jobEnv(s.url), s.agora, "dispatch", "--command", sleeper, "--task-id", id, "--wait", "--detach-on-signal")
		s.waitRunning(t, id)
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t, time.Minute); code != 1 || !strings.Contains(d.stderr.String(), "SIGTERM: stopped waiting; task "+id+" goes on") {
			t.Errorf("dispatch --wait --detach-on-signal after SIGTERM exited %d, stderr %q; want 1, the task going on", code, d.stderr.String())
		}
		if task, err := s.client.Get(context.Background(), id); err != nil || task.State != wire.StateRunning {
			t.Fatalf("task %s after a detached --wait = %+v, %v; want it running", id, task, err)
		}
		env := s.jobEnv(s.url)
		for _, c := range []struct {
			name, task string
			code       int
			out        string
		}{
			{"cancel", id, 0, id + " cancelled (cancelled while running)"},
			{"cancel again", id, 0, id + " had already ended: cancelled (cancelled while running); nothing to cancel"},
			{"cancel of an unknown task", "no-such-task", 1, "agora cancel: no task no-such-task on " + s.url},
		} {
			p := startProc(t, env, s.agora, "cancel", c.task)
			if code := p.wait(t, time.Minute); code != c.code || !strings.Contains(p.stdout.String()+p.stderr.String(), c.out) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q", c.name, code, p.stdout.String(), p.stderr.String(), c.code, c.out)
			}
		}
		s.waitCancelled(t, id)
	})

	t.Run("cancel of a finished task exits 0", func(t *testing.T) {
		t.Parallel()
		id := "done-then-cancel"
		env := s.jobEnv(s.url)
		if code := startProc(t, env, s.agora, "dispatch", "--command", "echo done", "--task-id", id, "--wait").wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("dispatch --wait of echo exited %d", code)
		}
		p := startProc(t, env, s.agora, "cancel", id)
		if code := p.wait(t, time.Minute); code != 0 || !strings.Contains(p.stdout.String(), id+" had already ended: finished (") {
			t.Errorf("cancel of a finished task: exit %d, stdout %q, stderr %q; want 0 and how it ended", code, p.stdout.String(), p.stderr.String())
		}
	})

	asker := func(def string) string {
		ask := `agora-worker ask "Publish the notes or keep a draft?" --option publish --option draft`
		if def != "" {
			ask += " --default " + def
		}
		return `if [ -z "${AGORA_ANSWER:-}" ]; then ` + ask + `; exit 0; fi; echo "notes: $AGORA_ANSWER"`
	}

	t.Run("a CI job's question ends by its default within the CI route", func(t *testing.T) {
		t.Parallel()
		id := "ci-default"
		d := startProc(t, s.jobEnv(s.url, "CI=true"), s.agora, "dispatch", "--command", asker("draft"), "--task-id", id, "--heartbeat", "1s", "--wait")
		if code := d.wait(t, 3*time.Minute); code != 0 {
			t.Fatalf("dispatch --wait exited %d, want 0; stderr %q", code, d.stderr.String())
		}
		task, err := s.client.Get(context.Background(), id)
		if err != nil || task.Request.Route != ciRoute || !task.Request.FromCI {
			t.Fatalf("task %s = %+v, %v; want the CI route %s", id, task, err, ciRoute)
		}
		stderr := d.stderr.String()
		for _, want := range []string{
			"still waiting: the answer may come from anyone with access, or from the route (" + ciRoute + "); at ",
			" the default `draft` is taken\n",
			"  still waiting for an answer to round 1 (asked ",
			"  nobody answered round 1 by ",
			": the default `draft` was taken (human timed out: no answer within 3s)\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("dispatch --wait stderr lacks %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("a CI job's question without a default expires within the CI route", func(t *testing.T) {
		t.Parallel()
		id := "ci-expire"
		d := startProc(t, s.jobEnv(s.url, "CI=true"), s.agora, "dispatch", "--command", asker(""), "--task-id", id, "--wait")
		if code := d.wait(t, 3*time.Minute); code != 3 {
			t.Fatalf("dispatch --wait exited %d, want 3; stderr %q", code, d.stderr.String())
		}
		for _, want := range []string{" it expires (no default)\n", "agora dispatch: task " + id + " expired: nobody answered"} {
			if !strings.Contains(d.stderr.String(), want) {
				t.Errorf("dispatch --wait stderr lacks %q:\n%s", want, d.stderr.String())
			}
		}
	})

	t.Run("outside CI the route stays the default", func(t *testing.T) {
		t.Parallel()
		id := "not-ci"
		t.Cleanup(func() { s.cancel(t, id) })
		if code := startProc(t, s.jobEnv(s.url, "CI=false"), s.agora, "dispatch", "--command", "true", "--task-id", id).wait(t, time.Minute); code != 0 {
			t.Fatalf("dispatch exited %d", code)
		}
		if task, err := s.client.Get(context.Background(), id); err != nil || task.Request.Route != "" || task.Request.FromCI {
			t.Errorf("task %s = %+v, %v; want no route (the default human)", id, task, err)
		}
	})

	t.Run("the GitHub Actions example through act", func(t *testing.T) {
		t.Parallel()
		act := actPath(t)
		repo := actRepo(t, "../../examples/ci/github-actions.yml")
		runAct := func(runID string, vars ...string) *proc {
			args := []string{"push", "-P", "ubuntu-latest=-self-hosted", "--var", "AGORA_SERVER=" + s.url, "--secret", "AGORA_TOKEN=",
				"--env", "GITHUB_RUN_ID=" + runID}
			for _, v := range vars {
				args = append(args, "--var", v)
			}
			// act's own cache (its self-hosted work directories) and config
			// in the test's.
			env := append(s.jobEnv(s.url), "XDG_CACHE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
			return startProcIn(t, repo, env, act, args...)
		}

		// Nobody answers: the server's CI route (act sets CI=true) takes the
		// default, the notes reach the later step and the later job.
		p := runAct("101")
		if code := p.wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("act exited %d:\n%s%s", code, p.stdout.String(), p.stderr.String())
		}
		out := p.stdout.String() + p.stderr.String()
		t.Logf("act, nobody answering:\n%s", out)
		task, err := s.client.Get(context.Background(), "ci-101-1")
		if err != nil || task.State != wire.StateFinished || task.Request.Route != ciRoute {
			t.Fatalf("task ci-101-1 = %+v, %v; want it finished on the CI route", task, err)
		}
		notes := dispatchStdout(t, task)
		for _, want := range []string{"| the notes: " + notes, "| publishing: " + notes, "nobody answered round 1 by ", "the default `draft` was taken"} {
			if !strings.Contains(out, want) {
				t.Errorf("act's output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "Main cancel the task") {
			t.Errorf("the cancel step ran in a job that succeeded:\n%s", out)
		}

		// The job is interrupted while the question waits for a person:
		// act kills the dispatch step, and the cleanup step cancels the task.
		p = runAct("102", "AGORA_ROUTE=human=10m")
		testutil.Eventually(t, 3*time.Minute, "the question of ci-102-1", func() bool {
			task, err := s.client.Get(context.Background(), "ci-102-1")
			return err == nil && task.State == wire.StateNeedsInput
		})
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 2*time.Minute); code == 0 {
			t.Errorf("act exited 0 after an interrupt")
		}
		out = p.stdout.String() + p.stderr.String()
		t.Logf("act, interrupted:\n%s", out)
		if !strings.Contains(out, "| ci-102-1 cancelled (cancelled while needs input)") {
			t.Errorf("act's output lacks the cleanup step's cancel:\n%s", out)
		}
		s.waitCancelled(t, "ci-102-1")
	})

	t.Run("the GitLab CI example's job, as a shell runner runs it", func(t *testing.T) {
		t.Parallel()
		jobs := gitlabJobs(t, "../../examples/ci/gitlab-ci.yml")
		notesJob, publish := jobs["release-notes"], jobs["publish"]
		dir := t.TempDir() // the job's checkout; notes.txt is its artifact
		// runJob runs lines as the shell executor does: one bash, -e and
		// pipefail, the job's variables expanded in its environment.
		runJob := func(job gitlabJob, lines []string, extra ...string) *proc {
			env := s.jobEnv(s.url, append([]string{"CI=true", "CI_PIPELINE_ID=7", "CI_COMMIT_SHA=0123abc"}, extra...)...)
			lookup := func(k string) string { return getenv(env, k) }
			for k, v := range job.Variables {
				if v.Expand != nil && !*v.Expand {
					env = append(env, k+"="+v.Value)
					continue
				}
				env = append(env, k+"="+os.Expand(v.Value, lookup))
			}
			return startProcIn(t, dir, env, "bash", "-c", "set -eo pipefail\n"+strings.Join(lines, "\n"))
		}

		// Nobody answers: the CI route's default; the later job reads the
		// artifact; after_script leaves a successful job alone.
		p := runJob(notesJob, notesJob.Script, "CI_JOB_ID=201")
		if code := p.wait(t, 3*time.Minute); code != 0 {
			t.Fatalf("the job's script exited %d: %s", code, p.stderr.String())
		}
		task, err := s.client.Get(context.Background(), "ci-7-201")
		if err != nil || task.State != wire.StateFinished || task.Request.Route != ciRoute {
			t.Fatalf("task ci-7-201 = %+v, %v; want it finished on the CI route", task, err)
		}
		if after := runJob(notesJob, notesJob.AfterScript, "CI_JOB_ID=201", "CI_JOB_STATUS=success"); after.wait(t, time.Minute) != 0 || after.stdout.String() != "" {
			t.Errorf("after_script of a successful job: exit %d, stdout %q, stderr %q; want nothing done", after.code, after.stdout.String(), after.stderr.String())
		}
		pub := runJob(publish, publish.Script, "CI_JOB_ID=203")
		if code := pub.wait(t, time.Minute); code != 0 || !strings.Contains(pub.stdout.String(), "publishing: "+dispatchStdout(t, task)) {
			t.Errorf("the publish job: exit %d, stdout %q, stderr %q; want the notes", code, pub.stdout.String(), pub.stderr.String())
		}

		// The job is cancelled while the question waits: the runner's
		// SIGTERM reaches the job's processes, dispatch --wait cancels the
		// task, and after_script's cancel finds it ended (exit 0).
		p = runJob(notesJob, notesJob.Script, "CI_JOB_ID=202", "AGORA_ROUTE=human=10m")
		testutil.Eventually(t, 3*time.Minute, "the question of ci-7-202", func() bool {
			task, err := s.client.Get(context.Background(), "ci-7-202")
			return err == nil && task.State == wire.StateNeedsInput
		})
		if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.wait(t, time.Minute)
		testutil.Eventually(t, time.Minute, "dispatch --wait to cancel ci-7-202", func() bool {
			task, err := s.client.Get(context.Background(), "ci-7-202")
			return err == nil && task.State == wire.StateCancelled
		})
		after := runJob(notesJob, notesJob.AfterScript, "CI_JOB_ID=202", "CI_JOB_STATUS=canceled")
		if code := after.wait(t, time.Minute); code != 0 || !strings.Contains(after.stdout.String(), "ci-7-202 had already ended: cancelled") {
			t.Errorf("after_script of a cancelled job: exit %d, stdout %q, stderr %q; want 0 and the task ended", code, after.stdout.String(), after.stderr.String())
		}
	})
}

// gitlabJob is what the test runs of a GitLab CI job.
type gitlabJob struct {
	Variables   map[string]gitlabVariable `yaml:"variables"`
	Script      []string                  `yaml:"script"`
	AfterScript []string                  `yaml:"after_script"`
}

// gitlabVariable is a job's variable: a string, or {value, expand}.
type gitlabVariable struct {
	Value  string
	Expand *bool
}

func (v *gitlabVariable) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&v.Value)
	}
	var full struct {
		Value  string `yaml:"value"`
		Expand *bool  `yaml:"expand"`
	}
	if err := n.Decode(&full); err != nil {
		return err
	}
	v.Value, v.Expand = full.Value, full.Expand
	return nil
}

// gitlabJobs reads the jobs of a .gitlab-ci.yml (the keys that are not
// GitLab's own).
func gitlabJobs(t *testing.T, file string) map[string]gitlabJob {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	jobs := map[string]gitlabJob{}
	for name, node := range top {
		if name == "stages" || name == "variables" || name == "default" || name == "include" || name == "workflow" {
			continue
		}
		var job gitlabJob
		if err := node.Decode(&job); err != nil {
			t.Fatalf("%s: job %s: %v", file, name, err)
		}
		jobs[name] = job
	}
	return jobs
}

// dispatchStdout is what `agora dispatch --wait` prints on stdout for
// finished task t: its result, a string as its text.
func dispatchStdout(t *testing.T, task *wire.Task) string {
	t.Helper()
	var text string
	if err := json.Unmarshal(task.Result, &text); err != nil {
		t.Fatalf("task %s's result %s: %v; want the string the example's sub-agent leaves", task.ID, task.Result, err)
	}
	return text
}

// actRepo is a git repository holding workflow as its only workflow, for
// act to run.
func actRepo(t *testing.T, workflow string) string {
	t.Helper()
	data, err := os.ReadFile(workflow)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".github", "workflows", filepath.Base(workflow)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "the example"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=agora", "-c", "user.email=agora@example.invalid"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// actPath finds nektos/act (make tools installs it) on PATH or in
// GOPATH/bin. Without it the act test is skipped, except in CI, where it
// fails.
func actPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("act"); err == nil {
		return p
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		p := filepath.Join(dir, "bin", "act")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	const msg = "act not found on PATH or in GOPATH/bin; install it with make tools"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestOrchestratorCIRouteFlag: agora orchestrator takes --ci-route as
// serve does, checked before anything is contacted.
func TestOrchestratorCIRouteFlag(t *testing.T) {
	t.Parallel()
	nats := []string{"orchestrator", "--nats", "nats://127.0.0.1:1"}
	agora(t, nil, append(nats, "--ci-route", "human=-1m")...).want(t, "orchestrator --ci-route human=-1m", 2, nil,
		[]string{`agora orchestrator: --ci-route "human=-1m": route step 1 "human=-1m": timeout: "-1m": must be positive; e.g. --ci-route human=10m`})
	f, err := parseOrchestratorFlags([]string{"--nats", "x", "--ci-route", "memory,human=5m"}, nil, io.Discard)
	if err != nil || f.CIRoute != "memory,human=5m" {
		t.Errorf("parseOrchestratorFlags(--ci-route) = %q, %v", f.CIRoute, err)
	}
}

// TestDispatchCIOlderServer: a server older than from_ci refuses the
// field; dispatch under CI=true submits as an older CLI did, and says the
// task gets the default route.
func TestDispatchCIOlderServer(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	target, _ := url.Parse(s.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/tasks" {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"from_ci"`) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(wire.ErrorBody{Code: wire.CodeInvalid, Error: `request body: unknown field "from_ci"`})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(older.Close)
	agora(t, []string{"AGORA_SERVER=" + older.URL, "CI=true"}, "dispatch", "--command", "true", "--task-id", "older").want(t, "dispatch to an older server", 0,
		[]string{"older queued"}, []string{"agora dispatch: the server at " + older.URL + " is older than this agora and has no CI route: the task gets its default route (human); pass --route, e.g. --route human=10m"})
	if task := s.get(t, "older"); task.Request.FromCI || task.Request.Route != "" {
		t.Errorf("task submitted to an older server = %+v; want no from_ci, no route", task.Request)
	}
}
