package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerLinksNoServerSide keeps the static worker binary small and its
// attack surface narrow: it must not link nats-server, the Docker SDK or the
// orchestrator. Nor the JSON Schema library, whose package init compiles
// every draft's meta-schema in each worker process (package schemas has its
// own validator; docs/benchmarks.md).
func TestWorkerLinksNoServerSide(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/nats-io/nats-server",
		"github.com/docker/docker",
		"github.com/agoradev/agora/orchestrator",
		"github.com/agoradev/agora/internal/compute",
		"github.com/agoradev/agora/internal/natsserver",
		"github.com/santhosh-tekuri/jsonschema",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("agora-worker links %s", dep)
			}
		}
	}
}
