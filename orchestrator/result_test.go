package orchestrator

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// finishWith plays the current round of task id to dispatch.finished
// carrying result and artifacts, and waits until the task has applied it.
func (s *limitsStack) finishWith(t *testing.T, id string, result json.RawMessage, ref *schemas.ObjectRef, arts []schemas.Artifact, kind schemas.EventKind) *wire.Task {
	t.Helper()
	task, err := s.orch.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	r := currentRound(task)
	zero, ms := 0, int64(10)
	ev := schemas.Event{Kind: kind, DispatchID: r.DispatchID, Time: time.Now().UTC(), ExitCode: &zero, DurationMS: &ms,
		Result: result, ResultRef: ref, Artifacts: arts}
	if kind == schemas.KindFailed {
		ev.Failure = &schemas.Failure{Reason: schemas.ReasonProviderFailed, Detail: "exit 1"}
		ev.Result, ev.ResultRef, ev.Artifacts = nil, nil, nil
	}
	if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
		t.Fatalf("publish %s of %s: %v", kind, r.DispatchID, err)
	}
	testutil.Eventually(t, 30*time.Second, "round "+r.DispatchID+" ended", func() bool {
		task, err = s.orch.Get(t.Context(), id)
		return err == nil && currentRound(task).State.Terminal()
	})
	return task
}

