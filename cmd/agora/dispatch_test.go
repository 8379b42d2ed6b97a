package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/images"
	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/runner"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestDispatchBadInputs: each mistake is one line that says what to do,
// exit 2, and no task is created.
func TestDispatchBadInputs(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	colour := file("colour.yaml", "name: painter\nruntime: exec\ncommand: echo hi\ncolour: red\n")
	noRuntime := file("noruntime.yaml", "name: painter\ncommand: [echo, hi]\n")
	noCommand := file("nocommand.json", `{"name": "painter", "runtime": "exec"}`)
	noPrompt := file("noprompt.yaml", "name: writer\nruntime: claude-code\n")
	wrongType := file("wrongtype.yaml", "name: painter\nruntime: exec\ncommand: echo\ntimeout_seconds: soon\n")
	commandMap := file("commandmap.yaml", "name: painter\nruntime: exec\ncommand: {run: echo}\n")
	empty := file("empty.yaml", "")
	badLimit := file("badlimit.yaml", "name: p\nruntime: exec\ncommand: echo\nlimits:\n  rounds: 3\n")
	arrayInput := file("array.json", `[1, 2]`)
	withBundles := file("bundles.yaml", "name: p\nruntime: exec\ncommand: echo\ncapabilities: [skill]\n")
	cmd := []string{"dispatch", "--command", "echo hi"}
	tests := []struct {
		name   string
		args   []string
		errOut string
	}{
		{"no sub-agent", []string{"dispatch"}, `want --subagent NAME, --subagent-file FILE or --command "CMD"`},
		{"both", []string{"dispatch", "--command", "x", "--subagent-file", colour}, "want one of --subagent, --subagent-file or --command, not several"},
		{"subagent and command", []string{"dispatch", "--command", "x", "--subagent", "reviewer"}, "want one of --subagent, --subagent-file or --command, not several"},
		{"subagent bad ref", []string{"dispatch", "--subagent", "reviewer@latest"}, `--subagent "reviewer@latest": want a registered sub-agent's NAME or NAME@VERSION`},
		{"subagent renamed", []string{"dispatch", "--subagent", "reviewer", "--name", "x"}, "--name renames an inline sub-agent"},
		{"subagent file naming bundles", []string{"dispatch", "--subagent-file", withBundles}, withBundles + " names capabilities or env bundles, which only a registered sub-agent resolves: run 'agora subagent register"},
		{"input not JSON", append(cmd, "--input", "{issue: 42}"),
			`--input is not a JSON object (not valid JSON at byte 2: invalid character 'i' looking for beginning of object key string); pass one like --input '{"issue": 42}' or --input @input.json`},
		{"input an array", append(cmd, "--input", "[1]"), "--input is not a JSON object (an array)"},
		{"input null", append(cmd, "--input", "null"), "--input is not a JSON object (null)"},
		{"input file an array", append(cmd, "--input", "@"+arrayInput), "--input @" + arrayInput + " is not a JSON object"},
		{"input file missing", append(cmd, "--input", "@"+filepath.Join(dir, "nope.json")), "--input @" + filepath.Join(dir, "nope.json") + ": no such file or directory; give the path of a JSON file after @"},
		{"subagent file missing", []string{"dispatch", "--subagent-file", filepath.Join(dir, "nope.yaml")}, "--subagent-file " + filepath.Join(dir, "nope.yaml") + ": no such file"},
		{"subagent file wrong field", []string{"dispatch", "--subagent-file", colour},
			colour + `: line 4: field colour: unknown field (known: allow_memory, capabilities, command, description,`},
		{"subagent file without runtime", []string{"dispatch", "--subagent-file", noRuntime}, noRuntime + `: line 1: field runtime: missing`},
		{"subagent file without command", []string{"dispatch", "--subagent-file", noCommand}, noCommand + ": line 1: field command: missing"},
		{"subagent file without prompt", []string{"dispatch", "--subagent-file", noPrompt}, noPrompt + ": line 1: field prompt: missing"},
		{"subagent file wrong type", []string{"dispatch", "--subagent-file", wrongType}, wrongType + ": line 4: field timeout_seconds: expected integer, but got string"},
		{"subagent file command a map", []string{"dispatch", "--subagent-file", commandMap}, commandMap + ": line 3: field command: expected string or array, but got object"},
		{"subagent file wrong limit", []string{"dispatch", "--subagent-file", badLimit},
			badLimit + `: line 5: field limits.rounds: unknown field (known: max_rounds, max_wait_seconds)`},
		{"subagent file empty", []string{"dispatch", "--subagent-file", empty}, empty + ": the file is empty"},
		{"timeout", append(cmd, "--timeout", "soon"), `--timeout "soon": want seconds (600) or a duration (10m) of at least 1s`},
		{"timeout zero", append(cmd, "--timeout", "0"), "--timeout 0: want at least 1 second"},
		{"label", append(cmd, "--label", "batch"), `--label "batch": want KEY=VALUE`},
		{"unquoted command", []string{"dispatch", "--command", "echo", "hi"}, `unexpected argument "hi"; a command goes in quotes`},
		{"unknown flag", append(cmd, "--colour", "red"), "flag provided but not defined: -colour; run 'agora dispatch -h' for the flags"},
		{"detach without wait", append(cmd, "--detach-on-signal"), "--detach-on-signal is about --wait, which is not given: add --wait"},
		{"heartbeat without wait", append(cmd, "--heartbeat", "30s"), "--heartbeat is about --wait, which is not given: add --wait"},
		{"heartbeat too short", append(cmd, "--wait", "--heartbeat", "10ms"), "--heartbeat 10ms: want a duration of at least 1s, e.g. --heartbeat 30s"},
	}
	for _, tt := range tests {
		agora(t, s.env, tt.args...).want(t, tt.name, 2, nil, []string{"agora dispatch: " + tt.errOut})
	}
	// Bad input, found by the CLI or refused by the server: one line, exit 2.
	agora(t, s.env, append(cmd, "--route", "human=soon")...).want(t, "a bad route", 2, nil, []string{`agora dispatch: --route "human=soon":`, "not a duration"})
	agora(t, s.env, append(cmd, "--task-id", "not an id")...).want(t, "a bad task id", 2, nil,
		[]string{`--task-id "not an id": want letters, digits, '-' and '_'`})
	if page, err := s.orch.List(t.Context(), wire.ListOptions{}); err != nil || len(page.Tasks) != 0 {
		t.Errorf("after bad dispatches: %d tasks, %v; want none", len(page.Tasks), err)
	}
	agora(t, s.env, "dispatch", "-h").want(t, "dispatch -h", 0, []string{"usage: agora dispatch", "-subagent-file FILE"}, nil)
}

