package main

import (
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/schemas"
)

// workerOutput is a round's stored output as a container leaves it: the
// sub-agent's lines with the worker's event lines among them.
const workerOutput = `{"kind":"dispatch.started","dispatch_id":"w-r1","time":"2026-01-01T00:00:00Z","mac":"00"}
compiling
{"kind":"dispatch.needs_input","dispatch_id":"w-r1","time":"2026-01-01T00:00:01Z","needs_input":{"question":"A?"},"mac":"01"}
{"kind": "mine", "printed": "by the sub-agent"}
done, no newline`

// TestLogsHidesWorkerLines: logs shows what the sub-agent printed; the
// worker's event lines only with --worker.
func TestLogsHidesWorkerLines(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	s.submit(t, "w")
	if err := s.store.Put(t.Context(), orchestrator.OutputKey("w-r1"), strings.NewReader(workerOutput)); err != nil {
		t.Fatal(err)
	}
	s.end(t, "w", "w-r1", schemas.KindFinished, orchestrator.StateFinished)
	want := "compiling\n{\"kind\": \"mine\", \"printed\": \"by the sub-agent\"}\ndone, no newline"
	if r := agora(t, s.env, "logs", "w"); r.code != 0 || r.stdout != want {
		t.Errorf("logs w = %v; want only the sub-agent's lines %q", r, want)
	}
	if r := agora(t, s.env, "logs", "w", "--worker"); r.code != 0 || r.stdout != workerOutput {
		t.Errorf("logs w --worker = %v; want the whole output", r)
	}
}

// TestSubagentLinesChunks: lines split across writes are judged whole.
func TestSubagentLinesChunks(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	f := &subagentLines{w: &b}
	for i := 0; i < len(workerOutput); i += 7 {
		if _, err := f.Write([]byte(workerOutput[i:min(i+7, len(workerOutput))])); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "compiling\n{\"kind\": \"mine\", \"printed\": \"by the sub-agent\"}\ndone, no newline"; b.String() != want {
		t.Errorf("filtered in 7-byte chunks = %q; want %q", b.String(), want)
	}
}
