package procbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/internal/testenv"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// dispatchFiles lays out one dispatch's files as the runner's host
// transport does (runner/hostfiles.go, compile.go) and returns its
// container spec and event key.
func dispatchFiles(t *testing.T, id, task, script string) (compute.ContainerSpec, []byte, string) {
	t.Helper()
	root := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"spec", "workspace", "stores/" + id, "keys/" + id, "cancel/" + id} {
		dirs[d] = filepath.Join(root, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec, _ := json.Marshal(map[string]any{"dispatch_id": id, "task_id": task, "round": 1,
		"subagent": map[string]any{"name": "replayed", "runtime": "exec", "command": []string{"/bin/sh", "-c", script}}})
	if err := os.WriteFile(filepath.Join(dirs["spec"], "spec.json"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, schemas.EventKeyBytes)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(dirs["keys/"+id], "event.key"), []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stage := dirs["stores/"+id]
	return compute.ContainerSpec{Name: "agora-" + id, Image: Image, User: "65532:65532", WorkingDir: "/workspace",
		Env: []string{schemas.EnvDispatchID + "=" + id, schemas.EnvSpecFile + "=/agora/spec.json", schemas.EnvWorkspace + "=/workspace",
			schemas.EnvStorageURI + "=file://" + stage, schemas.EnvGraceSeconds + "=1", "HOME=/tmp",
			schemas.EnvEventKeyFile + "=/run/agora/key/event.key", schemas.EnvCancelFile + "=/run/agora/cancel/requested"},
		Mounts: []compute.Mount{{Source: dirs["spec"], Target: "/agora", ReadOnly: true}, {Source: dirs["workspace"], Target: "/workspace"},
			{Source: stage, Target: stage}, {Source: dirs["keys/"+id], Target: "/run/agora/key"},
			{Source: dirs["cancel/"+id], Target: "/run/agora/cancel", ReadOnly: true}},
		Labels: map[string]string{compute.LabelDispatchID: id, compute.LabelTaskID: task}}, key, dirs["workspace"]
}

func TestMain(m *testing.M) {
	os.Exit(testenv.RemovingBinaries(m).Run())
}

func newReplayer(t *testing.T, hold time.Duration) *Replayer {
	t.Helper()
	worker := testenv.Binary(t, "github.com/agoradev/agora/cmd/agora-worker", false)
	e, err := NewReplayer(ReplayConfig{Config: Config{Worker: worker, Image: Image, Dir: t.TempDir()}, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runAll runs one dispatch to its end on e and returns how it ended, its
// stdout and its events, each checked against key.
func runAll(t *testing.T, e compute.Engine, spec compute.ContainerSpec, key []byte) (exit.Result, string, []schemas.Event) {
	t.Helper()
	res, stdout, _ := run(t, e, spec)
	return res, stdout, signedEvents(t, stdout, key)
}

func signedEvents(t *testing.T, stdout string, key []byte) []schemas.Event {
	t.Helper()
	var evs []schemas.Event
	for line := range strings.Lines(stdout) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		data, ok := schemas.VerifyEventLine(key, []byte(line))
		if !ok {
			t.Fatalf("event line not signed with the dispatch's key: %s", line)
		}
		ev, err := schemas.ParseEvent(data)
		if err != nil {
			t.Fatalf("event line %s: %v", data, err)
		}
		evs = append(evs, *ev)
	}
	return evs
}

func kinds(evs []schemas.Event) []schemas.EventKind {
	var out []schemas.EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

// TestReplayFollowsTheWorker: the second dispatch of a shape is replayed,
// not run, and leaves what the worker left: the sub-agent's files in the
// workspace, the worker's own (.agora/input.json), the key file deleted,
// its events signed with its own key and carrying its own ids, and the
// same exit code.
func TestReplayFollowsTheWorker(t *testing.T) {
	e := newReplayer(t, 0)
	script := `echo "made by $AGORA_DISPATCH_ID" > out.txt; mkdir -p sub; printf x > sub/x; echo to-stderr >&2; exit 3`
	var first []schemas.Event
	for i, id := range []string{"d-replay-one", "d-replay-two"} {
		task := "task-" + id
		spec, key, ws := dispatchFiles(t, id, task, script)
		res, _, evs := runAll(t, e, spec, key)
		if res.ExitCode != 3 {
			t.Errorf("%s: exit %+v, want 3 (the sub-agent's)", id, res)
		}
		if got := kinds(evs); len(got) != 2 || got[0] != schemas.KindStarted || got[1] != schemas.KindFailed {
			t.Fatalf("%s: events %v, want started and failed", id, got)
		}
		for _, ev := range evs {
			if ev.DispatchID != id || ev.TaskID != task {
				t.Errorf("%s: event %s for %s/%s", id, ev.Kind, ev.DispatchID, ev.TaskID)
			}
		}
		if i == 0 {
			first = evs
		} else if evs[1].Failure.Reason != first[1].Failure.Reason || evs[1].Failure.Detail != first[1].Failure.Detail {
			t.Errorf("replayed failure %+v, recorded %+v", evs[1].Failure, first[1].Failure)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "made by "+id+"\n" {
			t.Errorf("%s: workspace out.txt = %q, %v", id, b, err)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "sub", "x")); err != nil || string(b) != "x" {
			t.Errorf("%s: workspace sub/x = %q, %v", id, b, err)
		}
		if _, err := os.Stat(filepath.Join(ws, ".agora", "input.json")); err != nil {
			t.Errorf("%s: the worker's .agora/input.json: %v", id, err)
		}
		if _, err := os.Stat(hostPath(spec.Mounts, "/run/agora/key/event.key")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the event key file is still there (%v); the worker deletes it", id, err)
		}
	}
	if rec, rep := e.Stats(); rec != 1 || rep != 1 {
		t.Errorf("recorded %d, replayed %d; want one of each", rec, rep)
	}
}

// TestReplayLargeOutputs: a partial_state or a result too large to travel
// inline is spilled into the staged store; the replay writes the same blob
// where the runner looks for it, under the name its event's ref gives.
func TestReplayLargeOutputs(t *testing.T) {
	big := `awk 'BEGIN { printf "{\"big\": \""; for (i = 0; i < 100000; i++) printf "x"; printf "\"}" }'`
	for _, tc := range []struct {
		name, script string
		kind         schemas.EventKind
		ref          func(schemas.Event) *schemas.ObjectRef
	}{
		{"partial_state", big + ` > "$TMPDIR/state.json"
exec agora-worker ask "Big?" --state "$TMPDIR/state.json"`, schemas.KindNeedsInput,
			func(ev schemas.Event) *schemas.ObjectRef { return ev.NeedsInput.PartialStateRef }},
		{"result", big + ` > .agora/result.json`, schemas.KindFinished,
			func(ev schemas.Event) *schemas.ObjectRef { return ev.ResultRef }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReplayer(t, 0)
			for _, id := range []string{"d-large-one", "d-large-two"} {
				spec, key, _ := dispatchFiles(t, id, "task-"+id, tc.script)
				res, _, evs := runAll(t, e, spec, key)
				if res.ExitCode != 0 || len(evs) != 2 || evs[1].Kind != tc.kind {
					t.Fatalf("%s: exit %+v, events %v; want %s", id, res, kinds(evs), tc.kind)
				}
				ref := tc.ref(evs[1])
				if ref == nil || ref.Size < 100000 {
					t.Fatalf("%s: ref %+v, want the spilled %s", id, ref, tc.name)
				}
				stage := spec.Mounts[2].Source
				if !strings.Contains(ref.URI, stage) {
					t.Errorf("%s: ref URI %s is not in this dispatch's staged store %s", id, ref.URI, stage)
				}
				data, err := findBlob(stage, ref.SHA256)
				if sum := sha256.Sum256(data); err != nil || hex.EncodeToString(sum[:]) != ref.SHA256 {
					t.Errorf("%s: staged blob %s: %v", id, ref.SHA256, err)
				}
			}
			if rec, rep := e.Stats(); rec != 1 || rep != 1 {
				t.Errorf("recorded %d, replayed %d; want one of each", rec, rep)
			}
		})
	}
}

func findBlob(root, name string) ([]byte, error) {
	var found string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == name {
			found = p
		}
		return nil
	})
	if found == "" {
		return nil, os.ErrNotExist
	}
	return os.ReadFile(found)
}

// TestReplayStop: a replay stopped with the runner's cancel marker reports
// dispatch.cancelled and exits 0, as the worker does; one stopped without
// it (the backstop) goes on until the grace has passed and is killed.
func TestReplayStop(t *testing.T) {
	e := newReplayer(t, time.Hour)
	script := `echo done > out.txt`
	ctx := context.Background()
	rec, key, _ := dispatchFiles(t, "d-stop-rec", "task-stop-rec", script)
	if res, _, _ := runAll(t, e, rec, key); res.ExitCode != 0 {
		t.Fatalf("recorded run: %+v", res)
	}
	for _, tc := range []struct {
		name   string
		marker bool
		want   exit.Result
		kinds  []schemas.EventKind
	}{
		{"cancel", true, exit.Result{ExitCode: 0}, []schemas.EventKind{schemas.KindStarted, schemas.KindCancelled}},
		{"backstop", false, exit.Result{ExitCode: 137, Signal: "SIGKILL"}, []schemas.EventKind{schemas.KindStarted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "d-stop-" + tc.name
			spec, key, ws := dispatchFiles(t, id, "task-"+id, script)
			cid, err := e.Create(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Remove(context.Background(), cid) })
			if err := e.Start(ctx, cid); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, time.Minute, "the replay's started event", func() bool {
				var out bytes.Buffer
				_ = e.Logs(ctx, cid, false, &out, nil)
				return strings.Contains(out.String(), string(schemas.KindStarted))
			})
			if tc.marker {
				if err := os.WriteFile(hostPath(spec.Mounts, "/run/agora/cancel/requested"), []byte("now\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Stop(ctx, cid, 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			res, err := e.Wait(ctx, cid)
			if err != nil || res != tc.want {
				t.Errorf("Wait = %+v, %v; want %+v", res, err, tc.want)
			}
			var out bytes.Buffer
			if err := e.Logs(ctx, cid, false, &out, nil); err != nil {
				t.Fatal(err)
			}
			evs := signedEvents(t, out.String(), key)
			if got := kinds(evs); !equalKinds(got, tc.kinds) {
				t.Errorf("events %v, want %v", got, tc.kinds)
			}
			if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
				t.Error("a stopped replay wrote the run's files")
			}
		})
	}
}

// TestReplayStoppedRunNotRecorded: a worker run the runner stopped (here
// for a cancel: it ends 0 with dispatch.cancelled) is not what its shape
// does, so the next dispatch of the shape runs the worker again.
func TestReplayStoppedRunNotRecorded(t *testing.T) {
	e := newReplayer(t, 0)
	ctx := context.Background()
	script := `echo waiting; sleep 60`
	for i, id := range []string{"d-stopped-one", "d-stopped-two"} {
		spec, key, _ := dispatchFiles(t, id, "task-"+id, script)
		cid, err := e.Create(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Remove(context.Background(), cid) })
		if err := e.Start(ctx, cid); err != nil {
			t.Fatal(err)
		}
		if rec, rep := e.Stats(); rec != int64(i+1) || rep != 0 {
			t.Fatalf("%s: %d worker runs, %d replays; want the worker run each time", id, rec, rep)
		}
		testutil.Eventually(t, time.Minute, "the sub-agent's output", func() bool {
			var out bytes.Buffer
			_ = e.Logs(ctx, cid, false, nil, &out)
			return strings.Contains(out.String(), "waiting")
		})
		if err := os.WriteFile(hostPath(spec.Mounts, "/run/agora/cancel/requested"), []byte("now\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop(ctx, cid, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		res, err := e.Wait(ctx, cid)
		var out bytes.Buffer
		_ = e.Logs(ctx, cid, false, &out, nil)
		if evs := signedEvents(t, out.String(), key); err != nil || res.ExitCode != 0 || len(evs) == 0 || evs[len(evs)-1].Kind != schemas.KindCancelled {
			t.Fatalf("%s: %+v, %v, events %v; want cancelled, exit 0", id, res, err, kinds(evs))
		}
	}
}

func equalKinds(a, b []schemas.EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReplayRefuses: what process mode refuses, and a worker that would
// publish its own events or has no key to sign them with.
func TestReplayRefuses(t *testing.T) {
	e := newReplayer(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*compute.ContainerSpec)
		want error
	}{
		{"another image", func(s *compute.ContainerSpec) { s.Image = "claude:latest" }, compute.ErrImageNotFound},
		{"another entrypoint", func(s *compute.ContainerSpec) { s.Entrypoint = []string{"/bin/egress"} }, compute.ErrInvalidSpec},
		{"worker publishes", func(s *compute.ContainerSpec) { s.Env = append(s.Env, schemas.EnvNATSURL+"=nats://127.0.0.1:1") }, compute.ErrInvalidSpec},
		{"no event key", func(s *compute.ContainerSpec) {
			s.Env = strings.Split(strings.ReplaceAll(strings.Join(s.Env, "\n"), schemas.EnvEventKeyFile, "X"), "\n")
		}, compute.ErrInvalidSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _, _ := dispatchFiles(t, "d-refused", "task-refused", "true")
			tc.edit(&spec)
			if _, err := e.Create(ctx, spec); !errors.Is(err, tc.want) {
				t.Errorf("Create = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRetime(t *testing.T) {
	in := `{"kind":"dispatch.needs_input","dispatch_id":"d","time":"2026-01-02T03:04:05.6Z","needs_input":{"question":"q","partial_state":{"time":"kept", "x": 1}}}`
	out := string(retime([]byte(in)))
	head, tail, ok := strings.Cut(out, `"time":"`)
	if !ok || head != `{"kind":"dispatch.needs_input","dispatch_id":"d",` {
		t.Fatalf("retime = %s", out)
	}
	stamp, rest, _ := strings.Cut(tail, `"`)
	if ts, err := time.Parse(time.RFC3339Nano, stamp); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("time = %q (%v), want now", stamp, err)
	}
	if want := `,"needs_input":{"question":"q","partial_state":{"time":"kept", "x": 1}}}`; rest != want {
		t.Errorf("after the time: %s, want %s", rest, want)
	}
}
