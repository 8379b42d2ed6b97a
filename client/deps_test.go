package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientDependencies keeps the package an integrator imports light: the
// standard library, the wire types and the schemas, nothing else of agora's
// or anybody's (the schemas' JSON Schema compiler is the one exception).
func TestClientDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{
		"github.com/agoradev/agora/client":         true,
		"github.com/agoradev/agora/wire":           true,
		"github.com/agoradev/agora/schemas":        true,
		"github.com/santhosh-tekuri/jsonschema/v5": true,
	}
	for _, dep := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(dep, "/")
		if !strings.Contains(first, ".") || allowed[dep] {
			continue // the standard library (vendor/golang.org/… included)
		}
		t.Errorf("client imports %s", dep)
	}
}
