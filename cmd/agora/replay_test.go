package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// askTwice is a sub-agent that asks twice and finishes: round 1 leaves a
// file in its workspace and asks a colour, round 2 notes the answer and
// asks a size (secondQuestion), round 3 hands the notes back as its result.
func askTwice(secondQuestion string) string {
	return `case "$AGORA_ROUND" in
1) printf 'draft' > notes.txt; agora-worker ask "Which colour?" --option red --option blue ;;
2) printf ' colour=%s' "$AGORA_ANSWER" >> notes.txt; agora-worker ask "` + secondQuestion + `" --option S --option L ;;
*) printf ' size=%s' "$AGORA_ANSWER" >> notes.txt; printf '{"notes":"%s"}' "$(cat notes.txt)" > .agora/result.json ;;
esac`
}

// TestReplayAndForkEndToEnd, on the real stack (Docker runner, embedded
// NATS, API): a registered sub-agent asks twice and finishes after two
// answers. `agora replay --wait` of its task finishes with nobody
// answering and exits 0; a replay with a changed version that asks
// another second question exits 1 naming that divergence; `agora fork`
// from round 1 with the other answer runs round 2 with that answer and
// round 1's files. Both directions of each link are on the task records.
func TestReplayAndForkEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newRunnerServer(t, "cli-replay-test")
	c := client.New(strings.TrimPrefix(s.env[0], "AGORA_SERVER="), "")
	const waitFor = 3 * time.Minute

	v1, err := c.RegisterSubagent(ctx, wire.Subagent{Name: "asker", Runtime: schemas.RuntimeExec, Command: wire.Command{"/bin/sh", "-c", askTwice("Which size?")}})
	if err != nil {
		t.Fatal(err)
	}
	agora(t, s.env, "dispatch", "--subagent", "asker", "--task-id", "orig").want(t, "dispatch", 0, []string{"orig"}, nil)
	answer := func(id string, round int, value string) {
		t.Helper()
		n := strconv.Itoa(round)
		testutil.Eventually(t, waitFor, id+" round "+n+"'s question", func() bool {
			got, err := s.orch.Get(ctx, id)
			if err == nil && got.State.Terminal() {
				t.Fatalf("%s ended %s waiting for round %d's question: %+v", id, got.State, round, got.Outcome)
			}
			return err == nil && got.State == wire.StateNeedsInput && got.Rounds[len(got.Rounds)-1].N == round
		})
		agora(t, s.env, "answer", id, value, "--round", n).want(t, "answer "+id+" round "+n, 0, nil, nil)
	}
	answer("orig", 1, "red")
	answer("orig", 2, "S")
	final, err := c.Wait(ctx, "orig")
	if err != nil || final.State != wire.StateFinished || string(final.Result) != `{"notes":"draft colour=red size=S"}` {
		t.Fatalf("the original = %v, %v; want finished with notes draft colour=red size=S", final, err)
	}

	// The same sub-agent, replayed: nobody answers, exit 0.
	same := agora(t, s.env, "replay", "orig", "--task-id", "again", "--wait")
	same.want(t, "replay --wait", 0, []string{"again replay of orig: matched (finished); 2 questions answered from the recording"}, nil)
	if strings.Contains(same.stdout, "round ") {
		t.Errorf("a matching replay lists divergences: %q", same.stdout)
	}
	again, err := s.orch.Get(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again.Rounds {
		if r.Answer != nil && (r.Answer.Channel != "replay" || r.Answer.By != "replay of orig") {
			t.Errorf("replay round %d answered %+v; want the recording's answer via replay", r.N, r.Answer)
		}
	}
	if string(again.Result) != string(final.Result) || again.Origin == nil || again.Origin.Kind != wire.LinkReplay || again.Origin.TaskID != "orig" {
		t.Errorf("replay result %s, origin %+v; want the original's result and origin replay of orig", again.Result, again.Origin)
	}

	// A changed sub-agent asks another second question: exit 1 naming it.
	v2, err := c.RegisterSubagent(ctx, wire.Subagent{Name: "asker", Runtime: schemas.RuntimeExec, Command: wire.Command{"/bin/sh", "-c", askTwice("Which shape?")}})
	if err != nil || v2.Entry.Ref() == v1.Entry.Ref() {
		t.Fatalf("register v2: %v, %v", v2, err)
	}
	changed := agora(t, s.env, "replay", "orig", "--subagent", v2.Entry.Ref(), "--task-id", "changed", "--wait")
	changed.want(t, "replay --wait of a changed sub-agent", 1,
		[]string{"changed replay of orig: diverged (failed); 1 question answered from the recording", `round 2  question: round 2 asked "Which shape?"; the original asked "Which size?"`},
		[]string{`agora replay: replay changed diverged: question: round 2 asked "Which shape?"; the original asked "Which size?"; 'agora status changed' shows its timeline`})
	if got, _ := s.orch.Get(ctx, "changed"); got == nil || got.Pins == nil || got.Pins.Subagent != v2.Entry.Ref() || len(got.Rounds) != 2 || got.Rounds[1].Answer != nil {
		t.Errorf("the changed replay = %+v; want pinned to %s, stopped at round 2 unanswered", got, v2.Entry.Ref())
	}

	// Fork at round 1 with the other answer.
	fork := agora(t, s.env, "fork", "orig", "--round", "1", "--answer", "blue", "--task-id", "other", "--by", "dana")
	fork.want(t, "fork", 0, []string{`other forks orig at round 1 with "blue": round 2 queued`}, nil)
	answer("other", 2, "L")
	forked, err := c.Wait(ctx, "other")
	if err != nil || forked.State != wire.StateFinished || string(forked.Result) != `{"notes":"draft colour=blue size=L"}` {
		t.Fatalf("the fork = %v, %v; want finished with round 1's draft, colour=blue and size=L", forked, err)
	}
	if r := forked.Rounds[0]; r.CopiedFrom != "orig-r1" || r.Answer == nil || r.Answer.Value != "blue" || r.Answer.By != "dana" {
		t.Errorf("fork round 1 = %+v; want copied from orig-r1, answered blue by dana", r)
	}

	orig, err := s.orch.Get(ctx, "orig")
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, l := range orig.Derived {
		links = append(links, l.Kind+":"+l.TaskID)
	}
	if got := strings.Join(links, " "); got != "replay:again replay:changed fork:other" {
		t.Errorf("the original's derived tasks = %q; want replay:again replay:changed fork:other", got)
	}
	js := agora(t, s.env, "replay", "changed", "--json")
	js.want(t, "replay of a failed replay", 1, nil, []string{"task changed is failed; replay takes a finished task"})
	data, _ := json.Marshal(orig)
	if !strings.Contains(string(data), `"derived":[{"kind":"replay","task_id":"again"`) {
		t.Errorf("the original's record lacks its derived tasks: %s", data)
	}
}
