package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// step is what one round of a scripted task does: ask (Question set) or
// finish with Result.
type step struct {
	Question string
	Options  []string
	Result   string
}

// play runs round n of task id as the runner would, through its events,
// once the round is on the queue.
func (s *taskServer) play(t *testing.T, id string, n int, st step) {
	t.Helper()
	d := id + "-r" + string(rune('0'+n))
	deadline := time.Now().Add(30 * time.Second)
	for {
		task, err := s.orch.Get(t.Context(), id)
		// Enqueued: its dispatch is indexed, so an event without a task
		// id finds its task (a worker's names it; these do not).
		if err == nil && task.State == wire.StateQueued && view.LastRound(task).DispatchID == d && view.LastRound(task).Enqueued {
			break
		}
		if err == nil && (task.State.Terminal() || time.Now().After(deadline)) {
			data, _ := json.Marshal(task)
			t.Fatalf("%s is %s waiting for %s to be queued: %s", id, task.State, d, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.event(t, schemas.KindStarted, d, nil)
	if st.Question != "" {
		s.event(t, schemas.KindNeedsInput, d, func(ev *schemas.Event) {
			ev.NeedsInput = &schemas.NeedsInput{Question: st.Question, Options: st.Options, PartialState: json.RawMessage(`{"at":` + string(rune('0'+n)) + `}`)}
		})
		return
	}
	s.event(t, schemas.KindFinished, d, func(ev *schemas.Event) {
		if st.Result != "" {
			ev.Result = json.RawMessage(st.Result)
		}
	})
}

// original makes a finished task: round 1 asks "Pick one?" (a / b) and is
// answered a, round 2 finishes with {"x": 1, "y": 2}.
func (s *taskServer) original(t *testing.T, id string, labels ...string) {
	t.Helper()
	req := wire.SubmitRequest{TaskID: id, Subagent: schemas.Subagent{Name: "picker", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		req.Labels = map[string]string{k: v}
	}
	if _, err := s.orch.Submit(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.play(t, id, 1, step{Question: "Pick one?", Options: []string{"a", "b"}})
	s.waitState(t, id, wire.StateNeedsInput)
	agora(t, s.env, "answer", id, "a").want(t, "answer "+id, 0, nil, nil)
	s.play(t, id, 2, step{Result: `{"x": 1, "y": 2}`})
	s.waitState(t, id, wire.StateFinished)
}

// TestReplayDivergences: each kind of divergence through the orchestrator,
// the API and the CLI, the test playing the runner: what the replay
// records, its verdict, and replay --wait's exit and lines.
func TestReplayDivergences(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, tc := range []struct {
		name   string
		flags  []string
		rounds []step
		code   int
		stdout []string
		stderr string
	}{
		{name: "same after normalisation, result keys reordered", rounds: []step{{Question: "  PICK   one ", Options: []string{"b", "a", "a"}}, {Result: `{"y":2,"x":1}`}},
			stdout: []string{"replay of orig-same: matched (finished); 1 question answered from the recording"}},
		{name: "another result", rounds: []step{{Question: "Pick one?", Options: []string{"a", "b"}}, {Result: `{"x": 3}`}},
			stdout: []string{"matched (finished)", "round 2  result: the result differs from the original's (now sha256:", "(reported; --strict makes it fail)"}},
		{name: "another result, strict", flags: []string{"--strict"}, rounds: []step{{Question: "Pick one?", Options: []string{"a", "b"}}, {Result: `{"x": 3}`}},
			code: 1, stdout: []string{"diverged (finished)"}, stderr: "diverged: result: the result differs from the original's"},
		{name: "other options", rounds: []step{{Question: "Pick one?", Options: []string{"a", "c"}}},
			code: 1, stderr: `diverged: options: round 1 asked "Pick one?" with options ["a","c"]; the original offered ["a","b"]`},
		{name: "another question", rounds: []step{{Question: "Pick two?", Options: []string{"a", "b"}}},
			code: 1, stderr: `diverged: question: round 1 asked "Pick two?"; the original asked "Pick one?"`},
		{name: "fewer rounds", rounds: []step{{Result: `{"x": 1, "y": 2}`}},
			code: 1, stdout: []string{"diverged (finished); 0 questions"}, stderr: `diverged: fewer_rounds: round 1 finished without asking; the original asked "Pick one?" and ran 2 rounds`},
		{name: "a new question", rounds: []step{{Question: "Pick one?", Options: []string{"a", "b"}}, {Question: "And now?"}},
			code: 1, stderr: `diverged: new_question: round 2 asked "And now?", a question not asked before: the original finished at round 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := "orig-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			if tc.name == "same after normalisation, result keys reordered" {
				id = "orig-same"
			}
			s.original(t, id)
			rp := id + "-rp"
			d := start(t.Context(), s.env, append([]string{"replay", id, "--task-id", rp, "--wait"}, tc.flags...)...)
			for i, st := range tc.rounds {
				s.play(t, rp, i+1, st)
			}
			code := d.wait(t, time.Minute)
			if code != tc.code || !strings.Contains(d.stderr.String(), tc.stderr) {
				t.Errorf("replay --wait: exit %d, stderr %q; want %d and %q", code, d.stderr.String(), tc.code, tc.stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(d.stdout.String(), want) {
					t.Errorf("replay --wait stdout %q lacks %q", d.stdout.String(), want)
				}
			}
			if tc.code == 1 {
				agora(t, s.env, "status", rp).want(t, "the replay's timeline", 0, []string{"replay of " + id + " by ", "replay: diverged · ", "  divergence, round "}, nil)
			}
			got := s.get(t, rp)
			if got.Replay == nil || got.Replay.Verdict == "" || got.Origin == nil || got.Origin.TaskID != id {
				t.Fatalf("replay record = %+v, origin %+v; want a verdict and origin %s", got.Replay, got.Origin, id)
			}
			if tc.code == 1 && got.State == wire.StateFailed && got.Outcome.Reason != "replay_diverged" {
				t.Errorf("outcome = %+v; want replay_diverged", got.Outcome)
			}
			for _, r := range got.Rounds {
				if len(r.Decisions) > 0 && r.Decisions[0].Step != "replay" {
					t.Errorf("round %d went to route step %q; a replay asks nobody", r.N, r.Decisions[0].Step)
				}
			}
		})
	}
}

// TestReplayFollowUpBatchAndRefusals: a continued task's follow-up is sent
// again; a batch replay summarises; what cannot be replayed or forked is
// refused in one line, nothing made.
func TestReplayFollowUpBatchAndRefusals(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)

	// A follow-up the original was given is sent again.
	s.submit(t, "cont")
	s.play(t, "cont", 1, step{Result: `"one"`})
	s.waitState(t, "cont", wire.StateFinished)
	agora(t, s.env, "continue", "cont", "and more").want(t, "continue", 0, nil, nil)
	s.play(t, "cont", 2, step{Result: `"two"`})
	s.waitState(t, "cont", wire.StateFinished)
	d := start(t.Context(), s.env, "replay", "cont", "--task-id", "cont-rp", "--wait", "--json")
	s.play(t, "cont-rp", 1, step{Result: `"one"`})
	s.play(t, "cont-rp", 2, step{Result: `"two"`})
	if code := d.wait(t, time.Minute); code != 0 {
		t.Fatalf("replay of a continued task: exit %d, %s", code, d.stderr.String())
	}
	var got wire.Task
	if err := json.Unmarshal([]byte(d.stdout.String()), &got); err != nil || got.Replay.Verdict != wire.ReplayMatched || got.Rounds[1].FollowUp != "and more" {
		t.Errorf("replay --json = %s, %v; want matched with round 2 the follow-up", d.stdout.String(), err)
	}

	// A batch: two finished tasks and one that failed.
	s.original(t, "nb-1", wire.BatchLabel+"=nb")
	s.original(t, "nb-2", wire.BatchLabel+"=nb")
	req := wire.SubmitRequest{TaskID: "nb-3", Labels: map[string]string{wire.BatchLabel: "nb"},
		Subagent: schemas.Subagent{Name: "picker", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}
	if _, err := s.orch.Submit(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.end(t, "nb-3", "nb-3-r1", schemas.KindFailed, wire.StateFailed)
	b := start(t.Context(), s.env, "replay", "--batch", "nb", "--wait")
	for _, orig := range []string{"nb-1", "nb-2"} {
		var rp string
		testutil.Eventually(t, 30*time.Second, "the replay of "+orig, func() bool {
			if d := s.get(t, orig).Derived; len(d) == 1 {
				rp = d[0].TaskID
			}
			return rp != ""
		})
		result := `{"x": 1, "y": 2}`
		if orig == "nb-2" {
			result = `{"x": 0}`
		}
		s.play(t, rp, 1, step{Question: "Pick one?", Options: []string{"a", "b"}})
		s.play(t, rp, 2, step{Result: result})
		if l := s.get(t, rp).Request.Labels[wire.BatchLabel]; !strings.HasPrefix(l, "nb-replay-") || !strings.HasSuffix(rp, "-"+orig) {
			t.Errorf("replay %s of %s is in batch %q; want nb-replay-…, named <batch>-%s", rp, orig, l, orig)
		}
	}
	if code := b.wait(t, time.Minute); code != 0 {
		t.Fatalf("replay --batch --wait: exit %d, %s", code, b.stderr.String())
	}
	out := b.stdout.String()
	for _, want := range []string{"nb-1 → nb-replay-", "  matched", ": 2 of 2 replays matched, 0 diverged; 1 task of nb not finished, not replayed"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay --batch --wait stdout %q lacks %q", out, want)
		}
	}

	// Fork: round 1's snapshot record is copied; without one, refused.
	s.original(t, "fk")
	agora(t, s.env, "fork", "fk", "--round", "1", "--answer", "b").want(t, "fork without a snapshot", 1, nil,
		[]string{"round fk-r1 has no workspace snapshot"})
	if err := s.store.Put(t.Context(), "dispatches/fk-r1/workspace.json", bytes.NewReader([]byte(`{"archive":{"uri":"x","sha256":"00","size":1}}`))); err != nil {
		t.Fatal(err)
	}
	agora(t, s.env, "fork", "fk", "--round", "1", "--answer", "2", "--task-id", "fk-b", "--by", "erin").want(t, "fork", 0,
		[]string{`fk-b forks fk at round 1 with "b": round 2 queued`}, nil)
	fork := s.get(t, "fk-b")
	if r := fork.Rounds[0]; r.CopiedFrom != "fk-r1" || r.Answer.Value != "b" || r.Answer.Channel != "fork" || string(r.Question.PartialState) != `{"at":1}` ||
		fork.Rounds[1].N != 2 || fork.Origin.Kind != wire.LinkFork || fork.Origin.Round != 1 {
		t.Errorf("fork = %+v; want round 1 copied from fk-r1 with answer b and its partial_state, round 2 queued", fork.Rounds)
	}
	if rc, err := s.store.Get(t.Context(), "dispatches/fk-b-r1/workspace.json"); err != nil {
		t.Errorf("the fork's snapshot record: %v", err)
	} else {
		rc.Close()
	}

	for _, tc := range []struct {
		what   string
		args   []string
		code   int
		stderr string
	}{
		{"replay a failed task", []string{"replay", "nb-3"}, 1, "task nb-3 is failed; replay takes a finished task"},
		{"continue a replay", []string{"continue", "cont-rp", "more"}, 1, "task cont-rp is a replay of cont and is not continued; replay cont again instead"},
		{"replay nothing", []string{"replay"}, 2, "want one TASK, e.g. agora replay t-42 --wait"},
		{"replay both", []string{"replay", "nb-1", "--batch", "nb"}, 2, "give one TASK or --batch BATCH, not both"},
		{"replay an unknown batch", []string{"replay", "--batch", "none"}, 1, "batch none"},
		{"replay an unknown version", []string{"replay", "nb-1", "--subagent", "ghost"}, 2, "ghost"},
		{"fork without a round", []string{"fork", "fk", "--answer", "b"}, 2, "--round N: want the round"},
		{"fork without an answer", []string{"fork", "fk", "--round", "1"}, 2, "--answer X: want the other answer"},
		{"fork a round that did not ask", []string{"fork", "fk", "--round", "2", "--answer", "b"}, 2, "task fk round 2 asked no question"},
		{"fork with an answer not offered", []string{"fork", "fk", "--round", "1", "--answer", "c"}, 2, "c"},
		{"fork to a taken id", []string{"fork", "fk", "--round", "1", "--answer", "a", "--task-id", "fk-b"}, 1, "task id fk-b is taken"},
	} {
		agora(t, s.env, tc.args...).want(t, tc.what, tc.code, nil, []string{tc.stderr})
	}
	if err := s.store.Put(t.Context(), "dispatches/fk-r1/output.log", bytes.NewReader([]byte("round one said hi\n"))); err != nil {
		t.Fatal(err)
	}
	agora(t, s.env, "logs", "fk-b", "--round", "1").want(t, "a copied round's output", 0, []string{"round one said hi"}, nil)
	agora(t, s.env, "status", "fk-b").want(t, "the fork's timeline", 0, []string{`fork of fk from round 1, answered "b" by erin`}, nil)
	agora(t, s.env, "status", "fk").want(t, "the original's timeline", 0, []string{"replays and forks: fk-b (fork from round 1)"}, nil)
	agora(t, s.env, "status", "nb-3").want(t, "a task never replayed", 0, nil, nil)
	if d := s.get(t, "fk").Derived; len(d) != 1 || d[0].TaskID != "fk-b" || d[0].By != "erin" {
		t.Errorf("fk's derived = %+v; want the one fork by erin, nothing from the refusals", d)
	}
}
