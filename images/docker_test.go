package images_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/internal/testenv"
)

// TestWorkerImage builds the worker image on the real engine from a freshly
// compiled worker, checks that a second build is skipped, and runs a finished
// exec dispatch in it through the compute engine.
func TestWorkerImage(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	computetest.Busybox(t) // the image must get /bin/sh for the dispatch below
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tag := "agora-worker-test:" + computetest.RandomSuffix()
	t.Cleanup(func() { removeImage(t, e, tag) })
	opts := images.Options{WorkerBinary: worker, Tag: tag, Logger: computetest.Logger(t)}
	begin := time.Now()
	res, err := images.Build(ctx, e, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Logf("first build took %v", time.Since(begin))
	if res.Skipped || !res.Busybox || res.Image != tag || !strings.HasPrefix(res.ID, "sha256:") {
		t.Errorf("first Build = %+v; want a fresh build of %s with busybox", res, tag)
	}
	begin = time.Now()
	again, err := images.Build(ctx, e, opts)
	if err != nil {
		t.Fatalf("second Build: %v", err)
	}
	t.Logf("second build took %v", time.Since(begin))
	if !again.Skipped || again.ID != res.ID || again.InputsHash != res.InputsHash {
		t.Errorf("second Build = %+v; want Skipped with id %s", again, res.ID)
	}

	t.Run("Version", func(t *testing.T) {
		// No entrypoint in the spec: the image's ENTRYPOINT is the worker.
		_, stdout, _ := runContainer(t, e, compute.ContainerSpec{Image: tag, Cmd: []string{"version"}, User: images.User})
		if !strings.HasPrefix(stdout, "agora-worker ") {
			t.Errorf("agora-worker version printed %q", stdout)
		}
	})

	t.Run("Filesystem", func(t *testing.T) {
		script := `id -un; id -u; id -g; pwd; stat -c '%a %u' /tmp /workspace; test -s /etc/ssl/certs/ca-certificates.crt && echo certs
ls /usr/local/bin; echo "$PATH"; echo "$HOME"`
		res, stdout, stderr := runContainer(t, e, compute.ContainerSpec{Image: tag, Entrypoint: []string{"/bin/sh", "-c", script}, User: images.User})
		if !res.Successful() {
			t.Fatalf("probe = %+v, stderr %q", res, stderr)
		}
		want := "agora\n65532\n65532\n/workspace\n1777 0\n755 65532\ncerts\nagora-worker\n" +
			"/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin\n/tmp\n"
		if _, err := os.Stat(images.DefaultCACerts); err != nil {
			want = strings.Replace(want, "certs\n", "", 1)
		}
		if stdout != want {
			t.Errorf("image probe printed\n%s\nwant\n%s", stdout, want)
		}
	})

	t.Run("FinishedDispatch", func(t *testing.T) {
		dispatch := "d-img-" + computetest.RandomSuffix()
		specDir, ws := t.TempDir(), t.TempDir()
		for _, d := range []string{specDir, ws} {
			if err := os.Chmod(d, 0o777); err != nil { // the container user is 65532
				t.Fatal(err)
			}
		}
		spec := map[string]any{
			"dispatch_id": dispatch,
			"subagent":    map[string]any{"name": "hello", "runtime": "exec", "command": []string{"/bin/sh", "-c", "echo hi"}},
			"input":       map[string]any{},
		}
		b, _ := json.Marshal(spec)
		if err := os.WriteFile(filepath.Join(specDir, "spec.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		res, stdout, stderr := runContainer(t, e, compute.ContainerSpec{
			Image:  tag,
			User:   images.User,
			Env:    []string{"AGORA_DISPATCH_ID=" + dispatch, "AGORA_SPEC_FILE=/agora/spec.json"},
			Mounts: []compute.Mount{{Source: specDir, Target: "/agora", ReadOnly: true}, {Source: ws, Target: images.Workspace}},
			Labels: map[string]string{compute.LabelDispatchID: dispatch},
			Init:   true,
		})
		if !res.Successful() {
			t.Fatalf("dispatch container = %+v\nstdout %s\nstderr %s", res, stdout, stderr)
		}
		t.Logf("worker stdout:\n%s", stdout)
		var kinds []string
		var finished map[string]any
		sc := bufio.NewScanner(strings.NewReader(stdout))
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("worker stdout line %q is not a JSON event: %v", sc.Text(), err)
			}
			kinds = append(kinds, ev["kind"].(string))
			if ev["kind"] == "dispatch.finished" {
				finished = ev
			}
		}
		if finished == nil {
			t.Fatalf("no dispatch.finished event on stdout; kinds %v\nstderr %s", kinds, stderr)
		}
		if finished["dispatch_id"] != dispatch || finished["exit_code"] != 0.0 {
			t.Errorf("finished event = %v; want dispatch_id %s, exit_code 0", finished, dispatch)
		}
		if !strings.Contains(stderr, "hi") {
			t.Errorf("the sub-agent's output is not on the worker's stderr: %q", stderr)
		}
	})

	t.Run("OnBase", func(t *testing.T) {
		// The scratch worker image stands in for a user's image.
		baseTag := "agora-worker-test-onbase:" + computetest.RandomSuffix()
		t.Cleanup(func() { removeImage(t, e, baseTag) })
		onBase := images.Options{WorkerBinary: worker, Base: tag, Tag: baseTag, Logger: computetest.Logger(t)}
		res, err := images.Build(ctx, e, onBase)
		if err != nil {
			t.Fatalf("Build on a base: %v", err)
		}
		if res.Skipped || res.Busybox {
			t.Errorf("Build on a base = %+v, want a fresh build without busybox of its own", res)
		}
		if again, err := images.Build(ctx, e, onBase); err != nil || !again.Skipped {
			t.Errorf("second Build on a base = %+v, %v; want Skipped", again, err)
		}
		_, stdout, _ := runContainer(t, e, compute.ContainerSpec{Image: baseTag, Cmd: []string{"version"}, User: images.User})
		if !strings.HasPrefix(stdout, "agora-worker ") {
			t.Errorf("agora-worker version on the base printed %q", stdout)
		}
	})
}

// runContainer runs spec to the end with a test label and returns its result and output.
func runContainer(t *testing.T, e compute.Engine, spec compute.ContainerSpec) (exit.Result, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	labels := computetest.Label(t, e)
	for k, v := range spec.Labels {
		labels[k] = v
	}
	spec.Labels = labels
	id, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := e.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	var stdout, stderr bytes.Buffer
	if err := e.Logs(ctx, id, false, &stdout, &stderr); err != nil {
		t.Fatalf("Logs: %v", err)
	}
	return res, stdout.String(), stderr.String()
}

func removeImage(t *testing.T, r compute.ImageRemover, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.RemoveImage(ctx, tag); err != nil {
		t.Errorf("remove image %s: %v", tag, err)
	}
}