// TestResultOnRoundAndTask: a finished round's result and artifacts are
// recorded on it and on the task (read back by sha256 from this server's
// storage, not the event's URI); lists keep the task's, not the rounds';
// a later round that fails leaves the task with none.
func TestResultOnRoundAndTask(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	ctx := t.Context()
	_, blob, err := storage.PutBlob(ctx, s.store, strings.NewReader("report body"))
	if err != nil {
		t.Fatal(err)
	}
	arts := []schemas.Artifact{{Name: "out/report.txt", Size: blob.Size, SHA256: blob.SHA256, URI: "file:///staged/elsewhere"}}
	s.submit(t, "res")
	task := s.finishWith(t, "res", json.RawMessage(`{"verdict":"ok"}`), nil, arts, schemas.KindFinished)
	r := task.Rounds[0]
	if task.State != wire.StateFinished || string(task.Result) != `{"verdict":"ok"}` || string(r.Result) != `{"verdict":"ok"}` {
		t.Fatalf("task %s result %s, round result %s; want finished with the result on both", task.State, task.Result, r.Result)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "out/report.txt" || task.Artifacts[0].SHA256 != blob.SHA256 || len(r.Artifacts) != 1 {
		t.Errorf("artifacts task %+v round %+v; want the one artifact on both", task.Artifacts, r.Artifacts)
	}
	got, err := s.orch.Result(ctx, "res")
	if err != nil || string(got) != `{"verdict":"ok"}` {
		t.Errorf("Result = %s, %v", got, err)
	}
	a, rc, err := s.orch.OpenArtifact(ctx, "res", "out/report.txt")
	if err != nil {
		t.Fatalf("OpenArtifact = %v", err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "report body" || a.Size != blob.Size {
		t.Errorf("artifact = %+v %q, want the stored blob", a, body)
	}
	if _, _, err := s.orch.OpenArtifact(ctx, "res", "nope"); !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), "it has out/report.txt") {
		t.Errorf("OpenArtifact(nope) = %v, want ErrNotFound naming what it has", err)
	}
	listed := ListView(task)
	if string(listed.Result) != `{"verdict":"ok"}` || len(listed.Artifacts) != 1 || listed.Rounds[0].Result != nil || listed.Rounds[0].Artifacts != nil {
		t.Errorf("list view: task result %s artifacts %d, round result %s artifacts %d; want the task's kept and the round's left out",
			listed.Result, len(listed.Artifacts), listed.Rounds[0].Result, len(listed.Rounds[0].Artifacts))
	}

	// A follow-up round that fails: the task hands back nothing.
	if _, err := s.orch.Continue(ctx, "res", "once more", "tester"); err != nil {
		t.Fatal(err)
	}
	task = s.finishWith(t, "res", nil, nil, nil, schemas.KindFailed)
	if task.State != wire.StateFailed || task.Result != nil || task.Artifacts != nil || string(task.Rounds[0].Result) != `{"verdict":"ok"}` {
		t.Errorf("after a failed round 2: task %s result %s artifacts %v, round 1 result %s; want none on the task, round 1's kept",
			task.State, task.Result, task.Artifacts, task.Rounds[0].Result)
	}
	if got, err := s.orch.Result(ctx, "res"); err != nil || string(got) != "null" {
		t.Errorf("Result of a failed task = %s, %v; want null", got, err)
	}
}

// TestResultRefReadByHash: a result_ref is read from this server's storage
// by its sha256, whatever URI the event named, and a blob that is not what
// the sha256 says is refused.
func TestResultRefReadByHash(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	ctx := t.Context()
	big := `"` + strings.Repeat("z", 20<<10) + `"`
	_, blob, err := storage.PutBlob(ctx, s.store, strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	s.submit(t, "byref")
	ref := &schemas.ObjectRef{URI: "file:///etc/passwd", SHA256: blob.SHA256, Size: blob.Size}
	task := s.finishWith(t, "byref", nil, ref, nil, schemas.KindFinished)
	if task.ResultRef == nil || task.ResultRef.URI != s.store.URI(storage.BlobKey(blob.SHA256)) {
		t.Errorf("task result_ref = %+v; want it pointing at this server's blob", task.ResultRef)
	}
	if got, err := s.orch.Result(ctx, "byref"); err != nil || string(got) != big {
		t.Errorf("Result = %d bytes, %v; want the stored result", len(got), err)
	}
	if err := s.store.Put(ctx, storage.BlobKey(blob.SHA256), strings.NewReader(strings.Replace(big, "z", "Z", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.orch.Result(ctx, "byref"); !errors.Is(err, storage.ErrIntegrity) {
		t.Errorf("Result of a replaced blob = %v, want ErrIntegrity", err)
	}
}

// TestResultKeepsTheRecordSmall: an inline result that would push the
// task's record past its maximum is stored and referenced instead; an
// artifact list that still does fails the task, saying why.
func TestResultKeepsTheRecordSmall(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{TaskBytes: 16 << 10})
	ctx := t.Context()
	result := json.RawMessage(`"` + strings.Repeat("r", 8<<10) + `"`) // twice (round and task) is over 16 KiB
	s.submit(t, "roomy")
	task := s.finishWith(t, "roomy", result, nil, nil, schemas.KindFinished)
	if task.State != wire.StateFinished || task.Result != nil || task.ResultRef == nil {
		t.Fatalf("task %s, result %d bytes inline, ref %+v; want finished with the result stored by ref", task.State, len(task.Result), task.ResultRef)
	}
	if got, err := s.orch.Result(ctx, "roomy"); err != nil || string(got) != string(result) {
		t.Errorf("Result = %d bytes, %v; want the whole result", len(got), err)
	}

	var arts []schemas.Artifact
	for i := range 200 {
		arts = append(arts, schemas.Artifact{Name: strings.Repeat("n", 40) + string(rune('a'+i%26)) + strings.Repeat("x", i), Size: 1, SHA256: strings.Repeat("ab", 32)})
	}
	s.submit(t, "crowded")
	task = s.finishWith(t, "crowded", nil, nil, arts, schemas.KindFinished)
	if task.State != wire.StateFailed || task.Outcome == nil || task.Outcome.Reason != "max_task_size" || !strings.Contains(task.Outcome.Detail, "200 artifacts") || task.Artifacts != nil {
		t.Errorf("task %s outcome %+v, %d artifacts; want failed max_task_size naming the 200 artifacts, none kept", task.State, task.Outcome, len(task.Artifacts))
	}
}

// TestSubmitRefusesBadOutputs: a glob that leaves the workspace, or that
// path.Match cannot use, is refused at submit, not found after the work.
func TestSubmitRefusesBadOutputs(t *testing.T) {
	t.Parallel()
	s := newLimitsStack(t, Maximums{})
	for glob, want := range map[string]string{
		"../x/*":   `subagent.outputs: glob "../x/*" is not a relative path inside the workspace`,
		"/etc/*":   `subagent.outputs: glob "/etc/*" is not a relative path inside the workspace`,
		"dist/[a-": `subagent.outputs: glob "dist/[a-": syntax error in pattern`,
	} {
		sub := script("out", "true")
		sub.Outputs = []string{"ok/*.txt", glob}
		_, err := s.orch.Submit(t.Context(), wire.SubmitRequest{Subagent: sub})
		if !errors.Is(err, wire.ErrInvalidRequest) || !strings.Contains(err.Error(), want) {
			t.Errorf("Submit(outputs %q) = %v; want ErrInvalidRequest containing %q", glob, err, want)
		}
	}
}
