package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestDispatchWaitShowsFailedOutput: when the round fails, dispatch --wait
// ends with the last lines the sub-agent printed (not the worker's event
// lines, which the runner marked), so a CI log shows why, not only "exited with code 3".
func TestDispatchWaitShowsFailedOutput(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	r := start(t.Context(), s.env, "dispatch", "--command", "./build.sh", "--task-id", "tail", "--wait")
	s.waitState(t, "tail", wire.StateQueued)
	var out strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&out, "build step %d\n", i)
		if i == 25 {
			out.WriteString(string(schemas.OutputMark) + `{"kind":"dispatch.started","dispatch_id":"tail-r1","time":"2026-01-01T00:00:00Z","mac":"00"}` + "\n")
		}
	}
	out.WriteString("error: the linker ran out of memory")
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("tail-r1"), strings.NewReader(out.String())); err != nil {
		t.Fatal(err)
	}
	s.end(t, "tail", "tail-r1", schemas.KindFailed, wire.StateFailed)
	if code := r.wait(t, time.Minute); code != 1 {
		t.Fatalf("dispatch --wait of a failed round exited %d, want 1; stderr %q", code, r.stderr.String())
	}
	stderr := r.stderr.String()
	want := "round 1's output (its last 20 lines; 'agora logs tail --round 1' shows it all):\n  build step 12\n"
	for i := 13; i <= 30; i++ {
		want += fmt.Sprintf("  build step %d\n", i)
	}
	want += "  error: the linker ran out of memory\nagora dispatch: task tail failed: "
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "build step 11\n") || strings.Contains(stderr, `"kind":"dispatch.`) {
		t.Errorf("dispatch --wait stderr = %q; want it to end with the last 20 lines of the sub-agent's output, then the failure:\n%s", stderr, want)
	}
}
