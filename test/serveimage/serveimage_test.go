// Package serveimage tests the `agora serve` image as a user gets it: the
// top-level Dockerfile built with the docker CLI, run with the command
// docs/image.md gives, a task that asks, is answered and resumes in it.
package serveimage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// repoRoot is the build context, relative to this package.
const repoRoot = "../.."

// testLabel marks every image and container this test makes.
const testLabel = "agora.test.serveimage"

// need skips, or fails under CI=true, where the image test must run.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// docker runs the docker CLI and returns its trimmed stdout; a failure
// carries stderr.
func docker(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := docker(t.Context(), nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goImage is the image the build stage starts from: golang:1.26 when the
// engine has it (it is never pulled here), else a local stand-in that
// .ci/golang-image makes once from Debian's debootstrap and this Go
// toolchain, reused by every later run.
func goImage(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	if img := os.Getenv("AGORA_GO_IMAGE"); img != "" {
		return img
	}
	if _, err := docker(ctx, nil, "image", "inspect", "golang:1.26"); err == nil {
		return "golang:1.26"
	}
	standIn := "agora-test-golang:" + strings.TrimPrefix(runtime.Version(), "go")
	if _, err := docker(ctx, nil, "image", "inspect", standIn); err == nil {
		return standIn
	}
	t.Logf("no golang:1.26 here and no %s: making it with .ci/golang-image (debootstrap; minutes, once)", standIn)
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot, ".ci", "golang-image"), standIn)
	if out, err := cmd.CombinedOutput(); err != nil {
		need(t, "a Go image to build with: .ci/golang-image %s: %v\n%s", standIn, err, out)
	}
	return standIn
}

// warmGoImage is base with this module's dependencies downloaded and
// compiled into its build cache, as the Dockerfile's build stage compiles
// them (CGO_ENABLED=0, -trimpath): the Dockerfile built from it compiles
// only agora's own packages. It is made once per base and go.sum (its tag
// says which) and kept for later runs. The Dockerfile is the same; only
// the Go image under it is warmer.
func warmGoImage(t *testing.T, base string) string {
	t.Helper()
	ctx := t.Context()
	list := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		"{{if not .Standard}}{{if .Module}}{{if not .Module.Main}}{{.ImportPath}}{{end}}{{end}}{{end}}",
		"./cmd/agora", "./cmd/agora-worker")
	list.Dir = repoRoot
	list.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	deps, err := list.Output()
	if err != nil {
		t.Fatalf("go list the dependencies: %v", err)
	}
	baseID := mustDocker(t, "image", "inspect", "--format", "{{.Id}}", base)
	dir := t.TempDir()
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	h.Write(deps)
	h.Write([]byte(baseID))
	tag := "agora-test-golang-warm:" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := docker(ctx, nil, "image", "inspect", tag); err == nil {
		return tag
	}
	if err := os.WriteFile(filepath.Join(dir, "deps.txt"), deps, 0o644); err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM " + base + "\nWORKDIR /src\nCOPY go.mod go.sum deps.txt ./\n" +
		"RUN go mod download && CGO_ENABLED=0 go build -trimpath $(cat deps.txt) && rm deps.txt\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := docker(ctx, []string{"DOCKER_BUILDKIT=0"}, "build", "-q", "--label", testLabel+"=warm", "-t", tag, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("made %s from %s (its dependencies compiled): %s", tag, base, time.Since(start).Round(time.Second))
	return tag
}

// socketPath is the Docker engine's unix socket, which the container gets.
func socketPath(t *testing.T) string {
	host := os.Getenv("DOCKER_HOST")
	switch {
	case host == "":
		return "/var/run/docker.sock"
	case strings.HasPrefix(host, "unix://"):
		return strings.TrimPrefix(host, "unix://")
	}
	need(t, "DOCKER_HOST=%s is not a unix socket the container can mount", host)
	return ""
}

