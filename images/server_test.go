package images_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/computetest"
)

// TestServerImage builds the `agora serve` image the way the top-level
// Dockerfile lays it out — the worker image plus agora — from locally built
// binaries (no registry), and runs agora in it.
func TestServerImage(t *testing.T) {
	t.Parallel()
	e := computetest.Docker(t)
	ctx := context.Background()
	worker := buildWorker(t)
	agora := filepath.Join(t.TempDir(), "agora")
	build := exec.Command("go", "build", "-trimpath", "-o", agora, "./cmd/agora")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/agora: %v\n%s", err, out)
	}
	suffix := computetest.RandomSuffix()
	workerTag, serverTag := "agora-worker:server-test-"+suffix, "agora:server-test-"+suffix
	t.Cleanup(func() {
		_ = e.RemoveImage(context.Background(), serverTag)
		_ = e.RemoveImage(context.Background(), workerTag)
	})
	if _, err := images.Build(ctx, e, images.Options{WorkerBinary: worker, Tag: workerTag}); err != nil {
		t.Fatal(err)
	}
	res, err := images.BuildServer(ctx, e, images.ServerOptions{AgoraBinary: agora, WorkerImage: workerTag, Tag: serverTag})
	if err != nil || res.Skipped {
		t.Fatalf("BuildServer = %+v, %v", res, err)
	}
	if again, err := images.BuildServer(ctx, e, images.ServerOptions{AgoraBinary: agora, WorkerImage: workerTag, Tag: serverTag}); err != nil || !again.Skipped {
		t.Errorf("second BuildServer = %+v, %v; want skipped", again, err)
	}
	_, stdout, _ := runContainer(t, e, compute.ContainerSpec{Image: serverTag, Cmd: []string{"version"}, User: images.User})
	if !strings.HasPrefix(stdout, "agora ") {
		t.Errorf("agora version in the server image printed %q", stdout)
	}
	_, stdout, _ = runContainer(t, e, compute.ContainerSpec{Image: serverTag, Entrypoint: []string{images.WorkerPath}, Cmd: []string{"version"}, User: images.User})
	if !strings.HasPrefix(stdout, "agora-worker ") {
		t.Errorf("the server image lacks the worker: %q", stdout)
	}
	if _, err := images.BuildServer(ctx, e, images.ServerOptions{AgoraBinary: agora, WorkerImage: "agora-worker:missing-" + suffix}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("BuildServer on a missing worker image = %v", err)
	}
	// The Dockerfile users build with a registry has the same layout.
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/usr/local/bin/agora", "agora-worker", "USER 65532", fmt.Sprintf(`ENTRYPOINT ["%s"]`, images.AgoraPath)} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}
