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

// TestHeapAdvisedBeforeLargeInits runs the built worker with the runtime's
// init trace: hugeheap/atstart must initialise before the packages whose
// inits allocate most of the start-up's heap (the JSON Schema library, the
// AWS SDK), or their pages are touched before the heap may take huge pages
// (docs/benchmarks.md). An import added to hugeheap could move it later.
func TestHeapAdvisedBeforeLargeInits(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(workerBin, "version")
	cmd.Env = append(cmd.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agora-worker version: %v\n%s", err, out)
	}
	order := map[string]int{}
	for i, line := range strings.Split(string(out), "\n") {
		// "init github.com/… @1.9 ms, 0.25 ms clock, 4096 bytes, 1 allocs"
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			if _, seen := order[f[1]]; !seen {
				order[f[1]] = i
			}
		}
	}
	const advise = "github.com/agoradev/agora/internal/hugeheap/atstart"
	at, ok := order[advise]
	if !ok {
		t.Fatalf("no init of %s in the trace: agora-worker does not import it\n%s", advise, out)
	}
	for pkg, i := range order {
		if (strings.HasPrefix(pkg, "github.com/santhosh-tekuri/jsonschema") || strings.HasPrefix(pkg, "github.com/aws/")) && i < at {
			t.Errorf("%s initialises before %s", pkg, advise)
		}
	}
}