// TestServeImage builds the top-level Dockerfile and runs it as
// docs/image.md says: the version is stamped and a HEALTHCHECK set; a data
// dir that Docker made (root's, as on a fresh host) or one mounted at
// another path than on the host is refused at start with the fix; and with
// the documented command — the socket, the data dir made for the image's
// user and mounted at the same path, a port — the container turns
// healthy and a task that asks is answered and resumes in its workspace
// (round 2 reads what round 1 left, through the snapshot the old image
// failed to write).
func TestServeImage(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		need(t, "the docker CLI: %v", err)
	}
	if _, err := docker(t.Context(), nil, "version", "--format", "{{.Server.Version}}"); err != nil {
		need(t, "a Docker engine: %v", err)
	}
	sock := socketPath(t)
	info, err := os.Stat(sock)
	if err != nil {
		need(t, "the Docker socket: %v", err)
	}
	sockGID := info.Sys().(*syscall.Stat_t).Gid

	base := warmGoImage(t, goImage(t))
	run := fmt.Sprintf("%d-%d", testutil.RunNumber(), time.Now().UnixNano()%1e6)
	tag := "agora-serve-test:" + run
	version := "serveimage-" + run
	workersBefore := workerImages(t)
	// servedWorkers are the worker images serve built in this test's
	// containers, read from their logs: only those are removed at the end.
	// Another suite on the engine builds worker images of its own meanwhile
	// (test/faults' agora-worker:faults-…), and removing every image that
	// appeared during this run took one from under a running fault suite.
	var servedMu sync.Mutex
	servedWorkers := map[string]bool{}
	// BuildKit through the CLI needs buildx; without it, the classic
	// builder (the Dockerfile needs neither).
	var env []string
	if _, err := docker(t.Context(), nil, "buildx", "version"); err != nil {
		env = append(env, "DOCKER_BUILDKIT=0")
	}
	danglingBefore := dangling(t)
	start := time.Now()
	if _, err := docker(t.Context(), env, "build", "-q", "--build-arg", "GO_IMAGE="+base, "--build-arg", "VERSION="+version,
		"--label", testLabel+"="+run, "-t", tag, repoRoot); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker build (from %s): %s", base, time.Since(start).Round(time.Second))
	if env != nil {
		dropBuildStage(t, base, danglingBefore)
	}
	t.Cleanup(func() {
		if _, err := docker(context.Background(), nil, "rmi", tag); err != nil {
			t.Errorf("remove the test image: %v", err)
		}
		// The worker images serve built in the containers, unless another
		// run had one first (it is named by its inputs).
		servedMu.Lock()
		defer servedMu.Unlock()
		for img := range servedWorkers {
			if !workersBefore[img] {
				_, _ = docker(context.Background(), nil, "rmi", img)
			}
		}
	})

	t.Run("version and healthcheck", func(t *testing.T) {
		if out := mustDocker(t, "run", "--rm", "--label", testLabel+"="+run, tag, "version"); out != "agora "+version {
			t.Errorf("docker run IMAGE version = %q, want %q", out, "agora "+version)
		}
		if hc := mustDocker(t, "image", "inspect", "--format", "{{json .Config.Healthcheck.Test}}", tag); !strings.Contains(hc, `"/usr/local/bin/agora","health"`) {
			t.Errorf("HEALTHCHECK = %s, want agora health", hc)
		}
	})

	// The token, made as docs/image.md says: the secret for the client,
	// the hashed line for the server.
	var token struct {
		Secret string `json:"secret"`
		Line   string `json:"tokens_file_line"`
	}
	if err := json.Unmarshal([]byte(mustDocker(t, "run", "--rm", "--label", testLabel+"="+run, tag, "token", "create", "ci", "--json")), &token); err != nil || token.Secret == "" || token.Line == "" {
		t.Fatalf("docker run IMAGE token create ci --json: %+v, %v", token, err)
	}

	// serve is the documented command's shape: the socket and its group,
	// the data dir at dataDir on the host mounted at mountAt, the tokens
	// file in it (tokensEnv, else AGORA_TOKENS with the hashed line), a port.
	serve := func(t *testing.T, name, dataDir, mountAt, tokensEnv string) string {
		t.Helper()
		_, _ = docker(context.Background(), nil, "rm", "-f", name)
		t.Cleanup(func() {
			if logs, err := dockerLogs(name); err == nil {
				servedMu.Lock()
				for _, m := range builtWorker.FindAllStringSubmatch(logs, -1) {
					servedWorkers[m[1]] = true
				}
				servedMu.Unlock()
			}
			if _, err := docker(context.Background(), nil, "rm", "-f", name); err != nil {
				t.Errorf("remove container %s: %v", name, err)
			}
		})
		return mustDocker(t, "run", "-d", "--name", name, "--label", testLabel+"="+run,
			"-v", sock+":/var/run/docker.sock", "--group-add", fmt.Sprint(sockGID),
			"-v", dataDir+":"+mountAt, "-e", "AGORA_DATA_DIR="+mountAt, "-e", tokensEnv,
			"-p", "127.0.0.1::7070",
			tag, "serve")
	}
	// exits waits for the container to stop and returns its logs.
	exits := func(t *testing.T, name string) string {
		t.Helper()
		code, err := docker(t.Context(), nil, "wait", name)
		if err != nil {
			t.Fatal(err)
		}
		logs, _ := dockerLogs(name)
		if code == "0" {
			t.Fatalf("%s exited 0, want it to refuse to start; logs:\n%s", name, logs)
		}
		return logs
	}

	t.Run("data dir made by docker", func(t *testing.T) {
		// A fresh host: the dir does not exist, so Docker makes it, as root.
		dir := filepath.Join(t.TempDir(), "agora")
		name := "agora-serveimage-rootdir-" + run
		serve(t, name, dir, dir, "AGORA_TOKENS="+token.Line)
		logs := exits(t, name)
		for _, want := range []string{"owned by uid 0", "sudo install -d -m 0700 -o 65532 -g 65532 " + dir} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %q:\n%s", want, logs)
			}
		}
	})

	t.Run("data dir at another path", func(t *testing.T) {
		dir := userDir(t)
		name := "agora-serveimage-elsewhere-" + run
		serve(t, name, dir, "/var/lib/agora", "AGORA_TOKENS="+token.Line)
		logs := exits(t, name)
		if want := "mounted at the same path as on the host"; !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	})

	t.Run("ask, answer, resume", func(t *testing.T) {
		dir := userDir(t)
		tokens := filepath.Join(dir, "tokens")
		if err := os.WriteFile(tokens, []byte(token.Line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(tokens, 65532, 65532); err != nil {
			t.Fatal(err)
		}
		name := "agora-serveimage-" + run
		serve(t, name, dir, dir, "AGORA_TOKENS_FILE="+tokens)
		hostPort := mustDocker(t, "port", name, "7070/tcp")
		c := client.New("http://"+hostPort, token.Secret)
		ctx := t.Context()
		testutil.Eventually(t, 2*time.Minute, "the API answers", func() bool {
			if state, _ := docker(ctx, nil, "inspect", "--format", "{{.State.Status}}", name); state != "running" {
				logs, _ := dockerLogs(name)
				t.Fatalf("%s is %s; logs:\n%s", name, state, logs)
			}
			return c.Health(ctx) == nil
		})
		task, err := c.Submit(ctx, wire.SubmitRequest{
			Subagent: schemas.Subagent{Name: "asker", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", askScript}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wait := func(want wire.State) *wire.Task {
			t.Helper()
			var got *wire.Task
			testutil.Eventually(t, 2*time.Minute, fmt.Sprintf("task %s %s", task.ID, want), func() bool {
				if got, err = c.Get(ctx, task.ID); err != nil {
					t.Fatal(err)
				}
				if got.State.Terminal() && got.State != want {
					logs, _ := dockerLogs(name)
					t.Fatalf("task %s ended %s (%+v), want %s; serve's logs:\n%s", task.ID, got.State, got.Outcome, want, logs)
				}
				return got.State == want
			})
			return got
		}
		wait(wire.StateNeedsInput)
		if _, err := c.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "B", By: "ci"}); err != nil {
			t.Fatal(err)
		}
		done := wait(wire.StateFinished)
		if n := len(done.Rounds); n != 2 {
			t.Errorf("task %s has %d rounds, want 2", task.ID, n)
		}
		var out bytes.Buffer
		if err := c.Logs(ctx, task.ID, 2, false, &out); err != nil {
			t.Fatal(err)
		}
		if want := "answer B; round 1 left: notes from round 1"; !strings.Contains(out.String(), want) {
			t.Errorf("round 2's output = %q, want it to contain %q", out.String(), want)
		}
		testutil.Eventually(t, time.Minute, "the container healthy", func() bool {
			h, _ := docker(ctx, nil, "inspect", "--format", "{{.State.Health.Status}}", name)
			return h == "healthy"
		})
	})
}

// askScript asks in round 1, leaving a note in its workspace; in round 2
// it prints the answer and the note, and fails without either.
const askScript = `set -e
if [ -z "$AGORA_ANSWER" ]; then
  echo "notes from round 1" > notes.txt
  agora-worker ask "A or B?" --option A --option B
  exit 0
fi
echo "answer $AGORA_ANSWER; round 1 left: $(cat notes.txt)"
`

// userDir is a data dir made as docs/image.md says, for the image's user:
// install -d -m 0700 -o 65532 -g 65532 DIR.
func userDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agora")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65532, 65532); err != nil {
		need(t, "a data dir for uid 65532 (run as root, as install -d -o 65532 does): %v", err)
	}
	return dir
}

