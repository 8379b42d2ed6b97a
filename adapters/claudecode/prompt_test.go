package claudecode_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/adapters/claudecode"
	"github.com/agoradev/agora/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Each testdata/<case>.json is a dispatch spec; testdata/<case>.golden.txt is
// the prompt it renders to. Run with -update to accept a change.
func TestRenderPromptGolden(t *testing.T) {
	t.Parallel()
	cases, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no testdata/*.json cases")
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := readSpec(t, path)
			got := claudecode.RenderPrompt(spec)
			if again := claudecode.RenderPrompt(spec); again != got {
				t.Fatalf("RenderPrompt(%s) is not deterministic", path)
			}
			golden := filepath.Join("testdata", name+".golden.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("RenderPrompt(%s) differs from %s (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, golden, got, want)
			}
			if spec.Resume == nil {
				return
			}
			// A resumed round that resumes its Claude Code session gets
			// only the next message.
			got = claudecode.RenderResumeMessage(spec)
			golden = filepath.Join("testdata", name+".session.golden.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want, err = os.ReadFile(golden); err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("RenderResumeMessage(%s) differs from %s (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, golden, got, want)
			}
		})
	}
}

// Whatever the spec, the prompt carries the sub-agent's prompt and tells it
// where to write the sentinel.
func TestRenderPromptAlwaysTeachesTheSentinel(t *testing.T) {
	t.Parallel()
	spec := &schemas.DispatchSpec{DispatchID: "d", Subagent: schemas.Subagent{Name: "n", Runtime: schemas.RuntimeClaudeCode, Prompt: "Do the thing."}}
	got := claudecode.RenderPrompt(spec)
	for _, want := range []string{"Do the thing.", schemas.SentinelPath, "AGORA_NEEDS_INPUT_FILE", "partial_state", "agora-needs-input"} {
		if !strings.Contains(got, want) {
			t.Errorf("RenderPrompt() lacks %q:\n%s", want, got)
		}
	}
}

func readSpec(t *testing.T, path string) *schemas.DispatchSpec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := schemas.ParseDispatchSpec(data)
	if err != nil {
		t.Fatalf("fixture %s is not a valid dispatch spec: %v", path, err)
	}
	return spec
}
