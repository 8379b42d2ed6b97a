package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/wire"
)

// TestBatchRetryEndToEnd: a batch on the real stack (Docker, embedded
// NATS) whose every other task fails its first run — the sub-agent exits 3
// on a round's first dispatch, <task>-r1, and succeeds on a respawn's,
// <task>-r1-2 — is finished by one `agora batch retry`; a line with a
// retry policy whose first run loses its worker finishes on its own.
func TestBatchRetryEndToEnd(t *testing.T) {
	t.Parallel()
	s := newRunnerServer(t, "cli-batch-retry-test")

	const (
		ok    = `{"subagent":{"name":"steady","runtime":"exec","command":["/bin/sh","-c","echo ok $AGORA_DISPATCH_ID"]},"input":{"n":%d}}`
		flaky = `{"subagent":{"name":"flaky","runtime":"exec","command":["/bin/sh","-c","case $AGORA_DISPATCH_ID in *-r1) echo first run fails; exit 3;; esac; echo ok $AGORA_DISPATCH_ID"]},"input":{"n":%d}}`
	)
	var lines []string
	for i := 1; i <= 6; i++ {
		line := ok
		if i%2 == 0 {
			line = flaky
		}
		lines = append(lines, fmt.Sprintf(line, i))
	}
	// Line 7 loses its worker on its first run, and its retry policy
	// finishes it without a person.
	lines = append(lines, `{"subagent":{"name":"crashy","runtime":"exec","command":["/bin/sh","-c","case $AGORA_DISPATCH_ID in *-r1) kill -9 $PPID; sleep 30;; esac; echo ok $AGORA_DISPATCH_ID"]},`+
		`"retry":{"attempts":2,"backoff":{"initial_seconds":0},"on":["worker-lost"]}}`)
	file := batchFile(t, t.TempDir(), "retry-e2e.jsonl", lines...)
	agora(t, s.env, "batch", "submit", file, "--route", "human=1h").want(t, "batch submit", 0, []string{"7 submitted"}, nil)

	settled := func(want map[wire.State]int) func() bool {
		return func() bool {
			got := map[wire.State]int{}
			for _, st := range s.states(t, "retry-e2e") {
				got[st]++
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		}
	}
	testutil.Eventually(t, 3*time.Minute, "4 finished and 3 failed", settled(map[wire.State]int{"finished": 4, "failed": 3}))
	agora(t, s.env, "batch", "status", "retry-e2e").want(t, "batch status", 0, []string{"4 finished · 3 failed"}, nil)
	agora(t, s.env, "status", "retry-e2e-7").want(t, "the retried task's timeline", 0,
		[]string{"round 1  failed", "worker-lost", "round 1 (attempt 2)  finished", "retry by retry policy (round 1 attempt 2 of 2 after worker-lost: "}, nil)

	agora(t, s.env, "batch", "retry", "retry-e2e", "--yes").want(t, "batch retry", 0,
		[]string{"respawned 3 of 3 tasks (--batch retry-e2e --state failed --state expired)"}, []string{"respawn: 3 tasks match"})
	testutil.Eventually(t, 3*time.Minute, "all 7 finished", settled(map[wire.State]int{"finished": 7}))
	for i := 2; i <= 6; i += 2 {
		id := "retry-e2e-" + strconv.Itoa(i)
		task := s.get(t, id)
		last := task.Rounds[len(task.Rounds)-1]
		if len(task.Rounds) != 2 || task.Rounds[0].State != wire.StateFailed || last.Attempt != 2 || last.State != wire.StateFinished {
			t.Errorf("task %s: %d rounds, last attempt %d %s; want round 1 failed, then attempt 2 finished", id, len(task.Rounds), last.Attempt, last.State)
		}
		agora(t, s.env, "logs", id).want(t, "logs of the retry", 0, []string{"ok " + id + "-r1-2"}, nil)
	}
	if out := agora(t, s.env, "batch", "retry", "retry-e2e", "--yes"); !strings.Contains(out.stdout, "nothing to respawn") {
		t.Errorf("batch retry of a finished batch: %v; want nothing to respawn", out)
	}
}
