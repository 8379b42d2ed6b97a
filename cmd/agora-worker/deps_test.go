package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestWorkerLinksNoServerSide keeps the static worker binary small and its
// attack surface narrow: it must not link nats-server, the Docker SDK or the
// orchestrator. It validates with the JSON Schema library the design names,
// github.com/santhosh-tekuri/jsonschema/v5, as the server does (its cost is
// in docs/benchmarks.md).
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
	}
	const validator = "github.com/santhosh-tekuri/jsonschema/v5"
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, validator) {
		t.Errorf("agora-worker does not link %s: it validates with no JSON Schema implementation but the design's", validator)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("agora-worker links %s", dep)
			}
		}
	}
}
