package main

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// states are the states of the tasks of batch id, by task id.
func (s *taskServer) states(t *testing.T, batch string) map[string]wire.State {
	t.Helper()
	out := map[string]wire.State{}
	for _, task := range s.batchTasks(t, batch) {
		out[task.ID] = task.State
	}
	return out
}

// TestBulkSelectors: cancel, respawn and rm act on what --batch, --label
// and --state pick, show the count first, refuse without a terminal
// unless --yes, leave alone what the verb does not fit, and keep the one
// TASK form; batch cancel and batch retry are the same on a batch.
func TestBulkSelectors(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	agora(t, s.env, "batch", "submit", batchFile(t, dir, "b1.jsonl", echo("1"), echo("2"), echo("3"), echo("4"), echo("5"))).
		want(t, "batch b1", 0, []string{"5 submitted"}, nil)
	agora(t, s.env, "batch", "submit", batchFile(t, dir, "b2.jsonl", echo("1"),
		`{"subagent":{"name":"echoer","runtime":"exec","command":["echo","hi"]},"labels":{"team":"ops"}}`)).
		want(t, "batch b2", 0, []string{"2 submitted"}, nil)

	// No terminal, no --yes: one line with the count, nothing changes.
	agora(t, s.env, "cancel", "--batch", "b1").want(t, "cancel --batch without --yes", 2, nil,
		[]string{"agora cancel: 5 tasks match --batch b1; nothing changed: no terminal on stdin to confirm on, so add --yes to cancel them\n"})
	for id, st := range s.states(t, "b1") {
		if st != wire.StateQueued {
			t.Errorf("after a refused cancel, %s is %s", id, st)
		}
	}

	// One task ends first: it is left alone, the others are cancelled.
	s.end(t, "b1-5", "b1-5-r1", schemas.KindFinished, wire.StateFinished)
	r := agora(t, s.env, "cancel", "--batch", "b1", "--yes")
	r.want(t, "cancel --batch --yes", 0, []string{"cancelled 4 of 5 tasks (--batch b1) · 1 already ended, left alone\n"},
		[]string{"cancel: 5 tasks match --batch b1; 1 already ended, left alone\n"})
	want := map[string]wire.State{"b1-1": "cancelled", "b1-2": "cancelled", "b1-3": "cancelled", "b1-4": "cancelled", "b1-5": "finished"}
	if got := s.states(t, "b1"); !maps.Equal(got, want) {
		t.Errorf("batch b1 after cancel --batch = %v, want %v", got, want)
	}
	if got := s.states(t, "b2"); got["b2-1"] != wire.StateQueued {
		t.Errorf("batch b2 changed by cancel --batch b1: %v", got)
	}
	agora(t, s.env, "cancel", "--batch", "b1", "--yes").want(t, "cancel --batch again", 0,
		[]string{"5 tasks match --batch b1; 5 already ended, left alone; nothing to cancel\n"}, nil)

	// Respawn by state, JSON for scripts.
	r = agora(t, s.env, "respawn", "--batch", "b1", "--state", "cancelled", "--state", "failed", "--yes", "--json")
	var rep view.BulkReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("respawn --json: %v, %v", r, err)
	}
	if rep.Operation != "respawn" || rep.Matched != 4 || rep.Done != 4 || rep.Failed != 0 || len(rep.Results) != 4 ||
		rep.Results[0].Result != client.BulkDone || rep.Results[0].State != wire.StateQueued {
		t.Errorf("respawn --json = %+v", rep)
	}

	// rm by label; the one-task form still works; bad selectors are usage errors.
	agora(t, s.env, "rm", "--label", "team=ops", "--yes").want(t, "rm --label", 0, []string{"removed 1 of 1 task (--label team=ops)"}, nil)
	if got := s.states(t, "b2"); len(got) != 1 {
		t.Errorf("batch b2 after rm --label team=ops = %v; want only b2-1", got)
	}
	agora(t, s.env, "cancel", "b2-1").want(t, "cancel TASK", 0, []string{"b2-1 cancelled"}, nil)
	agora(t, s.env, "cancel", "b2-1", "--batch", "b2").want(t, "a TASK and a selector", 2, nil, []string{"give one TASK or a selector"})
	agora(t, s.env, "cancel", "--state", "done").want(t, "a bad state", 2, nil, []string{`--state "done": want one of running, queued`})
	agora(t, s.env, "respawn", "--label", "team").want(t, "a bad label", 2, nil, []string{`--label "team": want key=value`})
	agora(t, s.env, "rm").want(t, "rm alone", 2, nil, []string{"want one TASK, e.g. agora rm t-42, or a selector"})

	// batch retry: the failed and expired tasks, not the cancelled one.
	s.end(t, "b1-1", "b1-1-r1-2", schemas.KindFailed, wire.StateFailed)
	s.end(t, "b1-2", "b1-2-r1-2", schemas.KindFailed, wire.StateFailed)
	agora(t, s.env, "cancel", "b1-3").want(t, "cancel b1-3", 0, nil, nil)
	agora(t, s.env, "batch", "retry", "b1").want(t, "batch retry without --yes", 2, nil,
		[]string{"agora batch retry: 2 tasks match --batch b1 --state failed --state expired; nothing changed"})
	agora(t, s.env, "batch", "retry", "b1", "--yes").want(t, "batch retry", 0, []string{"respawned 2 of 2 tasks (--batch b1 --state failed --state expired)"}, nil)
	want = map[string]wire.State{"b1-1": "queued", "b1-2": "queued", "b1-3": "cancelled", "b1-4": "queued", "b1-5": "finished"}
	if got := s.states(t, "b1"); !maps.Equal(got, want) {
		t.Errorf("batch b1 after batch retry = %v, want %v", got, want)
	}
	agora(t, s.env, "batch", "cancel", "b1", "--yes").want(t, "batch cancel", 0, []string{"cancelled 3 of 5 tasks (--batch b1) · 2 already ended, left alone"}, nil)
	agora(t, s.env, "batch", "retry", "nope", "--yes").want(t, "batch retry of nothing", 0, []string{"0 tasks match --batch nope --state failed --state expired; nothing to respawn"}, nil)
}
