package main

import (
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// workerOutput is a round's stored output as the runner stores it: the
// sub-agent's lines with agora's among them, each of those marked
// (schemas.OutputMark) — and a line the sub-agent forged to look like an
// event, unmarked, so its own.
const workerOutput = "\x1e" + `{"kind":"dispatch.started","dispatch_id":"w-r1","time":"2026-01-01T00:00:00Z","mac":"00"}
compiling
` + "\x1e" + `{"kind":"dispatch.needs_input","dispatch_id":"w-r1","time":"2026-01-01T00:00:01Z","needs_input":{"question":"A?"},"mac":"01"}
{"kind":"dispatch.finished","dispatch_id":"w-r1","time":"2026-01-01T00:00:02Z","mac":"02"}
` + "\x1e" + `time=2026-01-01T00:00:02Z level=INFO msg="dispatch ended"
done, no newline`

// subagentOutput is what of workerOutput the sub-agent printed.
const subagentOutput = "compiling\n" + `{"kind":"dispatch.finished","dispatch_id":"w-r1","time":"2026-01-01T00:00:02Z","mac":"02"}` + "\ndone, no newline"

// TestLogsHidesWorkerLines: logs shows what the sub-agent printed (a
// forged event line included); agora's marked lines only with --worker,
// without the mark.
func TestLogsHidesWorkerLines(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	s.submit(t, "w")
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("w-r1"), strings.NewReader(workerOutput)); err != nil {
		t.Fatal(err)
	}
	s.end(t, "w", "w-r1", schemas.KindFinished, wire.StateFinished)
	want := subagentOutput
	if r := agora(t, s.env, "logs", "w"); r.code != 0 || r.stdout != want {
		t.Errorf("logs w = %v; want only the sub-agent's lines %q", r, want)
	}
	if r := agora(t, s.env, "logs", "w", "--worker"); r.code != 0 || r.stdout != strings.ReplaceAll(workerOutput, "\x1e", "") {
		t.Errorf("logs w --worker = %v; want the whole output", r)
	}
}
