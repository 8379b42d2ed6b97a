package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/testenv"
)

// TestCIExampleWorkerInJob runs examples/ci/worker-in-job.sh as a CI job
// would: the real agora-worker on PATH, no server, no Docker.
func TestCIExampleWorkerInJob(t *testing.T) {
	t.Parallel()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	script, err := filepath.Abs("../../examples/ci/worker-in-job.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, command string
		extra         string // more spec fields
		code          int
		want          string
	}{
		{"finishes", `echo building`, "", 0, "finished"},
		{"asks", `agora-worker ask "Ship to production?" --option yes --option no --default no`, "", 3, `needs input: {"kind":"dispatch.needs_input"`},
		// The re-run after a question: the spec's resume carries the answer.
		{"resumed", `test "$AGORA_ANSWER" = yes && grep -q shipping .agora/resume.json`,
			`, "round": 2, "resume": {"question": "Ship to production?", "answer": "yes", "partial_state": {"plan": "shipping"}}`, 0, "finished"},
		{"fails", `exit 4`, "", 4, "provider-failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			spec := filepath.Join(dir, "spec.json")
			body := `{"dispatch_id": "ci-` + tt.name + `", "subagent": {"name": "job", "runtime": "exec", "command": ["/bin/sh", "-c", ` + quoteJSON(tt.command) + `]}` + tt.extra + `}`
			if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			ws := filepath.Join(dir, "ws")
			cmd := exec.Command("/bin/sh", script, spec, ws)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(worker)+":"+os.Getenv("PATH"))
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != tt.code || !strings.Contains(string(out), tt.want) {
				t.Errorf("worker-in-job.sh = %d, %s; want %d and %q", cmd.ProcessState.ExitCode(), out, tt.code, tt.want)
			}
		})
	}
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
