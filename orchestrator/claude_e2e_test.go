package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
	"github.com/agoradev/agora/internal/compute/docker"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestClaudeCodeResumesItsSession runs a two-round Claude Code task through
// the whole stack — orchestrator, NATS, runner, Docker, the worker and the
// claude-code adapter — against the stand-in claude (fakeclaude) installed
// in the worker image. Round 1 asks; its container, and with it Claude
// Code's config dir (HOME=/tmp), is gone when round 2 starts, so round 2
// can resume round 1's conversation only from the workspace snapshot. The
// stand-in reports, on stderr, how it was started and what conversation
// it found; round 2 must have run with --resume and round 1's session id,
// and have had round 1's prompt in its conversation. Each round's session
// id, turns, tokens and cost are on the task's rounds.
func TestClaudeCodeResumesItsSession(t *testing.T) {
	t.Parallel()
	testenv.NeedDocker(t, workerImage, dockerErr)
	// Built first, so it is removed last: after the stack's containers.
	image := claudeImage(t)
	s := newStack(t, nil)
	env := envBundle(t, s.store, "fake-claude", `{"values": {"`+fakeclaude.ModeEnv+`": "`+fakeclaude.ModeAskOnce+`", "`+fakeclaude.RecordEnv+`": "`+fakeclaude.RecordToStderr+`"}}`)
	ctx := context.Background()

	task := s.submit(wire.SubmitRequest{
		Subagent: schemas.Subagent{Name: "painter", Runtime: schemas.RuntimeClaudeCode, Prompt: "Paint the fence.", Model: "claude-test-model"},
		Input:    []byte(`{"fence": "north"}`),
		Env:      []schemas.BundleRef{env},
		Image:    image,
	})
	task = s.waitState(task.ID, wire.StateNeedsInput, wire.StateFailed)
	if task.State != wire.StateNeedsInput {
		t.Fatalf("round 1 ended %s: %+v\n%s", task.State, task.Outcome, s.output(task.Rounds[0].DispatchID))
	}
	rec1 := fakeRecord(t, s.output(task.Rounds[0].DispatchID))
	if rec1.Resumed != "" || rec1.SessionID == "" || !strings.Contains(rec1.Prompt, "Paint the fence.") {
		t.Fatalf("round 1 ran as %+v, want a new session with the whole prompt", rec1)
	}
	u1 := task.Rounds[0].Usage
	want1 := fakeclaude.ReportedUsage("claude-test-model", false)
	want1.SessionID = rec1.SessionID
	if u1 == nil || *u1 != want1 {
		t.Errorf("round 1 usage = %+v, want %+v", u1, want1)
	}

	if _, err := s.orch.Answer(ctx, wire.AnswerRequest{TaskID: task.ID, Answer: "B", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	task = s.waitState(task.ID, wire.StateFinished, wire.StateFailed)
	if task.State != wire.StateFinished {
		t.Fatalf("task ended %s: %+v\n%s", task.State, task.Outcome, s.output(task.Rounds[1].DispatchID))
	}
	rec2 := fakeRecord(t, s.output(task.Rounds[1].DispatchID))
	i := slices.Index(rec2.Args, "--resume")
	if i < 0 || i+1 >= len(rec2.Args) || rec2.Args[i+1] != rec1.SessionID {
		t.Errorf("round 2 ran with %q, want --resume %s (round 1's session)", rec2.Args, rec1.SessionID)
	}
	if rec2.SessionID != rec1.SessionID || len(rec2.Conversation) != 1 || rec2.Conversation[0] != rec1.Prompt {
		t.Errorf("round 2 ran in session %s with conversation %q, want round 1's session %s with round 1's prompt", rec2.SessionID, rec2.Conversation, rec1.SessionID)
	}
	if !strings.Contains(rec2.Prompt, "**Answer:** B") || strings.Contains(rec2.Prompt, "Paint the fence.") {
		t.Errorf("round 2's message = %q, want the answer alone, not the whole prompt again", rec2.Prompt)
	}
	if rec2.Env["HOME"] != "/tmp" || rec2.ConfigDir != "/tmp/.claude" {
		t.Errorf("round 2's claude ran with HOME %q, config dir %q; want the container's own /tmp/.claude", rec2.Env["HOME"], rec2.ConfigDir)
	}
	u2 := task.Rounds[1].Usage
	want2 := fakeclaude.ReportedUsage("claude-test-model", true)
	want2.SessionID, want2.Resumed = rec1.SessionID, true
	if u2 == nil || *u2 != want2 {
		t.Errorf("round 2 usage = %+v, want %+v", u2, want2)
	}
	if want, _ := json.Marshal(fakeclaude.ResultText); string(task.Result) != string(want) {
		t.Errorf("task result = %s, want the stream's result text %s", task.Result, want)
	}
	// agora stats sums the two rounds' usage for the task.
	st, err := s.orch.Stats(ctx, wire.StatsOptions{Subagent: "painter"})
	if err != nil {
		t.Fatal(err)
	}
	wantUsage := wire.UsageStats{Tasks: 1, InputTokens: want1.InputTokens + want2.InputTokens, OutputTokens: want1.OutputTokens + want2.OutputTokens,
		CacheCreationInputTokens: want1.CacheCreationInputTokens + want2.CacheCreationInputTokens,
		CacheReadInputTokens:     want1.CacheReadInputTokens + want2.CacheReadInputTokens, CostUSD: want1.CostUSD + want2.CostUSD}
	wantUsage.TokensPerTask = float64(wantUsage.InputTokens + wantUsage.OutputTokens + wantUsage.CacheCreationInputTokens + wantUsage.CacheReadInputTokens)
	wantUsage.CostPerTaskUSD = wantUsage.CostUSD
	if u := st.Total.Usage; u == nil || *u != wantUsage || st.Total.Questions != 1 || st.Total.Rounds != 2 {
		t.Errorf("stats of painter = %+v, usage %+v; want one question, 2 rounds, usage %+v", st.Total, u, wantUsage)
	}
}

// claudeImage is the worker image with the stand-in claude at
// /usr/local/bin/claude, removed when the test ends.
func claudeImage(t *testing.T) string {
	t.Helper()
	eng, err := docker.New(docker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Logf("close the Docker client: %v", err)
		}
	})
	bin := testenv.Binary(t, "github.com/agoradev/agora/adapters/claudecode/fakeclaude/cmd/claude", false)
	claude, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM " + workerImage + "\nCOPY claude /usr/local/bin/claude\n"
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"claude", 0o755, claude}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("agora-claude-test:%d-%d", testutil.RunNumber(), seq.Add(1))
	if err := eng.BuildImage(context.Background(), &ctxTar, tag, map[string]string{"agora.test": "claude"}); err != nil {
		t.Fatalf("build the stand-in claude image: %v", err)
	}
	t.Cleanup(func() {
		if err := eng.RemoveImage(context.Background(), tag); err != nil {
			t.Errorf("remove %s: %v", tag, err)
		}
	})
	return tag
}

// envBundle stores an env bundle content-addressed and returns its ref.
func envBundle(t *testing.T, store storage.Store, name, data string) schemas.BundleRef {
	t.Helper()
	_, ref, err := storage.PutBlob(context.Background(), store, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return schemas.BundleRef{Name: name, SHA256: ref.SHA256}
}

// fakeRecord is the one record the stand-in claude wrote into a round's
// output.
func fakeRecord(t *testing.T, output string) fakeclaude.Record {
	t.Helper()
	recs, err := fakeclaude.FindRecords(output)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records in the round's output = %d, %v; want one:\n%s", len(recs), err, output)
	}
	return recs[0]
}