// TestDispatchSubmits: without --wait, dispatch submits and says what the
// task does next; the same --task-id and request again is the same task.
func TestDispatchSubmits(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "triage.yaml")
	if err := os.WriteFile(sub, []byte(`# a sub-agent
name: triage
runtime: exec
command: "echo triaging; agora-worker ask 'Bug or feature?' --option bug --option feature"
route: memory,human=24h
timeout_seconds: 300
limits: {max_rounds: 4}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "input.json")
	if err := os.WriteFile(input, []byte("{\n  \"issue\": 1234\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"dispatch", "--subagent-file", sub, "--input", "@" + input, "--task-id", "tri-1", "--label", "batch=7", "--timeout", "10m", "--allow-memory"}
	r := agora(t, s.env, args...)
	r.want(t, "dispatch", 0, []string{"tri-1 queued: round 1 queued for a runner slot; no action needed", "next: agora logs tri-1 -f (or agora status tri-1)"}, nil)
	task := s.get(t, "tri-1")
	req := task.Request
	wantCmd := []string{"/bin/sh", "-c", "echo triaging; agora-worker ask 'Bug or feature?' --option bug --option feature"}
	if req.Subagent.Name != "triage" || req.Subagent.Runtime != schemas.RuntimeExec || strings.Join(req.Subagent.Command, "|") != strings.Join(wantCmd, "|") ||
		string(req.Input) != `{"issue":1234}` || req.Route != "memory,human=24h" || req.TimeoutSeconds != 600 || req.Limits.MaxRounds != 4 ||
		req.Labels["batch"] != "7" || !req.AllowMemory {
		t.Errorf("submitted request = %+v", req)
	}
	agora(t, s.env, args...).want(t, "the same dispatch again", 0, []string{"tri-1 queued"}, nil)
	agora(t, s.env, append(args[:len(args)-1], "--route", "human")...).want(t, "the same id, another request", 1, nil,
		[]string{`task tri-1: task id already used for a different request: route differs: stored "memory,human=24h", now "human"; allow_memory differs: stored true, now false (submit it under another id, or remove the task first)`})

	r = agora(t, s.env, "dispatch", "--command", "echo hi", "--name", "greeter", "--json")
	var got wire.Task
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Request.Subagent.Name != "greeter" ||
		strings.Join(got.Request.Subagent.Command, " ") != "/bin/sh -c echo hi" || got.State != wire.StateQueued {
		t.Errorf("dispatch --json = %v, %v", r, err)
	}
}

// TestDispatchWaitEndToEnd runs dispatch --wait through the real loop: an
// agora API and orchestrator, a runner on this Docker host, the worker in
// its image. A task that asks keeps --wait waiting, shows the question
// with the command that answers it, and finishes after the answer: exit 0.
// A failing command: exit 1. A cancelled task: exit 2. logs -f, started
// while the round is queued, prints the round's output as it runs.
func TestDispatchWaitEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newRunnerServer(t, "cli-dispatch-test")
	const waitFor = 3 * time.Minute

	t.Run("finished after a question", func(t *testing.T) {
		t.Parallel()
		script := `if [ -z "$AGORA_ANSWER" ]; then echo "looking"; agora-worker ask "Keep a.conf or b.conf?" --option a.conf --option b.conf; exit 0; fi
echo "kept $AGORA_ANSWER"`
		d := start(ctx, s.env, "dispatch", "--command", script, "--task-id", "e2e-ask", "--wait")
		var q []wire.QuestionView
		testutil.Eventually(t, waitFor, "the question", func() bool {
			page, _ := s.orch.Questions(ctx, wire.PageOptions{})
			q = page.Questions
			return len(q) == 1
		})
		testutil.Eventually(t, 30*time.Second, "--wait to show the question", func() bool {
			return strings.Contains(d.stderr.String(), "answer with: agora answer e2e-ask a.conf")
		})
		agora(t, s.env, "answer", "e2e-ask", "2", "--by", "carol").want(t, "answer", 0, []string{"e2e-ask round 1 answered: b.conf (by carol)"}, nil)
		if code := d.wait(t, waitFor); code != 0 {
			t.Fatalf("dispatch --wait exited %d, want 0; stdout %q, stderr %q", code, d.stdout.String(), d.stderr.String())
		}
		if out := d.stderr.String(); !strings.Contains(out, "e2e-ask finished after 2 rounds in") || !strings.Contains(out, "round 2 finished") || d.stdout.String() != "" {
			t.Errorf("dispatch --wait stderr = %q, stdout %q; want the summary on stderr and no result on stdout", out, d.stdout.String())
		}
		for _, want := range []string{"e2e-ask queued · round 1", "e2e-ask needs input · round 1", "? Keep a.conf or b.conf? (a.conf / b.conf)",
			"still waiting", "e2e-ask finished · round 2"} {
			if !strings.Contains(d.stderr.String(), want) {
				t.Errorf("dispatch --wait progress lacks %q:\n%s", want, d.stderr.String())
			}
		}
		agora(t, s.env, "logs", "e2e-ask").want(t, "logs of the last round", 0, []string{"kept b.conf"}, nil)
		agora(t, s.env, "logs", "e2e-ask", "--round", "1").want(t, "logs of round 1", 0, []string{"looking"}, nil)
		agora(t, s.env, "status", "e2e-ask").want(t, "the timeline", 0, []string{"finished", "Keep a.conf or b.conf?", "b.conf — by carol via cli",
			"round 2  finished", "exit 0"}, nil)
	})

	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		r := start(ctx, s.env, "dispatch", "--command", "echo about to fail; exit 3", "--task-id", "e2e-fail", "--wait", "--json")
		if code := r.wait(t, waitFor); code != 1 {
			t.Fatalf("dispatch --wait of a failing command exited %d, want 1; stderr %q", code, r.stderr.String())
		}
		var task wire.Task
		if err := json.Unmarshal([]byte(r.stdout.String()), &task); err != nil || task.State != wire.StateFailed {
			t.Errorf("dispatch --wait --json = %q, %v; want the failed task", r.stdout.String(), err)
		}
		if !strings.HasSuffix(r.stderr.String(), "agora dispatch: task e2e-fail failed: round 1 failed: "+view.LastRound(&task).Failure.Detail+
			"; 'agora logs e2e-fail' shows its output, 'agora respawn e2e-fail' runs it again\n") {
			t.Errorf("dispatch --wait stderr ends %q", r.stderr.String())
		}
		agora(t, s.env, "logs", "e2e-fail").want(t, "logs of the failed round", 0, []string{"about to fail"}, nil)
	})

	t.Run("cancelled, followed", func(t *testing.T) {
		t.Parallel()
		d := start(ctx, s.env, "dispatch", "--command", "for i in 1 2 3; do echo tick $i; sleep 1; done; sleep 60", "--task-id", "e2e-cancel", "--wait")
		testutil.Eventually(t, 30*time.Second, "the task", func() bool { _, err := s.orch.Get(ctx, "e2e-cancel"); return err == nil })
		follow := start(ctx, s.env, "logs", "e2e-cancel", "-f")
		testutil.Eventually(t, waitFor, "the followed output", func() bool { return strings.Contains(follow.stdout.String(), "tick 3") })
		agora(t, s.env, "cancel", "e2e-cancel").want(t, "cancel", 0, []string{"e2e-cancel cancelled (cancelled while running)"}, nil)
		if code := d.wait(t, waitFor); code != 3 {
			t.Fatalf("dispatch --wait of a cancelled task exited %d, want 3; stderr %q", code, d.stderr.String())
		}
		if !strings.Contains(d.stderr.String(), "agora dispatch: task e2e-cancel cancelled: cancelled while running") {
			t.Errorf("dispatch --wait stderr = %q", d.stderr.String())
		}
		if code := follow.wait(t, waitFor); code != 0 {
			t.Fatalf("logs -f exited %d: %q", code, follow.stderr.String())
		}
		stored := agora(t, s.env, "logs", "e2e-cancel").stdout
		// The worker's event lines (its stdout) may fall anywhere between the
		// runtime's lines (its stderr): two streams have no order between them.
		got := follow.stdout.String()
		i1, i2, i3 := strings.Index(got, "tick 1\n"), strings.Index(got, "tick 2\n"), strings.Index(got, "tick 3\n")
		if !strings.HasSuffix(stored, got) || i1 < 0 || i2 < i1 || i3 < i2 {
			t.Errorf("logs -f printed %q; want a suffix of the stored output %q with every tick in order", got, stored)
		}
	})
}

// TestDispatchWaitExpired: --wait on a task whose question nobody
// answers and whose route gives up exits 2.
func TestDispatchWaitExpired(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	d := start(t.Context(), s.env, "dispatch", "--command", "true", "--task-id", "exp", "--route", "human=1s", "--wait")
	testutil.Eventually(t, 30*time.Second, "the task", func() bool { _, err := s.orch.Get(t.Context(), "exp"); return err == nil })
	s.event(t, schemas.KindStarted, "exp-r1", nil)
	s.event(t, schemas.KindNeedsInput, "exp-r1", func(ev *schemas.Event) { ev.NeedsInput = &schemas.NeedsInput{Question: "Anyone?"} })
	if code := d.wait(t, time.Minute); code != 3 {
		t.Fatalf("dispatch --wait of an expiring task exited %d, want 3; stderr %q", code, d.stderr.String())
	}
	for _, want := range []string{"? Anyone?", `answer with: agora answer exp "<your answer>"`, "the route (human=1s)", "agora dispatch: task exp expired:"} {
		if !strings.Contains(d.stderr.String(), want) {
			t.Errorf("dispatch --wait stderr lacks %q:\n%s", want, d.stderr.String())
		}
	}
}

// newRunnerServer is a taskServer with a runner on this Docker host that
// runs its rounds in a worker image built for the test; name makes the
// image tag and runner id unique to the test and this process.
func newRunnerServer(t *testing.T, name string) *taskServer {
	t.Helper()
	eng := computetest.Docker(t)
	computetest.Busybox(t)
	ctx := t.Context()
	tag := fmt.Sprintf("agora-worker:%s-%d", name, testutil.RunNumber())
	if _, err := images.Build(ctx, eng, images.Options{WorkerBinary: testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false), Tag: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.RemoveImage(context.Background(), tag) })
	s := newTaskServer(t)
	r, err := runner.New(runner.Config{ID: fmt.Sprintf("%s-%d", name, testutil.RunNumber()), Slots: 4, Image: tag, DataDir: t.TempDir(),
		StorageURI: s.storeURI, Store: s.store, Bus: s.bus, Engine: eng, Grace: 2 * time.Second, Logger: computetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Stop(ctx)
	})
	return s
}
