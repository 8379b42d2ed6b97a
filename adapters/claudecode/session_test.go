package claudecode_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/claudecode"
	"github.com/agoradev/agora/adapters/claudecode/fakeclaude"
	"github.com/agoradev/agora/schemas"
)

// credential is what an image's Claude Code login would leave in its
// config dir (~/.claude/.credentials.json on Linux): it must never reach
// the workspace, which agora snapshots.
const credential = `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-never-in-a-snapshot"}}`

// TestRunResumesSession runs two rounds as agora does: round 1 asks, its
// container (and so its HOME, where Claude Code keeps its sessions) goes
// away, and only the workspace survives; round 2, given the answer,
// resumes round 1's conversation with --resume and the answer as the next
// message.
func TestRunResumesSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeclaude.ModeAskOnce)
	h.spec.Subagent.Model = "claude-sonnet-4-5"

	home1 := h.newHome(t)
	res1 := h.run(t)
	rec1 := h.record(t)
	if rec1.Resumed != "" || slices.Contains(rec1.Args, "--resume") {
		t.Fatalf("round 1 ran with %q, want a new session", rec1.Args)
	}
	want1 := fakeclaude.ReportedUsage("claude-sonnet-4-5", false)
	want1.SessionID = rec1.SessionID
	if res1.Usage == nil || *res1.Usage != want1 {
		t.Errorf("round 1 Usage = %+v, want %+v", res1.Usage, want1)
	}
	h.checkSaved(t, rec1.SessionID, 1, home1)

	// Round 2: a new container — a new HOME — on the restored workspace,
	// with the answer. The worker removed the sentinel.
	if err := os.Remove(filepath.Join(h.inv.Workspace, ".agora", "needs_input.json")); err != nil {
		t.Fatal(err)
	}
	home2 := h.newHome(t)
	h.nextRound("B")
	res2 := h.run(t)
	rec2 := h.record(t)
	if !containsRun(rec2.Args, []string{"--resume", rec1.SessionID}) || rec2.Resumed != rec1.SessionID {
		t.Errorf("round 2 args = %q, want --resume %s", rec2.Args, rec1.SessionID)
	}
	if want := claudecode.ResumeArgs(h.spec, h.inv.Env, rec1.SessionID); !slices.Equal(rec2.Args, want) {
		t.Errorf("round 2 args = %q, want ResumeArgs = %q", rec2.Args, want)
	}
	if rec2.SessionID != rec1.SessionID {
		t.Errorf("round 2 ran in session %s, want round 1's %s", rec2.SessionID, rec1.SessionID)
	}
	if len(rec2.Conversation) != 1 || rec2.Conversation[0] != rec1.Prompt {
		t.Errorf("round 2 had the conversation %q, want round 1's prompt %q", rec2.Conversation, rec1.Prompt)
	}
	if want := claudecode.RenderResumeMessage(h.spec); rec2.Prompt != want {
		t.Errorf("round 2 stdin = %q, want RenderResumeMessage = %q", rec2.Prompt, want)
	}
	if !rec2.SessionFiles {
		t.Error("round 2: the session's own directory was not restored beside its transcript")
	}
	want2 := fakeclaude.ReportedUsage("claude-sonnet-4-5", true)
	want2.SessionID, want2.Resumed = rec1.SessionID, true
	if res2.Usage == nil || *res2.Usage != want2 {
		t.Errorf("round 2 Usage = %+v, want %+v", res2.Usage, want2)
	}
	if res2.Exit.ExitCode != 0 || res2.Text == nil || *res2.Text != fakeclaude.ResultText {
		t.Errorf("round 2 = exit %+v, text %v; want it finished", res2.Exit, res2.Text)
	}
	// The session kept for a round 3 holds both rounds.
	h.checkSaved(t, rec1.SessionID, 2, home2)
	data, err := os.ReadFile(filepath.Join(h.inv.Workspace, claudecode.SessionDir, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"type":"user"`); n != 2 {
		t.Errorf("kept transcript has %d user messages, want both rounds':\n%s", n, data)
	}
}

// Each case leaves the workspace without a session round 2 can resume;
// round 2 then runs afresh with RenderPrompt — the question, the answer and
// the partial state in it — and says so in its usage.
func TestRunResumeFallsBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// round1Env is added to round 1's environment.
		round1Env []string
		// edit changes the workspace before round 2 (session: round 1's id).
		edit func(t *testing.T, ws, session string)
		// retried: round 2 tried --resume, claude refused it, and it ran
		// again afresh.
		retried bool
	}{
		{name: "no session in the workspace", edit: func(t *testing.T, ws, _ string) {
			removeAll(t, filepath.Join(ws, claudecode.SessionDir))
		}},
		{name: "session from another workspace", edit: func(t *testing.T, ws, _ string) {
			editRecord(t, ws, func(m map[string]any) { m["workspace"] = "/elsewhere" })
		}},
		{name: "session id that is a path", edit: func(t *testing.T, ws, _ string) {
			editRecord(t, ws, func(m map[string]any) { m["session_id"] = "../../etc" })
		}},
		{name: "project dir that is a path", edit: func(t *testing.T, ws, _ string) {
			editRecord(t, ws, func(m map[string]any) { m["project_dir"] = "../x" })
		}},
		{name: "unknown field in session.json", edit: func(t *testing.T, ws, _ string) {
			editRecord(t, ws, func(m map[string]any) { m["Session_ID"] = "x" })
		}},
		{name: "session.json not JSON", edit: func(t *testing.T, ws, _ string) {
			writeFile(t, filepath.Join(ws, claudecode.SessionDir, "session.json"), "{")
		}},
		{name: "transcript is a symlink", edit: func(t *testing.T, ws, _ string) {
			p := filepath.Join(ws, claudecode.SessionDir, "transcript.jsonl")
			removeAll(t, p)
			if err := os.Symlink("/etc/passwd", p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a session file is a symlink", edit: func(t *testing.T, ws, _ string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(ws, claudecode.SessionDir, "files", "leak")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "round 1 kept no session (--no-session-persistence)", round1Env: []string{claudecode.EnvExtraArgs + "=--no-session-persistence"}},
		{name: "claude finds no conversation where it was put", retried: true, edit: func(t *testing.T, ws, _ string) {
			editRecord(t, ws, func(m map[string]any) { m["project_dir"] = "-somewhere-else" })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fakeclaude.ModeAskOnce)
			h.newHome(t)
			base := h.inv.Env
			h.inv.Env = append(slices.Clip(base), tt.round1Env...)
			h.run(t)
			rec1 := h.record(t)
			h.inv.Env = base
			if tt.edit != nil {
				tt.edit(t, h.inv.Workspace, rec1.SessionID)
			}
			removeAll(t, filepath.Join(h.inv.Workspace, ".agora", "needs_input.json"))
			h.newHome(t)
			h.nextRound("B")
			res := h.run(t)
			rec := h.record(t)
			if slices.Contains(rec.Args, "--resume") || rec.Resumed != "" || rec.SessionID == rec1.SessionID {
				t.Errorf("round 2 args = %q in session %s, want a new session (round 1's was %s)", rec.Args, rec.SessionID, rec1.SessionID)
			}
			if want := claudecode.RenderPrompt(h.spec); rec.Prompt != want {
				t.Errorf("round 2 stdin = %q, want the whole prompt %q", rec.Prompt, want)
			}
			if res.Exit.ExitCode != 0 || res.Usage == nil || res.Usage.Resumed || res.Usage.SessionID != rec.SessionID {
				t.Errorf("round 2 = exit %+v, usage %+v; want it finished afresh in session %s", res.Exit, res.Usage, rec.SessionID)
			}
			refused := strings.Contains(h.stdout.String(), "No conversation found with session ID: "+rec1.SessionID)
			if refused != tt.retried {
				t.Errorf("round 2 stream has claude's refusal of --resume: %t, want %t:\n%s", refused, tt.retried, h.stdout.String())
			}
		})
	}
}

// --- helpers ---

// newHome gives the next run a HOME of its own, as a new container has,
// with the credentials an image's Claude Code login leaves in the config
// dir, and returns it.
func (h *harness) newHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".claude", ".credentials.json"), credential)
	h.inv.Env = adapters.MergeEnv(h.inv.Env, "HOME="+home)
	return home
}

// nextRound turns the spec into the next round's, answered with answer.
func (h *harness) nextRound(answer string) {
	h.spec.Round = h.spec.EffectiveRound() + 1
	h.spec.DispatchID = "d-test-" + answer
	q := fakeclaude.AskSentinel()
	h.spec.Resume = &schemas.Resume{Question: q.Question, Options: q.Options, Context: q.Context, Answer: answer, PartialState: q.PartialState}
}

func (h *harness) run(t *testing.T) adapters.Result {
	t.Helper()
	res, err := claudecode.New().Run(t.Context(), h.inv)
	if err != nil {
		t.Fatalf("Run() error = %v (stderr %q)", err, h.stderr.String())
	}
	return res
}

// checkSaved checks that the workspace keeps session id, left by round,
// as its transcript in home's config dir is, and nothing else of the
// config dir: no credentials, no app state.
func (h *harness) checkSaved(t *testing.T, id string, round int, home string) {
	t.Helper()
	dir := filepath.Join(h.inv.Workspace, claudecode.SessionDir)
	data, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		t.Fatalf("round %d left no session: %v", round, err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"session_id": id, "workspace": h.inv.Workspace, "project_dir": fakeclaude.ProjectDirName(h.inv.Workspace), "round": float64(round)}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("session.json %s = %v, want %v", k, rec[k], v)
		}
	}
	transcript, err := os.ReadFile(fakeclaude.TranscriptPath(filepath.Join(home, ".claude"), h.inv.Workspace, id))
	if err != nil {
		t.Fatal(err)
	}
	if kept, err := os.ReadFile(filepath.Join(dir, "transcript.jsonl")); err != nil || string(kept) != string(transcript) {
		t.Errorf("kept transcript = %q, %v; want Claude Code's %q", kept, err, transcript)
	}
	var names []string
	err = filepath.WalkDir(h.inv.Workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "sk-ant-oat01") {
			t.Errorf("the workspace has the config dir's credentials in %s", p)
		}
		if rel, _ := filepath.Rel(dir, p); !strings.HasPrefix(rel, "..") {
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"files/subagents/agent-fake.jsonl", "session.json", "transcript.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("%s holds %q, want only the session: %q", claudecode.SessionDir, names, want)
	}
}

func editRecord(t *testing.T, ws string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(ws, claudecode.SessionDir, "session.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, _ = json.Marshal(m)
	writeFile(t, p, string(data))
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// Links the sub-agent left where the session is kept lead the worker
// nowhere: they are replaced, and what they point at is left alone.
func TestRunSavesSessionPastLinks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeclaude.ModeOK)
	home := h.newHome(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "keep"), "mine")
	for _, name := range []string{claudecode.SessionDir, claudecode.SessionDir + ".tmp"} {
		if err := os.Symlink(outside, filepath.Join(h.inv.Workspace, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	h.run(t)
	rec := h.record(t)
	h.checkSaved(t, rec.SessionID, 1, home)
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 || entries[0].Name() != "keep" {
		t.Errorf("the links' target holds %v, %v; want only what was there", entries, err)
	}
}

// When the resumed conversation comes back under a new session id — as
// Claude Code's --fork-session makes it, given here through
// AGORA_CLAUDE_ARGS — the round keeps that one, and the next round resumes
// it with the whole conversation.
func TestRunKeepsTheSessionTheStreamNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeclaude.ModeAsk)
	h.inv.Env = append(h.inv.Env, claudecode.EnvExtraArgs+"=--fork-session")
	var prompts []string
	var last string
	for round := 1; round <= 3; round++ {
		h.newHome(t)
		if round > 1 {
			removeAll(t, filepath.Join(h.inv.Workspace, ".agora", "needs_input.json"))
			h.nextRound(fmt.Sprint("answer ", round))
		}
		res := h.run(t)
		rec := h.record(t)
		if rec.Resumed != last || !slices.Equal(rec.Conversation, prompts) {
			t.Errorf("round %d resumed %q with conversation %q, want %q with %q", round, rec.Resumed, rec.Conversation, last, prompts)
		}
		if round > 1 && rec.SessionID == last {
			t.Errorf("round %d ran in session %s, want a forked one", round, rec.SessionID)
		}
		if res.Usage == nil || res.Usage.SessionID != rec.SessionID || res.Usage.Resumed != (round > 1) {
			t.Errorf("round %d usage = %+v, want session %s, resumed %t", round, res.Usage, rec.SessionID, round > 1)
		}
		prompts, last = append(prompts, rec.Prompt), rec.SessionID
	}
}
