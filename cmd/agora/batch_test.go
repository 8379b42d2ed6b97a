package main

// Tests of batch submit, batch status, questions --group and answer
// --all-like through run, against the real API and orchestrator on an
// embedded NATS server (newTaskServer), the tests playing the runner.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/batchreport"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

const echoLine = `{"subagent":{"name":"echoer","runtime":"exec","command":["echo","hi"]},"input":{"n":%N%}}`

// batchFile writes lines to dir/name and returns its path.
func batchFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func echo(n string) string { return strings.ReplaceAll(echoLine, "%N%", n) }

// batchTasks are the ids of the tasks of batch id, sorted.
func (s *taskServer) batchTasks(t *testing.T, id string) []*wire.Task {
	t.Helper()
	page, err := s.orch.List(t.Context(), wire.ListOptions{Label: batchLabel + "=" + id, Limit: wire.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	tasks := page.Tasks
	slices.SortFunc(tasks, func(a, b *wire.Task) int { return strings.Compare(a.ID, b.ID) })
	return tasks
}

func taskIDs(tasks []*wire.Task) []string {
	var ids []string
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

// TestBatchSubmit: a file with a bad line submits the good ones, reports
// the bad one by its number and exits 1; running it again submits nothing
// twice; fixed, it submits only what was missing.
func TestBatchSubmit(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	bad := `{"subagnt":{"name":"echoer"}}`
	file := batchFile(t, dir, "tasks.jsonl", echo("1"), echo("2"), bad, echo("4"), `{"task_id":"custom","subagent":{"name":"echoer","runtime":"exec","command":["echo","hi"]},"route":"memory,human=1h"}`)

	r := agora(t, s.env, "batch", "submit", file, "--batch", "b1", "--route", "human=24h")
	if r.code != 1 || !strings.Contains(r.stdout, "batch b1 from "+file+": 5 lines · 4 submitted · 0 already there · 1 failed") ||
		!strings.Contains(r.stdout, `line 3: unknown field "subagnt"`) || !strings.Contains(r.stdout, "next: agora batch status b1") ||
		!strings.HasSuffix(r.stderr, "agora batch submit: 1 of 5 lines failed (line 3); fix them and run the same command again: the accepted ones are kept\n") {
		t.Fatalf("batch submit with a bad line: %v", r)
	}
	if !strings.Contains(r.stderr, "batch b1: 5/5 lines: 4 submitted · 1 failed\n") || strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("batch submit progress without a terminal: %q; want plain counts", r.stderr)
	}
	tasks := s.batchTasks(t, "b1")
	if got := taskIDs(tasks); !slices.Equal(got, []string{"b1-1", "b1-2", "b1-4", "custom"}) {
		t.Fatalf("tasks of batch b1 = %v, want b1-1 b1-2 b1-4 custom", got)
	}
	for _, task := range tasks {
		want := "human=24h"
		if task.ID == "custom" {
			want = "memory,human=1h"
		}
		if task.Request.Route != want || task.Request.Labels[batchLabel] != "b1" || task.State != wire.StateQueued {
			t.Errorf("task %s: route %q, labels %v, %s; want route %q, the batch label, queued", task.ID, task.Request.Route, task.Request.Labels, task.State, want)
		}
	}

	// Again: nothing new, the same report for the bad line.
	r = agora(t, s.env, "batch", "submit", file, "--batch", "b1", "--route", "human=24h")
	if r.code != 1 || !strings.Contains(r.stdout, "5 lines · 0 submitted · 4 already there · 1 failed") {
		t.Errorf("batch submit again: %v; want 4 already there", r)
	}
	r = agora(t, s.env, "batch", "submit", file, "--batch", "b1", "--route", "human=24h", "--json")
	var rep batchreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 {
		t.Fatalf("batch submit --json: %v, %v", r, err)
	}
	if rep.Batch != "b1" || rep.Lines != 5 || rep.Submitted != 0 || rep.Existing != 4 || rep.Failed != 1 || len(rep.Results) != 5 ||
		rep.Results[2].Line != 3 || rep.Results[2].Result != client.BatchFailed || !strings.Contains(rep.Results[2].Error, "unknown field") ||
		rep.Results[3].TaskID != "b1-4" || rep.Results[3].Result != client.BatchExisting || rep.Results[3].State != wire.StateQueued {
		t.Errorf("batch submit --json = %+v", rep)
	}
	if n := len(s.batchTasks(t, "b1")); n != 4 {
		t.Errorf("after running the file again: %d tasks, want 4", n)
	}

	// Fixed: only line 3 is submitted.
	file = batchFile(t, dir, "tasks.jsonl", echo("1"), echo("2"), echo("3"), echo("4"), `{"task_id":"custom","subagent":{"name":"echoer","runtime":"exec","command":["echo","hi"]},"route":"memory,human=1h"}`)
	agora(t, s.env, "batch", "submit", file, "--batch", "b1", "--route", "human=24h").want(t, "the fixed file", 0,
		[]string{"5 lines · 1 submitted · 4 already there · 0 failed"}, nil)
	if got := taskIDs(s.batchTasks(t, "b1")); !slices.Equal(got, []string{"b1-1", "b1-2", "b1-3", "b1-4", "custom"}) {
		t.Errorf("tasks after the fix = %v", got)
	}

	// Lines that differ from what is there, bad JSON and the like: each a
	// failed line, the others submitted.
	other := batchFile(t, dir, "b1 again.jsonl", echo("99"), `{"subagent": `, `[1, 2]`, `{"subagent":{"name":"x","runtime":"exec","command":["true"]},"labels":{"agora.batch":"b7"}}`,
		echo("5"), `{"subagent":{"name":"x","runtime":"nope"}}`, `{"task_id":"b1-5","subagent":{"name":"echoer","runtime":"exec","command":["echo","hi"]},"input":{"n":5}}`)
	r = agora(t, s.env, "batch", "submit", other, "--batch", "b1", "--route", "human=24h")
	for _, want := range []string{"7 lines · 1 submitted · 0 already there · 6 failed",
		"line 1: task b1-1: task id already used for a different request (input.n differs: stored 1, now 99); give the line another task_id, or remove the task first (agora rm b1-1)",
		"line 2: bad JSON: the line ends inside a value",
		"line 3: not a JSON object (an array)",
		"line 6: invalid dispatch request: /spec/subagent/runtime",
		`line 4: label agora.batch is "b7", not this batch's "b1"`,
		"line 6: ", "line 7: task id b1-5 is line 5's already"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("batch submit of bad lines: stdout lacks %q: %v", want, r)
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, "6 of 7 lines failed (lines 1, 2, 3, 4, 6, 7)") {
		t.Errorf("batch submit of bad lines: %v", r)
	}
	if task := s.get(t, "b1-1"); string(task.Request.Input) != `{"n":1}` {
		t.Errorf("b1-1 changed by a conflicting line: input %s", task.Request.Input)
	}

	// The default batch id is the file's name.
	agora(t, s.env, "batch", "submit", batchFile(t, dir, "nightly.jsonl", echo("1"))).want(t, "the file's name as the batch", 0,
		[]string{"batch nightly from", "1 submitted"}, nil)
	if got := taskIDs(s.batchTasks(t, "nightly")); !slices.Equal(got, []string{"nightly-1"}) {
		t.Errorf("tasks of batch nightly = %v", got)
	}

	// Usage errors and a server that is not there change nothing.
	agora(t, s.env, "batch", "submit").want(t, "batch submit without a file", 2, nil, []string{"want one FILE"})
	agora(t, s.env, "batch", "submit", filepath.Join(dir, "missing.jsonl")).want(t, "a missing file", 2, nil, []string{"missing.jsonl: no such file"})
	agora(t, s.env, "batch", "submit", file, "--batch", "a b").want(t, "a bad batch id", 2, nil, []string{`batch id "a b"`})
	agora(t, s.env, "batch", "submit", batchFile(t, dir, "empty.jsonl", "", " ")).want(t, "an empty file", 2, nil, []string{"has no lines"})
	agora(t, s.env, "batch", "submit", "-").want(t, "stdin without --batch", 2, nil, []string{"--batch ID"})
	agora(t, []string{"AGORA_SERVER=http://" + freeAddr(t)}, "batch", "submit", file, "--batch", "gone").want(t, "no server", 1, nil,
		[]string{"agora batch submit: cannot reach the agora server"})
	agora(t, s.env, "batch").want(t, "batch alone", 2, nil, []string{"want a subcommand"})
	agora(t, s.env, "batch", "-h").want(t, "batch -h", 0, []string{"agora batch status ID"}, nil)
	agora(t, s.env, "batch", "frobnicate").want(t, "batch frobnicate", 2, nil, []string{"want submit, status, results, cancel or retry"})
	agora(t, s.env, "batch", "status", "nope").want(t, "status of an unknown batch", 1, nil, []string{"no tasks in batch nope"})
}

// TestBatchGroupAllLike: identical questions of one batch's tasks (the
// same after normalisation, options in any order) are one group; answer
// --all-like answers them all and nothing else.
func TestBatchGroupAllLike(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	file := batchFile(t, t.TempDir(), "g.jsonl", echo("1"), echo("2"), echo("3"), echo("4"), echo("5"), echo("6"))
	agora(t, s.env, "batch", "submit", file).want(t, "batch submit", 0, []string{"6 submitted"}, nil)
	s.ask(t, "g-1", "Which colour?", "red", "green", "blue")
	s.ask(t, "g-2", "  which COLOUR ", "blue", "red", "green")
	s.ask(t, "g-3", "Which colour?", "green", "blue", "red")
	s.ask(t, "g-4", "Which size?", "small", "large")
	s.ask(t, "g-5", "Proceed?")
	s.ask(t, "g-6", "proceed")
	// The same question outside the batch is not the batch's.
	s.submit(t, "solo")
	s.ask(t, "solo", "Which colour?", "red", "green", "blue")

	r := agora(t, s.env, "questions", "--group")
	r.want(t, "questions --group", 0, []string{"COUNT", "BATCH", "ANSWER ALL WITH", "g-1,g-2,g-3", "agora answer --all-like g-1 red",
		"g-5,g-6", "agora answer g-4 small", "agora answer solo red"}, nil)
	if n := strings.Count(r.stdout, "\n"); n != 5 {
		t.Errorf("questions --group wrote %d lines, want a header and 4 groups:\n%s", n, r.stdout)
	}
	r = agora(t, s.env, "questions", "--group", "--json")
	var grouped struct {
		Groups []questionGroup `json:"groups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &grouped); err != nil || len(grouped.Groups) != 4 {
		t.Fatalf("questions --group --json = %v, %v", r, err)
	}
	if g := grouped.Groups[0]; g.Count != 3 || g.Batch != "g" || !slices.Equal(g.TaskIDs, []string{"g-1", "g-2", "g-3"}) || g.Question != "Which colour?" {
		t.Errorf("first group = %+v; want g-1, g-2, g-3 of batch g", g)
	}
	if g := grouped.Groups[3]; g.Count != 1 || g.Batch != "" || g.TaskIDs[0] != "solo" {
		t.Errorf("last group = %+v; want solo alone, without a batch", g)
	}

	r = agora(t, s.env, "batch", "status", "g")
	r.want(t, "batch status", 0, []string{"batch g: 6 tasks · 6 needs input", "COUNT", "g-1,g-2,g-3", "agora answer --all-like g-1 red", "g-5,g-6"}, nil)
	if strings.Contains(r.stdout, "solo") {
		t.Errorf("batch status shows another batch's task:\n%s", r.stdout)
	}
	r = agora(t, s.env, "batch", "status", "g", "--json")
	var st view.BatchStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Tasks != 6 || st.Counts[wire.StateNeedsInput] != 6 ||
		len(st.Questions) != 3 || st.Questions[2].Count != 2 {
		t.Errorf("batch status --json = %v (%+v), %v", r, st, err)
	}

	// Bad --all-like answers change nothing.
	agora(t, s.env, "answer", "--all-like", "g-1", "purple").want(t, "--all-like with an answer not an option", 2, nil,
		[]string{"task g-1 round 1: answer \"purple\" is not one of: red, green, blue"})
	agora(t, s.env, "answer", "--all-like", "g-1", "red", "--round", "1").want(t, "--all-like with --round", 2, nil, []string{"drop --round"})
	agora(t, s.env, "answer", "--all-like", "nope", "red").want(t, "--all-like of an unknown task", 1, nil, []string{"no task nope"})
	for _, id := range []string{"g-1", "g-2", "g-3"} {
		if task := s.get(t, id); task.State != wire.StateNeedsInput {
			t.Fatalf("after bad answers %s is %s", id, task.State)
		}
	}

	// By number, in g-2's order of options: 3 is green for every task.
	r = agora(t, s.env, "answer", "--all-like", "g-2", "3", "--by", "alice")
	r.want(t, "answer --all-like", 0, []string{"g-2 round 1: answered green; now queued", "g-1 round 1: answered green", "g-3 round 1: answered green",
		"3 answered · 0 already answered · 0 failed"}, nil)
	for _, id := range []string{"g-1", "g-2", "g-3"} {
		task := s.get(t, id)
		if a := task.Rounds[0].Answer; a == nil || a.Value != "green" || a.By != "alice" || a.Channel != "cli" || task.State != wire.StateQueued {
			t.Errorf("%s after --all-like: %s, answer %+v; want green by alice via cli, round 2 queued", id, task.State, a)
		}
	}
	for _, id := range []string{"g-4", "g-5", "g-6", "solo"} {
		if task := s.get(t, id); task.State != wire.StateNeedsInput || task.Rounds[0].Answer != nil {
			t.Errorf("%s after --all-like of another question: %s, answer %+v; want it untouched", id, task.State, task.Rounds[0].Answer)
		}
	}
	agora(t, s.env, "answer", "--all-like", "g-1", "red").want(t, "--all-like again", 1, nil,
		[]string{"task g-1 is queued: no open question; 'agora questions --group' lists the open ones"})

	// Free text, --json.
	r = agora(t, s.env, "answer", "g-6", "yes", "--all-like", "--json")
	var rep allLikeReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("answer --all-like --json: %v, %v", r, err)
	}
	if rep.Like != "g-6" || rep.Answer != "yes" || rep.Answered != 2 || rep.Failed != 0 || len(rep.Results) != 2 ||
		rep.Results[0].TaskID != "g-6" || rep.Results[1].TaskID != "g-5" || rep.Results[1].Result != "answered" || rep.Results[1].State != wire.StateQueued {
		t.Errorf("answer --all-like --json = %+v", rep)
	}
	if a := s.get(t, "g-5").Rounds[0].Answer; a == nil || a.Value != "yes" || a.By != "tester" {
		t.Errorf("g-5's answer = %+v, want yes by tester", a)
	}
	r = agora(t, s.env, "questions", "--group")
	if !strings.Contains(r.stdout, "agora answer g-4 small") || !strings.Contains(r.stdout, "agora answer solo red") || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("questions --group after the answers:\n%s\nwant g-4 and solo left", r.stdout)
	}
}

// TestAllLikeFailed: a question answered by someone else meanwhile is
// reported as already answered, a task cancelled meanwhile as failed, the
// others are answered, and the exit code is 1. The API is wrapped so that
// both happen right after the first answer of the group lands.
func TestAllLikeFailed(t *testing.T) {
	t.Parallel()
	var s *taskServer
	s = newTaskServerWith(t, func(o orchestrator.Service) orchestrator.Service {
		return &raceAfterFirstAnswer{Service: o, race: func() {
			if _, err := s.orch.Answer(t.Context(), wire.AnswerRequest{TaskID: "f-2", Answer: "no", By: "bob", Channel: "cli"}); err != nil {
				t.Error(err)
			}
			if _, err := s.orch.Cancel(t.Context(), "f-3"); err != nil {
				t.Error(err)
			}
		}}
	})
	file := batchFile(t, t.TempDir(), "f.jsonl", echo("1"), echo("2"), echo("3"))
	agora(t, s.env, "batch", "submit", file).want(t, "batch submit", 0, []string{"3 submitted"}, nil)
	for _, id := range []string{"f-1", "f-2", "f-3"} {
		s.ask(t, id, "Go?", "yes", "no")
	}
	r := agora(t, s.env, "answer", "f-1", "yes", "--all-like")
	if r.code != 1 || !strings.Contains(r.stdout, "f-1 round 1: answered yes") ||
		!strings.Contains(r.stdout, "f-2 round 1: already answered (task f-2 round 1: question already answered by bob") ||
		!strings.Contains(r.stdout, "f-3 round 1: failed: ") || !strings.Contains(r.stdout, "1 answered · 1 already answered · 1 failed") ||
		r.stderr != "agora answer: 1 of 3 questions like f-1's were not answered; 'agora questions --group' shows what is still open\n" {
		t.Errorf("--all-like with changes meanwhile: %v", r)
	}
	if a := s.get(t, "f-2").Rounds[0].Answer; a == nil || a.Value != "no" || a.By != "bob" {
		t.Errorf("f-2's answer = %+v, want bob's no kept", a)
	}
}

// raceAfterFirstAnswer runs race once, right after the first answer it
// passes on.
type raceAfterFirstAnswer struct {
	orchestrator.Service
	once sync.Once
	race func()
}

func (r *raceAfterFirstAnswer) Answer(ctx context.Context, req wire.AnswerRequest) (*wire.Task, error) {
	t, err := r.Service.Answer(ctx, req)
	r.once.Do(r.race)
	return t, err
}

// TestQuestionGroupsAPI: the grouped questions and the answer to a group
// through the client, as a Slack app or a web page uses them; bad input
// changes nothing.
func TestQuestionGroupsAPI(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	c := client.New(s.url, "")
	ctx := t.Context()
	file := batchFile(t, t.TempDir(), "q.jsonl", echo("1"), echo("2"), echo("3"))
	agora(t, s.env, "batch", "submit", file).want(t, "batch submit", 0, []string{"3 submitted"}, nil)
	s.ask(t, "q-1", "Ship it?", "yes", "no")
	s.ask(t, "q-2", "ship it", "no", "yes")
	s.ask(t, "q-3", "Which size?", "s", "l")

	groups, err := c.QuestionGroups(ctx, wire.GroupOptions{Batch: "q"})
	if err != nil || len(groups) != 2 || groups[0].Count != 2 || groups[0].Questions[1].TaskID != "q-2" || groups[0].Questions[1].Round != 1 {
		t.Fatalf("QuestionGroups = %+v, %v; want ship it for q-1 and q-2, then the size", groups, err)
	}
	if other, err := c.QuestionGroups(ctx, wire.GroupOptions{Batch: "nope"}); err != nil || len(other) != 0 {
		t.Errorf("QuestionGroups of another batch = %+v, %v; want none", other, err)
	}
	ship := groups[0]

	for _, tt := range []struct {
		name, id string
		body     wire.AnswerBody
		want     error
	}{
		{"not an id", "zz", wire.AnswerBody{Answer: "yes"}, wire.ErrInvalidRequest},
		{"no such group", strings.Repeat("0", 24), wire.AnswerBody{Answer: "yes"}, wire.ErrNoQuestion},
		{"a round", ship.ID, wire.AnswerBody{Answer: "yes", Round: 1}, wire.ErrInvalidRequest},
		{"not an option", ship.ID, wire.AnswerBody{Answer: "maybe"}, wire.ErrInvalidAnswer},
	} {
		if _, err := c.AnswerGroup(ctx, tt.id, tt.body); !errors.Is(err, tt.want) {
			t.Errorf("%s: AnswerGroup = %v, want %v", tt.name, err, tt.want)
		}
	}
	if q := s.get(t, "q-1"); q.State != wire.StateNeedsInput {
		t.Fatalf("after bad answers q-1 is %s", q.State)
	}

	res, err := c.AnswerGroup(ctx, ship.ID, wire.AnswerBody{Answer: "yes", Channel: "web"})
	if err != nil || res.Answered != 2 || res.GroupID != ship.ID || res.Answer != "yes" {
		t.Fatalf("AnswerGroup = %+v, %v; want both answered yes", res, err)
	}
	for _, id := range []string{"q-1", "q-2"} {
		if a := s.get(t, id).Rounds[0].Answer; a == nil || a.Value != "yes" || a.Channel != "web" {
			t.Errorf("%s's answer = %+v, want yes via web", id, a)
		}
	}
	if q := s.get(t, "q-3"); q.State != wire.StateNeedsInput {
		t.Errorf("q-3 (another question) is %s, want it untouched", q.State)
	}
	if _, err := c.AnswerGroup(ctx, ship.ID, wire.AnswerBody{Answer: "no"}); !errors.Is(err, wire.ErrNoQuestion) {
		t.Errorf("AnswerGroup again = %v, want ErrNoQuestion", err)
	}
}
