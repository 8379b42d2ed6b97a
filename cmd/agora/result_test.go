package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/orchestrator/api/openapitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// ciResultScript is a CI step as a user writes it: the result of the
// dispatch in a variable, the artifacts downloaded and checked.
const ciResultScript = `set -eu
out=$(agora dispatch --subagent-file "$SUBAGENT" --task-id ci-result --wait)
test "$out" = '{"verdict":"ok","files":2}' || { echo "unexpected result: $out" >&2; exit 10; }
msg=$(agora dispatch --command 'printf "%s" "\"all 3 checks passed\"" > .agora/result.json' --task-id ci-text --wait)
test "$msg" = "all 3 checks passed" || { echo "unexpected text: $msg" >&2; exit 11; }
agora artifacts ci-result -d "$DL"
agora artifacts ci-result --json > "$DL/list.json"
`

// The sub-agent of the CI step: a result and two files, one in the
// documented directory, one named by its outputs glob.
const ciResultSubagent = `name: reporter
runtime: exec
outputs: ["out/*.csv"]
command: |
  mkdir -p .agora/artifacts out
  printf 'all good\n' > .agora/artifacts/report.txt
  printf 'a,b\n1,2\n' > out/data.csv
  printf 'ignored' > out/notes.txt
  printf '{"verdict": "ok", "files": 2}' > .agora/result.json
`

// TestResultsEndToEnd is issue 19's "what must be shown" for results, on
// the real stack (Docker worker image, runner, embedded NATS, the API) and
// the real agora binary in a shell script: out=$(agora dispatch … --wait)
// holds the result, agora artifacts -d gets both files with their sha256,
// and agora batch results of a 20-task batch gives 20 lines with results.
func TestResultsEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newRunnerServer(t, "cli-results-test")
	bin := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora", true)

	t.Run("a CI step", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		sub := filepath.Join(dir, "reporter.yaml")
		if err := os.WriteFile(sub, []byte(ciResultSubagent), 0o644); err != nil {
			t.Fatal(err)
		}
		dl := filepath.Join(dir, "downloads")
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", ciResultScript)
		cmd.Env = append(s.env, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "HOME="+dir, "NO_COLOR=1", "SUBAGENT="+sub, "DL="+dl)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the CI step failed: %v\n%s", err, out)
		}
		want := map[string]string{"report.txt": "all good\n", "out/data.csv": "a,b\n1,2\n"}
		var list struct {
			Artifacts []struct {
				Name   string `json:"name"`
				Size   int64  `json:"size"`
				SHA256 string `json:"sha256"`
			} `json:"artifacts"`
		}
		data, err := os.ReadFile(filepath.Join(dl, "list.json"))
		if err != nil || json.Unmarshal(data, &list) != nil || len(list.Artifacts) != len(want) {
			t.Fatalf("agora artifacts --json = %s, %v; want %d artifacts", data, err, len(want))
		}
		for _, a := range list.Artifacts {
			content, ok := want[a.Name]
			if !ok {
				t.Errorf("unexpected artifact %+v (out/notes.txt matches no glob)", a)
				continue
			}
			got, err := os.ReadFile(filepath.Join(dl, filepath.FromSlash(a.Name)))
			sum := sha256.Sum256(got)
			if err != nil || string(got) != content || hex.EncodeToString(sum[:]) != a.SHA256 {
				t.Errorf("downloaded %s = %q (%v), sha256 %x; want %q with the listed sha256 %s", a.Name, got, err, sum, content, a.SHA256)
			}
		}
		if !strings.Contains(string(out), "report.txt") || !strings.Contains(string(out), "✓") {
			t.Errorf("agora artifacts -d output lacks the downloaded files:\n%s", out)
		}
		agora(t, s.env, "result", "ci-result").want(t, "agora result", 0, []string{`{"verdict":"ok","files":2}`}, nil)
		agora(t, s.env, "result", "ci-text").want(t, "agora result of a string", 0, []string{"all 3 checks passed\n"}, nil)
		if r := agora(t, s.env, "result", "ci-text", "--json"); r.stdout != "\"all 3 checks passed\"\n" {
			t.Errorf("agora result --json = %s, want the JSON string", r)
		}
	})

	t.Run("a batch of 20", func(t *testing.T) {
		t.Parallel()
		var lines []string
		for i := 1; i <= 20; i++ {
			lines = append(lines, fmt.Sprintf(`{"subagent":{"name":"counter","runtime":"exec","command":["/bin/sh","-c","printf '{\"n\":%d}' > .agora/result.json"]}}`, i))
		}
		file := batchFile(t, t.TempDir(), "b20.jsonl", lines...)
		agora(t, s.env, "batch", "submit", file, "--batch", "b20").want(t, "batch submit", 0, nil, nil)
		testutil.Eventually(t, 3*time.Minute, "the 20 tasks to finish", func() bool {
			page, err := s.orch.List(ctx, wire.ListOptions{Label: batchLabel + "=b20", State: wire.StateFinished, Limit: 100})
			return err == nil && len(page.Tasks) == 20
		})
		res := agora(t, s.env, "batch", "results", "b20")
		if res.code != 0 {
			t.Fatalf("batch results = %s", res)
		}
		sc := bufio.NewScanner(strings.NewReader(res.stdout))
		n := 0
		for sc.Scan() {
			n++
			var line view.BatchResult
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %d %q: %v", n, sc.Text(), err)
			}
			if want := fmt.Sprintf("b20-%d", n); line.ID != want || line.State != wire.StateFinished || string(line.Result) != fmt.Sprintf(`{"n":%d}`, n) || line.Outcome == nil {
				t.Errorf("line %d = %s, want task %s finished with result {\"n\":%d} and its outcome", n, sc.Text(), want, n)
			}
		}
		if n != 20 {
			t.Errorf("batch results printed %d lines, want 20:\n%s", n, res.stdout)
		}
	})
}

