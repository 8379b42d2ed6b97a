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
	if hc := final["HEALTHCHECK"]; !strings.HasSuffix(hc, `CMD ["/usr/local/bin/agora", "health"]`) {
		t.Errorf("Dockerfile HEALTHCHECK = %q, want agora health", hc)
	}
	if env := final["ENV"]; !strings.Contains(env, "AGORA_LISTEN=") || !strings.Contains(env, "AGORA_DATA_DIR=") {
		t.Errorf("Dockerfile ENV = %q, want AGORA_LISTEN (the health check's listener) and AGORA_DATA_DIR", env)
	}
	for _, want := range []string{
		"ARG GO_IMAGE=golang:1.26\nFROM ${GO_IMAGE} AS build",
		`CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/agora ./cmd/agora`,
		`CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/agora-worker ./cmd/agora-worker`,
		"chmod 1777 /rootfs/tmp",
		"/out/agora-worker " + path.Dir(images.WorkerPath) + "/",
		images.DefaultBusybox,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// TestDockerignore: the build context of the top-level Dockerfile leaves
// out the history and local builds.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for l := range strings.SplitSeq(string(b), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{".git", "bin"} {
		if !lines[want] {
			t.Errorf(".dockerignore lacks %q", want)
		}
	}
}
