package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/internal/workspace"
	"github.com/agoradev/agora/schemas"
)

// exchangeFixture is a worker run the way a Fargate runner sets one up: no
// mounts, the spec and private values under an exchange prefix in file
// storage, no NATS (the events are read from stdout).
type exchangeFixture struct {
	storeDir string
	store    storage.Store
	prefix   string
	key      []byte
	cfg      Config
	stdout   *terminalWatcher
	stderr   *testutil.Buffer
}

func newExchangeFixture(t *testing.T, id, script string, bundles ...schemas.BundleRef) *exchangeFixture {
	t.Helper()
	storeDir := t.TempDir()
	store, err := storage.Open(t.Context(), "file://"+storeDir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &exchangeFixture{storeDir: storeDir, store: store,
		prefix: "exchange/" + strings.Repeat("c0", 32), key: bytes.Repeat([]byte{0x3c}, schemas.EventKeyBytes), stderr: &testutil.Buffer{}}
	spec := &schemas.DispatchSpec{DispatchID: id, TaskID: "t-" + id, Round: 1, Env: bundles,
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-ec", script}}}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f.put(t, "spec.json", string(data))
	f.putPrivate(t, hex.EncodeToString(f.key))
	f.stdout = &terminalWatcher{store: store}
	f.cfg = Config{
		DispatchID: id,
		StorageURI: "file://" + storeDir,
		Workspace:  t.TempDir(),
		Grace:      time.Second,
		Environ:    []string{"PATH=/usr/bin:/bin", "PRIVATE=" + f.path("private.json"), "AGORA_PASSTHROUGH_ENV=PRIVATE"},
		Adapters:   []adapters.Adapter{exec.New()},
		Exchange:   Exchange{Key: f.prefix},
		Stdout:     f.stdout,
		Stderr:     f.stderr,
		Logger:     natstest.Logger(t),
	}
	return f
}

func (f *exchangeFixture) put(t *testing.T, name, data string) {
	t.Helper()
	if err := f.store.Put(t.Context(), f.prefix+"/"+name, strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func (f *exchangeFixture) putPrivate(t *testing.T, eventKey string, workerEnv ...string) {
	t.Helper()
	data, err := json.Marshal(schemas.PrivateValues{EventKey: eventKey, WorkerEnv: workerEnv})
	if err != nil {
		t.Fatal(err)
	}
	f.put(t, "private.json", string(data))
}

// path is where the file store keeps name under the prefix.
func (f *exchangeFixture) path(name string) string {
	return filepath.Join(f.storeDir, filepath.FromSlash(f.prefix), name)
}

// run runs the worker and checks every stdout line verifies with the key.
func (f *exchangeFixture) run(t *testing.T) Result {
	t.Helper()
	res := Run(t.Context(), f.cfg)
	sc := bufio.NewScanner(strings.NewReader(f.stdout.buf.String()))
	lines := 0
	for ; sc.Scan(); lines++ {
		if _, ok := schemas.VerifyEventLine(f.key, sc.Bytes()); !ok {
			t.Errorf("stdout line does not verify with the key from private.json: %s", sc.Text())
		}
	}
	if lines == 0 {
		t.Error("no event on stdout")
	}
	if _, err := os.Stat(f.path("private.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private.json is still in storage (%v)", err)
	}
	return res
}

// terminalWatcher is the worker's stdout; when the terminal event is
// written it lists what the exchange holds at that moment, as whoever sees
// the event would find it.
type terminalWatcher struct {
	store storage.Store
	mu    sync.Mutex
	buf   testutil.Buffer
	seen  []string
}

func (w *terminalWatcher) Write(p []byte) (int, error) {
	if ev, err := schemas.ParseEvent(bytes.TrimSpace(p)); err == nil && ev.Kind.Terminal() {
		keys, _ := w.store.List(context.Background(), "exchange/")
		w.mu.Lock()
		w.seen = keys
		w.mu.Unlock()
	}
	return w.buf.Write(p)
}

func (w *terminalWatcher) atTerminal() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// TestExchangeFinished: the spec and the private values come from the
// exchange; private.json is gone before the runtime starts; the worker env
// reaches the worker (an env: ref resolves it) but not the runtime; an
// aws-sm: ref resolves from the variable ECS injects, which the runtime
// never sees; the answer is in the exchange when the finished event is.
func TestExchangeFinished(t *testing.T) {
	t.Parallel()
	ref := "aws-sm:prod/db#password"
	script := `
test -n "$PRIVATE" && test ! -e "$PRIVATE" || { echo "private.json still there" >&2; exit 4; }
test -z "${OPERATOR_TOKEN:-}" || { echo "the runtime sees the worker env" >&2; exit 5; }
if env | grep AGORA_SECRET_; then echo "the runtime sees an injected secret variable" >&2; exit 6; fi
printf '%s' "$TOKEN" > got_token; printf '%s' "$DB" > got_db
mkdir -p .agora; printf '{"answer":"B"}' > .agora/answer.json
`
	f := newExchangeFixture(t, "d-x-finished", script)
	bundle := putBundle(t, f.store, "creds", `{"secrets":{"TOKEN":"env:OPERATOR_TOKEN","DB":"`+ref+`"}}`)
	f.cfg.SpecFile = ""
	spec := &schemas.DispatchSpec{DispatchID: "d-x-finished", TaskID: "t-x", Round: 1, Env: []schemas.BundleRef{bundle},
		Subagent: schemas.Subagent{Name: "script", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-ec", script}}}
	data, _ := json.Marshal(spec)
	f.put(t, "spec.json", string(data))
	f.putPrivate(t, hex.EncodeToString(f.key), "OPERATOR_TOKEN=op-token-123", "PATH=/nowhere")
	f.cfg.Environ = []string{"PATH=/usr/bin:/bin", "PRIVATE=" + f.path("private.json"), secrets.PrefetchedEnv(ref) + "=from-ecs-456",
		"AGORA_PASSTHROUGH_ENV=PRIVATE," + secrets.PrefetchedEnv(ref)}

	res := f.run(t)
	if res.Terminal.Kind != schemas.KindFinished {
		t.Fatalf("Run = %s %+v, want finished; stderr:\n%s", res.Terminal.Kind, res.Terminal.Failure, f.stderr.String())
	}
	for file, want := range map[string]string{"got_token": "op-token-123", "got_db": "from-ecs-456"} {
		if got, err := os.ReadFile(filepath.Join(f.cfg.Workspace, file)); err != nil || string(got) != want {
			t.Errorf("runtime's %s = %q, %v; want %q", file, got, err, want)
		}
	}
	if got, err := os.ReadFile(f.path("answer.json")); err != nil || string(got) != `{"answer":"B"}` {
		t.Errorf("answer.json in the exchange = %q, %v", got, err)
	}
	if !slices.Contains(f.stdout.atTerminal(), f.prefix+"/answer.json") {
		t.Errorf("at the terminal event the exchange held %v; want answer.json there already", f.stdout.atTerminal())
	}
}

// TestExchangeNeedsInputSnapshot: a round that asks snapshots its
// workspace into the exchange before its terminal event; the next round,
// given the archive, starts from those files (and not the old sentinel).
func TestExchangeNeedsInputSnapshot(t *testing.T) {
	t.Parallel()
	f := newExchangeFixture(t, "d-x-ask", `echo kept > notes.txt; mkdir -p .agora; echo '{"question":"A or B?"}' > .agora/needs_input.json`)
	f.cfg.Exchange.SnapshotWorkspace = true
	res := f.run(t)
	if res.Terminal.Kind != schemas.KindNeedsInput {
		t.Fatalf("Run = %s %+v, want needs_input; stderr:\n%s", res.Terminal.Kind, res.Terminal.Failure, f.stderr.String())
	}
	if !slices.Contains(f.stdout.atTerminal(), f.prefix+"/workspace.json") {
		t.Errorf("at the terminal event the exchange held %v; want workspace.json there already", f.stdout.atTerminal())
	}
	rec, err := workspace.ReadRecord(t.Context(), f.store, f.prefix+"/workspace.json")
	if err != nil || rec.Archive == nil || rec.Error != "" {
		t.Fatalf("workspace record = %+v, %v; want an archive", rec, err)
	}

	next := newExchangeFixture(t, "d-x-next", `test "$(cat notes.txt)" = kept; test ! -e .agora/needs_input.json`)
	next.store, next.storeDir = f.store, f.storeDir // the same storage, another prefix
	next.prefix = "exchange/" + strings.Repeat("d1", 32)
	next.stdout.store = f.store
	next.cfg.StorageURI = f.cfg.StorageURI
	next.cfg.Exchange = Exchange{Key: next.prefix, RestoreURI: rec.Archive.URI, RestoreSHA256: rec.Archive.SHA256}
	next.put(t, "spec.json", `{"dispatch_id":"d-x-next","task_id":"t-x","round":2,"subagent":{"name":"script","runtime":"exec","command":["/bin/sh","-ec","test \"$(cat notes.txt)\" = kept; test ! -e .agora/needs_input.json"]}}`)
	next.putPrivate(t, hex.EncodeToString(next.key))
	next.cfg.Environ = []string{"PATH=/usr/bin:/bin", "PRIVATE=" + next.path("private.json"), "AGORA_PASSTHROUGH_ENV=PRIVATE"}
	if res := next.run(t); res.Terminal.Kind != schemas.KindFinished {
		t.Fatalf("next round = %s %+v, want finished; stderr:\n%s", res.Terminal.Kind, res.Terminal.Failure, next.stderr.String())
	}
}

// TestExchangeFailures: what the runner left being bad fails the dispatch
// and names what was bad; no outcome leaves private.json behind.
func TestExchangeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		setup      func(t *testing.T, f *exchangeFixture)
		reason     schemas.FailureReason
		wantDetail string
		unsigned   bool
	}{
		{
			name:   "no private.json",
			setup:  func(t *testing.T, f *exchangeFixture) { _ = f.store.Delete(t.Context(), f.prefix+"/private.json") },
			reason: schemas.ReasonWorkerFailed, wantDetail: "$AGORA_EXCHANGE_KEY/private.json", unsigned: true,
		},
		{
			name:   "malformed event key",
			setup:  func(t *testing.T, f *exchangeFixture) { f.putPrivate(t, "abcd") },
			reason: schemas.ReasonWorkerFailed, wantDetail: "$AGORA_EXCHANGE_KEY/private.json: event_key", unsigned: true,
		},
		{
			name:   "malformed worker env",
			setup:  func(t *testing.T, f *exchangeFixture) { f.putPrivate(t, hex.EncodeToString(f.key), "NOEQUALS") },
			reason: schemas.ReasonWorkerFailed, wantDetail: "worker_env entry is not NAME=value", unsigned: true,
		},
		{
			name: "restore archive that does not verify",
			setup: func(t *testing.T, f *exchangeFixture) {
				f.cfg.Exchange.RestoreURI = f.store.URI("blobs/sha256/" + strings.Repeat("ab", 32))
				f.cfg.Exchange.RestoreSHA256 = strings.Repeat("ab", 32)
			},
			reason: schemas.ReasonFetchFailed, wantDetail: "restore the workspace snapshot file://",
		},
		{
			name: "snapshot without an exchange key",
			setup: func(t *testing.T, f *exchangeFixture) {
				f.cfg.SpecFile = writeSpecFromStore(t, f)
				f.cfg.Exchange = Exchange{SnapshotWorkspace: true}
			},
			reason: schemas.ReasonWorkerFailed, wantDetail: "AGORA_SNAPSHOT_WORKSPACE=true needs AGORA_EXCHANGE_KEY", unsigned: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newExchangeFixture(t, "d-x-fail", "touch ran")
			tt.setup(t, f)
			if tt.unsigned {
				f.key = bytes.Repeat([]byte{0}, schemas.EventKeyBytes) // no line verifies; check the lines are unsigned instead
			}
			res := Run(t.Context(), f.cfg)
			if res.Terminal.Kind != schemas.KindFailed || res.Terminal.Failure.Reason != tt.reason || !strings.Contains(res.Terminal.Failure.Detail, tt.wantDetail) {
				t.Fatalf("Run = %s %+v; want failed %s naming %q", res.Terminal.Kind, res.Terminal.Failure, tt.reason, tt.wantDetail)
			}
			if strings.Contains(res.Terminal.Failure.Detail, f.prefix) {
				t.Errorf("the detail %q holds the exchange prefix", res.Terminal.Failure.Detail)
			}
			if _, err := os.Stat(filepath.Join(f.cfg.Workspace, "ran")); err == nil {
				t.Error("the runtime ran")
			}
			if tt.unsigned == strings.Contains(f.stdout.buf.String(), `"mac"`) {
				t.Errorf("stdout = %s; want lines signed: %t", f.stdout.buf.String(), !tt.unsigned)
			}
			if _, err := os.Stat(f.path("private.json")); f.cfg.Exchange.Key != "" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("private.json is still in storage (%v)", err)
			}
		})
	}
}

// writeSpecFromStore copies the fixture's stored spec into a file.
func writeSpecFromStore(t *testing.T, f *exchangeFixture) string {
	t.Helper()
	data, err := os.ReadFile(f.path("spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExchangeAnswerNotFollowed: an answer.json that is a symlink (to a
// file the worker may read and the sub-agent wants out) is not copied.
func TestExchangeAnswerNotFollowed(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "worker-only")
	if err := os.WriteFile(secret, []byte(`{"leak":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, script string }{
		{"symlink", `mkdir -p .agora; ln -s "` + secret + `" .agora/answer.json`},
		{"directory", `mkdir -p .agora/answer.json`},
		{"too large", `mkdir -p .agora; head -c 70000 /dev/zero > .agora/answer.json`},
		{"absent", `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newExchangeFixture(t, "d-x-link", tt.script)
			if res := f.run(t); res.Terminal.Kind != schemas.KindFinished {
				t.Fatalf("Run = %s %+v; stderr:\n%s", res.Terminal.Kind, res.Terminal.Failure, f.stderr.String())
			}
			if _, err := os.Lstat(f.path("answer.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("answer.json was stored (%v)", err)
			}
		})
	}
}

// TestCancelCheck: a signal is a cancel only while the runner's marker
// object exists; a storage that cannot be asked says no, with the error.
func TestCancelCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := storage.Open(t.Context(), "file://"+dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	marker := "exchange/" + strings.Repeat("e2", 32) + "/cancel"
	check := CancelCheck("file://"+dir, marker)
	if ok, err := check(t.Context()); ok || err != nil {
		t.Errorf("before the marker: %t, %v; want false, nil", ok, err)
	}
	if err := store.Put(t.Context(), marker, strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if ok, err := check(t.Context()); !ok || err != nil {
		t.Errorf("with the marker: %t, %v; want true, nil", ok, err)
	}
	broken := CancelCheck("bogus://nowhere", marker)
	if ok, err := broken(t.Context()); ok || err == nil {
		t.Errorf("unreachable storage: %t, %v; want false and an error", ok, err)
	}
}

func TestExchangeFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		environ []string
		want    Exchange
		wantErr string
	}{
		{name: "none"},
		{name: "all", environ: []string{"AGORA_EXCHANGE_KEY=exchange/ab", "AGORA_CANCEL_KEY=exchange/ab/cancel",
			"AGORA_RESTORE_URI=s3://b/p/blobs/sha256/cd", "AGORA_RESTORE_SHA256=cd", "AGORA_MAX_WORKSPACE_BYTES=2048", "AGORA_SNAPSHOT_WORKSPACE=true"},
			want: Exchange{Key: "exchange/ab", CancelKey: "exchange/ab/cancel", RestoreURI: "s3://b/p/blobs/sha256/cd", RestoreSHA256: "cd", MaxWorkspaceBytes: 2048, SnapshotWorkspace: true}},
		{name: "bad numbers", environ: []string{"AGORA_MAX_WORKSPACE_BYTES=1GiB", "AGORA_SNAPSHOT_WORKSPACE=maybe"},
			wantErr: `AGORA_MAX_WORKSPACE_BYTES="1GiB": want a whole number of bytes above 0` + "\n" + `AGORA_SNAPSHOT_WORKSPACE="maybe": want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ExchangeFromEnv(tt.environ)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ExchangeFromEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestExchangeValidate(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		x       Exchange
		storage bool
		want    string
	}{
		{name: "fine", x: Exchange{Key: "exchange/ab", CancelKey: "exchange/ab/cancel", RestoreURI: "file:///s/x", RestoreSHA256: hash, SnapshotWorkspace: true}, storage: true},
		{name: "no storage", x: Exchange{Key: "exchange/ab"}, want: "AGORA_EXCHANGE_KEY needs AGORA_STORAGE_URI"},
		{name: "bad key", x: Exchange{Key: "../up"}, storage: true, want: "AGORA_EXCHANGE_KEY: "},
		{name: "bad cancel key", x: Exchange{CancelKey: "/abs"}, storage: true, want: "AGORA_CANCEL_KEY: "},
		{name: "snapshot without key", x: Exchange{SnapshotWorkspace: true}, storage: true, want: "needs AGORA_EXCHANGE_KEY"},
		{name: "restore without hash", x: Exchange{RestoreURI: "file:///s/x"}, storage: true, want: "AGORA_RESTORE_SHA256=\"\""},
		{name: "hash without restore", x: Exchange{RestoreSHA256: hash}, storage: true, want: "without AGORA_RESTORE_URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := errors.Join(tt.x.validate(tt.storage)...)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRuntimeEnvDropsInjectedSecrets: the variables ECS injects aws-sm
// values under never reach the runtime, even when passed through by name.
func TestRuntimeEnvDropsInjectedSecrets(t *testing.T) {
	t.Parallel()
	name := secrets.PrefetchedEnv("aws-sm:prod/db")
	env := runtimeEnv([]string{"PATH=/bin", name + "=v", "AGORA_PASSTHROUGH_ENV=" + name}, nil, "")
	for _, kv := range env {
		if strings.HasPrefix(kv, "AGORA_SECRET_") {
			t.Errorf("runtime env holds %s", kv)
		}
	}
}

// TestExchangeCancelledEarly: a dispatch cancelled before it began still
// takes private.json out of storage, and its cancelled event is signed.
func TestExchangeCancelledEarly(t *testing.T) {
	t.Parallel()
	f := newExchangeFixture(t, "d-x-cancel", "touch ran")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := Run(ctx, f.cfg)
	if res.Terminal.Kind != schemas.KindCancelled {
		t.Fatalf("Run = %s %+v, want cancelled", res.Terminal.Kind, res.Terminal.Failure)
	}
	if _, ok := schemas.VerifyEventLine(f.key, bytes.TrimSpace([]byte(f.stdout.buf.String()))); !ok {
		t.Errorf("the cancelled event does not verify: %s", f.stdout.buf.String())
	}
	if _, err := os.Stat(f.path("private.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private.json is still in storage (%v)", err)
	}
}

// TestExchangeDefaultMaximum: without AGORA_MAX_WORKSPACE_BYTES the bound
// is the runner's default, 1 GiB.
func TestExchangeDefaultMaximum(t *testing.T) {
	t.Parallel()
	if got := (Config{}).WithDefaults().Exchange.MaxWorkspaceBytes; got != 1<<30 {
		t.Errorf("default MaxWorkspaceBytes = %d, want %d", got, 1<<30)
	}
}