// TestResultVerbs: agora result and agora artifacts through the real API
// and orchestrator, the test playing the runner.
func TestResultVerbs(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	for _, id := range []string{"rv-done", "rv-failed", "rv-queued", "rv-none"} {
		agora(t, s.env, "dispatch", "--command", "true", "--task-id", id).want(t, "dispatch "+id, 0, nil, nil)
	}
	zero, one, ms := 0, 1, int64(5)
	for id, ev := range map[string]schemas.Event{
		"rv-done":   {Kind: schemas.KindFinished, ExitCode: &zero, Result: json.RawMessage(`"all good"`)},
		"rv-none":   {Kind: schemas.KindFinished, ExitCode: &zero},
		"rv-failed": {Kind: schemas.KindFailed, ExitCode: &one, Failure: &schemas.Failure{Reason: schemas.ReasonProviderFailed, Detail: "exit 1"}},
	} {
		ev.DispatchID, ev.Time, ev.DurationMS = id+"-r1", time.Now().UTC(), &ms
		if _, err := s.bus.PublishEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, id+" ended", func() bool {
			task, err := s.orch.Get(t.Context(), id)
			return err == nil && task.State.Terminal()
		})
	}
	agora(t, s.env, "result", "rv-done").want(t, "result of a finished task", 0, []string{"all good\n"}, nil)
	if r := agora(t, s.env, "result", "rv-none"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "finished without a result") {
		t.Errorf("result of a task without one = %s; want exit 0, nothing on stdout, a note on stderr", r)
	}
	agora(t, s.env, "result", "rv-failed").want(t, "result of a failed task", 1, nil, []string{"task rv-failed failed: round 1 failed: exit 1; it has no result"})
	agora(t, s.env, "result", "rv-queued").want(t, "result of a queued task", 1, nil, []string{"task rv-queued is queued: its result comes when it finishes"})
	agora(t, s.env, "result").want(t, "result without a task", 2, nil, []string{"want one TASK"})
	agora(t, s.env, "artifacts", "rv-done").want(t, "artifacts of a task without any", 0, nil, []string{"task rv-done has no artifacts"})
	agora(t, s.env, "artifacts", "rv-done", "a.txt").want(t, "NAME without -d", 2, nil, []string{"give -d DIR too"})
	agora(t, s.env, "artifacts", "rv-done", "../a.txt", "-d", t.TempDir()).want(t, "a NAME that escapes", 2, nil, []string{`artifact name "../a.txt"`})
	agora(t, s.env, "artifacts", "rv-done", "a.txt", "-d", t.TempDir()).want(t, "an unknown NAME", 1, nil, []string{`task rv-done has no artifact "a.txt" (it has: none)`})
}

