package images_test

import (
	"os"
	"path"
	"strings"
	"testing"

	"github.com/agoradev/agora/images"
)

// TestServerDockerfileInStep keeps the top-level Dockerfile (the `agora
// serve` image for users with a registry) in step with the worker image:
// the same non-root user, the worker where the runner expects it, static
// binaries, and agora as the entrypoint. It reads the file only: nothing
// is built.
func TestServerDockerfileInStep(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	final := finalStage(df)
	if final["FROM"] != "scratch" {
		t.Errorf("Dockerfile's final stage is FROM %q, want scratch", final["FROM"])
	}
	if final["USER"] != images.User {
		t.Errorf("Dockerfile USER = %q, want the worker image's %q", final["USER"], images.User)
	}
	if want := `["/usr/local/bin/agora"]`; final["ENTRYPOINT"] != want {
		t.Errorf("Dockerfile ENTRYPOINT = %q, want %q", final["ENTRYPOINT"], want)
	}
	for _, want := range []string{
		"CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/agora ./cmd/agora",
		"CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /out/agora-worker ./cmd/agora-worker",
		"/out/agora-worker " + path.Dir(images.WorkerPath) + "/",
		images.DefaultBusybox,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}