// dangling are the engine's untagged images nothing else is built on.
func dangling(t *testing.T) map[string]bool {
	t.Helper()
	out, err := docker(context.Background(), nil, "images", "-q", "--no-trunc", "--filter", "dangling=true")
	if err != nil {
		t.Errorf("list dangling images: %v", err)
	}
	got := map[string]bool{}
	for _, id := range strings.Fields(out) {
		got[id] = true
	}
	return got
}

// dropBuildStage removes what the classic builder keeps of the build stage
// this run compiled — about 200 MB a run, never reused, as VERSION differs
// each time — but keeps its layers up to `go mod download` (apt-get, the
// modules) under a tag per Go image, for the next run to start from. An
// image that another run is still building on cannot be removed and is
// left to that run.
func dropBuildStage(t *testing.T, base string, before map[string]bool) {
	t.Helper()
	ctx := context.Background()
	cacheTag := "agora-serve-test-cache:" + strings.ReplaceAll(strings.TrimPrefix(base, "agora-test-golang-warm:"), ":", "-")
	for id := range dangling(t) {
		if before[id] {
			continue
		}
		hist, err := docker(ctx, nil, "history", "--no-trunc", "--format", "{{.ID}}\t{{.CreatedBy}}", id)
		if err != nil || !strings.Contains(hist, "go mod download") {
			continue // not a build stage of the Dockerfile
		}
		for line := range strings.SplitSeq(hist, "\n") {
			if layer, cmd, _ := strings.Cut(line, "\t"); strings.Contains(cmd, "go mod download") && layer != "<missing>" {
				if _, err := docker(ctx, nil, "tag", layer, cacheTag); err != nil {
					t.Logf("keep the build cache: %v", err)
				}
				break
			}
		}
		if _, err := docker(ctx, nil, "rmi", id); err != nil {
			t.Logf("remove the build stage: %v", err)
		}
	}
}

// dockerLogs is a container's output, stdout and stderr together.
func dockerLogs(name string) (string, error) {
	cmd := exec.Command("docker", "logs", name)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// builtWorker finds the worker image serve logs it builds
// (images.Build: msg="building worker image" image=TAG).
var builtWorker = regexp.MustCompile(`msg="building worker image" image=(\S+)`)

// workerImages are the worker images on the engine (images.Build labels
// them with their inputs).
func workerImages(t *testing.T) map[string]bool {
	t.Helper()
	out, err := docker(context.Background(), nil, "images", "--filter", "label=agora.image.inputs", "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		t.Errorf("list worker images: %v", err)
	}
	got := map[string]bool{}
	for _, l := range strings.Fields(out) {
		got[l] = true
	}
	return got
}