// TestArtifactsDownloadStaysInDir: agora artifacts -d writes only inside
// DIR — a symbolic link already there is not followed out of it — and a
// download that fails its sha256 check leaves nothing behind.
func TestArtifactsDownloadStaysInDir(t *testing.T) {
	t.Parallel()
	good := "the real bytes\n"
	sum := sha256.Sum256([]byte(good))
	arts := []wire.Artifact{{Name: "out/a.txt", Size: int64(len(good)), SHA256: hex.EncodeToString(sum[:])},
		{Name: "b.txt", Size: int64(len(good)), SHA256: hex.EncodeToString(sum[:])}}
	svc := &apitest.Service{
		GetFunc: func(_ context.Context, id string) (*wire.Task, error) {
			return &wire.Task{ID: id, State: wire.StateFinished, Artifacts: arts}, nil
		},
		OpenArtifactFunc: func(_ context.Context, _, name string) (wire.Artifact, io.ReadCloser, error) {
			body := good
			if name == "b.txt" {
				body = "the fake bytes\n" // same length, other content
			}
			for _, a := range arts {
				if a.Name == name {
					return a, io.NopCloser(strings.NewReader(body)), nil
				}
			}
			return wire.Artifact{}, nil, wire.ErrNotFound
		},
	}
	h, err := api.NewHandler(api.Config{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, h, openapitest.Lenient))
	t.Cleanup(srv.Close)
	env := []string{"AGORA_SERVER=" + srv.URL, "HOME=" + t.TempDir()}

	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	r := agora(t, env, "artifacts", "t-1", "out/a.txt", "-d", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "download out/a.txt into") {
		t.Errorf("download through a link out of DIR = %s; want it refused", r)
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("files written outside DIR through the link: %v", left)
	}

	dir = t.TempDir()
	// The server checks what storage gives as it sends it and cuts the
	// response; the client's own check (client.TestDownloadArtifactTampered)
	// is behind it.
	agora(t, env, "artifacts", "t-1", "b.txt", "-d", dir).want(t, "a tampered artifact", 1, nil,
		[]string{"download artifact b.txt of task t-1", "the server cuts an artifact whose stored bytes are not its own"})
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("DIR after a failed check holds %v; want nothing", left)
	}
	agora(t, env, "artifacts", "t-1", "out/a.txt", "-d", dir).want(t, "a good artifact", 0, []string{"a.txt", "✓"}, nil)
	if got, err := os.ReadFile(filepath.Join(dir, "out", "a.txt")); err != nil || string(got) != good {
		t.Errorf("downloaded out/a.txt = %q, %v", got, err)
	}
}

// TestDispatchWaitPrintsTheResult: dispatch --wait prints the result alone
// on stdout — read through the API when the task keeps it by ref — and
// the closing line on stderr; --json prints the task with the result read
// in; -o name its id.
func TestDispatchWaitPrintsTheResult(t *testing.T) {
	t.Parallel()
	s := newTaskServer(t)
	big := strings.Repeat("long line of the result\n", 1000)
	raw, _ := json.Marshal(big)
	_, ref, err := storage.PutBlob(t.Context(), s.store, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id, flag   string
		check      func(stdout string) bool
		wantStderr string
	}{
		{"w-text", "", func(out string) bool { return out == big }, "w-text finished after 1 round in"},
		{"w-json", "--json", func(out string) bool {
			var task wire.Task
			var got string
			return json.Unmarshal([]byte(out), &task) == nil && task.ResultRef != nil && json.Unmarshal(task.Result, &got) == nil && got == big
		}, ""},
		{"w-name", "-o name", func(out string) bool { return out == "w-name\n" }, ""},
	} {
		args := []string{"dispatch", "--command", "true", "--task-id", tt.id, "--wait"}
		if tt.flag != "" {
			args = append(args, strings.Fields(tt.flag)...)
		}
		d := start(t.Context(), s.env, args...)
		testutil.Eventually(t, 30*time.Second, "task "+tt.id, func() bool { _, err := s.orch.Get(t.Context(), tt.id); return err == nil })
		s.event(t, schemas.KindStarted, tt.id+"-r1", nil)
		s.event(t, schemas.KindFinished, tt.id+"-r1", func(ev *schemas.Event) {
			ev.ResultRef = &schemas.ObjectRef{URI: ref.URI, SHA256: ref.SHA256, Size: ref.Size}
		})
		if code := d.wait(t, time.Minute); code != 0 || !tt.check(d.stdout.String()) || !strings.Contains(d.stderr.String(), tt.wantStderr) {
			t.Errorf("dispatch --wait %s: exit %d, stdout %.200q, stderr %q", tt.flag, code, d.stdout.String(), d.stderr.String())
		}
	}
}
