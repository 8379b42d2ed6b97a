package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

// putEnvBundle stores an env bundle content-addressed and returns its ref.
func putEnvBundle(t *testing.T, store storage.Store, name, data string) schemas.BundleRef {
	t.Helper()
	_, ref, err := storage.PutBlob(context.Background(), store, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return schemas.BundleRef{Name: name, SHA256: ref.SHA256}
}

// secretStore is a local secret store in a temp dir holding values.
func secretStore(t *testing.T, values map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "secrets")
	s := secrets.Open(dir)
	for name, v := range values {
		if err := s.Set(name, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBundleRefs(t *testing.T) {
	t.Parallel()
	store, err := storage.Open(context.Background(), "file://"+t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{cfg: Config{Store: store}}
	one := putEnvBundle(t, store, "one", `{"values":{"A":"1"},"secrets":{"X":"local:github","Y":"env:HOST_TOKEN","Z":"local:db"}}`)
	two := putEnvBundle(t, store, "two", `{"secrets":{"X":"local:github","W":"aws-sm:prod/db#password"}}`)
	broken := putEnvBundle(t, store, "broken", `{"secrets":`)
	tampered := one
	tampered.SHA256 = strings.Repeat("0", 64)
	withURI := two
	withURI.URI = store.URI(storage.BlobKey(two.SHA256))

	tests := []struct {
		name  string
		refs  []schemas.BundleRef
		local []string
		aws   []string
	}{
		{"none", nil, nil, nil},
		{"local only", []schemas.BundleRef{one}, []string{"db", "github"}, nil},
		{"local and aws, deduplicated", []schemas.BundleRef{one, two}, []string{"db", "github"}, []string{"aws-sm:prod/db#password"}},
		{"by uri", []schemas.BundleRef{withURI}, []string{"github"}, []string{"aws-sm:prod/db#password"}},
		// What the runner cannot read it skips: the worker reports it.
		{"unreadable bundles skipped", []schemas.BundleRef{broken, tampered, two}, []string{"github"}, []string{"aws-sm:prod/db#password"}},
	}
	for _, tt := range tests {
		local, aws := r.bundleRefs(context.Background(), &schemas.DispatchSpec{Env: tt.refs}, natstest.Logger(t))
		if !slices.Equal(local, tt.local) || !slices.Equal(aws, tt.aws) {
			t.Errorf("%s: bundleRefs = %q, %v; want %q, %v", tt.name, local, aws, tt.local, tt.aws)
		}
	}
}

// TestMaterialiseSecrets: the files are written exactly, owned by the
// container's user and readable by nobody else; the dir is removed whole.
func TestMaterialiseSecrets(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dispatch-secrets", "d-1")
	if err := materialiseSecrets([]secretFile{{"db", []byte("db-value")}, {"github", []byte("ghp_value\n")}}, dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "db,github" {
		t.Errorf("copied %v, want only db and github", names)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "github")); string(got) != "ghp_value\n" {
		t.Errorf("copied github = %q, want the exact bytes", got)
	}
	root := os.Geteuid() == 0
	fi, _ := os.Stat(dir)
	wantDir, wantFile := fs.FileMode(0o555), fs.FileMode(0o444)
	if root {
		wantDir, wantFile = 0o500, 0o400
	}
	if fi.Mode().Perm() != wantDir {
		t.Errorf("dir mode = %v, want %v", fi.Mode().Perm(), wantDir)
	}
	ffi, _ := os.Stat(filepath.Join(dir, "github"))
	if ffi.Mode().Perm() != wantFile {
		t.Errorf("file mode = %v, want %v", ffi.Mode().Perm(), wantFile)
	}
	if root {
		for _, f := range []fs.FileInfo{fi, ffi} {
			if st := f.Sys().(*syscall.Stat_t); st.Uid != containerUID || st.Gid != containerUID {
				t.Errorf("%s owned by %d:%d, want %d:%d", f.Name(), st.Uid, st.Gid, containerUID, containerUID)
			}
		}
	}
	if pfi, _ := os.Stat(filepath.Dir(dir)); pfi.Mode().Perm() != 0o700 {
		t.Errorf("parent mode = %v, want 0700", pfi.Mode().Perm())
	}
	// Copying again replaces the dir.
	if err := materialiseSecrets([]secretFile{{"db", []byte("db-value")}}, dir); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("second copy left %d files, want 1", len(entries))
	}
	if err := removeSecretsDir(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after removeSecretsDir: %v", err)
	}
	if err := removeSecretsDir(dir); err != nil {
		t.Errorf("removeSecretsDir of a missing dir = %v", err)
	}
}

// TestLocalSecretsInContainer: a sub-agent gets a local: secret in its
// environment and sees it, alone, in a read-only mount; it prints it and the
// stored output holds [REDACTED:TOKEN] instead. Afterwards the secrets dir
// is gone. A missing secret ends fetch-failed, naming it.
func TestLocalSecretsInContainer(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t-from-the-store\n"
	sum := sha256.Sum256([]byte(value))
	h := newHarness(t, func(c *Config) {
		c.SecretsDir = secretStore(t, map[string]string{"token": value, "other": "not-for-this-dispatch"})
	})
	h.start()

	req := request(`set -u
test "$(printf '%s' "$TOKEN" | sha256sum | cut -d' ' -f1)" = ` + hex.EncodeToString(sum[:]) + ` || { echo "TOKEN differs" >&2; exit 3; }
test "$(ls /run/agora/secrets)" = token || { echo "mount holds: $(ls /run/agora/secrets)" >&2; exit 4; }
touch /run/agora/secrets/new 2>/dev/null && { echo "mount is writable" >&2; exit 5; }
echo "modes $(stat -c %a:%u /run/agora/secrets) $(stat -c %a:%u /run/agora/secrets/token)"
echo "the token is $TOKEN"
printf 'inline %s.\n' "$(cat /run/agora/secrets/token)"`)
	req.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"TOKEN":"local:token"}}`)}
	h.enqueue(req)
	id := req.Spec.DispatchID
	ev := h.terminal(id, 2*time.Minute)
	// Gone before the outcome is published.
	if _, err := os.Stat(filepath.Join(h.cfg.DataDir, "dispatch-secrets", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("secrets dir when the terminal event is out: %v, want it gone", err)
	}
	out := h.output(id)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("dispatch ended %s %+v; output:\n%s", ev.Kind, ev.Failure, out)
	}
	h.settled(id)
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("stored output holds the secret:\n%s", out)
	}
	for _, want := range []string{"the token is [REDACTED:TOKEN]\n", "inline [REDACTED:TOKEN].\n", "modes 500:65532 400:65532\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stored output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(h.cfg.DataDir, "dispatch-secrets", id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("secrets dir after the dispatch: %v, want it gone", err)
	}

	missing := request(`echo "should not run"`)
	missing.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"TOKEN":"local:token","API_KEY":"local:nope"}}`)}
	h.enqueue(missing)
	ev = h.terminal(missing.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonFetchFailed || !strings.Contains(ev.Failure.Detail, "local secret nope is not set") ||
		!strings.Contains(ev.Failure.Detail, "secret API_KEY") {
		t.Errorf("dispatch with a missing secret ended %s %+v; want fetch-failed naming nope", ev.Kind, ev.Failure)
	}
	h.settled(missing.Spec.DispatchID)
	if strings.Contains(h.output(missing.Spec.DispatchID), "should not run") {
		t.Error("the sub-agent ran without its secret")
	}
	if entries, _ := os.ReadDir(filepath.Join(h.cfg.DataDir, "dispatch-secrets")); len(entries) != 0 {
		t.Errorf("secrets dirs left: %v", entries)
	}
}

// TestSecretsRemovedAfterAdoption: a runner that stops while a dispatch
// with secrets runs leaves them mounted; the runner that adopts the
// container removes them when it settles it.
func TestSecretsRemovedAfterAdoption(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.SecretsDir = secretStore(t, map[string]string{"token": "adopted-secret"}) })
	first := h.start()
	req := request(`touch /workspace/ready; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo "still $TOKEN"`)
	req.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"TOKEN":"local:token"}}`)}
	h.enqueue(req)
	id := req.Spec.DispatchID
	ws := h.awaitReady(id)
	secretsDir := filepath.Join(h.cfg.DataDir, "dispatch-secrets", id)
	h.stop(first)
	if _, err := os.Stat(filepath.Join(secretsDir, "token")); err != nil {
		t.Fatalf("secrets of the running container after its runner stopped: %v", err)
	}
	second := h.start()
	testutil.Eventually(t, time.Minute, "the second runner to adopt", func() bool { return second.lookup(id) != nil })
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := h.terminal(id, 2*time.Minute); ev.Kind != schemas.KindFinished {
		t.Fatalf("adopted dispatch ended %s %+v", ev.Kind, ev.Failure)
	}
	h.settled(id)
	if out := h.output(id); !strings.Contains(out, "still [REDACTED:TOKEN]") || strings.Contains(out, "adopted-secret") {
		t.Errorf("output = %q", out)
	}
	if _, err := os.Stat(secretsDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("secrets dir after the adopted dispatch settled: %v, want it gone", err)
	}
}

// TestSweepSecrets: at start, a secrets dir whose dispatch has no container
// (a runner that died between copying and creating) is removed.
func TestSweepSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.SecretsDir = secretStore(t, map[string]string{"token": "swept"}) })
	stale := filepath.Join(h.cfg.DataDir, "dispatch-secrets", "d-gone")
	if err := materialiseSecrets([]secretFile{{"token", []byte("stale-value")}}, stale); err != nil {
		t.Fatal(err)
	}
	h.start()
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale secrets dir after start: %v, want it removed", err)
	}
}

// TestAWSSecretsInContainer: the runner resolves a dispatch's aws-sm: refs
// on its host, against a loopback server holding the recorded
// GetSecretValue contract (AWS itself cannot be reached from here), and the
// worker in a container without a network gets the value from the mounted
// secrets — while no AWS variable is in any process of the container. A
// secret the runner cannot resolve fails the dispatch naming it.
func TestAWSSecretsInContainer(t *testing.T) {
	t.Parallel()
	sm := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"aws-db-password"}`)}})
	h := newHarness(t, func(c *Config) { c.AWSEnv = sm.Environ() })
	h.start()

	req := request(`cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^AWS_' && exit 9
test "$DB_PASSWORD" = aws-db-password || exit 3; echo "db password: $DB_PASSWORD"`)
	req.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "creds", `{"secrets":{"DB_PASSWORD":"aws-sm:prod/db#password"}}`)}
	h.enqueue(req)
	ev := h.terminal(req.Spec.DispatchID, 2*time.Minute)
	out := h.output(req.Spec.DispatchID)
	if ev.Kind != schemas.KindFinished {
		t.Fatalf("dispatch ended %s %+v (exit 9: AWS variables in the container); output:\n%s", ev.Kind, ev.Failure, out)
	}
	if !strings.Contains(out, "db password: [REDACTED:DB_PASSWORD]") || strings.Contains(out, "aws-db-password") {
		t.Errorf("stored output = %q", out)
	}
	if ids := sm.IDs(); len(ids) != 1 || ids[0] != "prod/db" {
		t.Errorf("GetSecretValue calls = %v; want one, from the runner", ids)
	}
	h.settled(req.Spec.DispatchID)

	gone := request(`echo "should not run"`)
	gone.Spec.Env = []schemas.BundleRef{putEnvBundle(t, h.store, "gone", `{"secrets":{"TOKEN":"aws-sm:prod/gone"}}`)}
	h.enqueue(gone)
	ev = h.terminal(gone.Spec.DispatchID, 2*time.Minute)
	if ev.Kind != schemas.KindFailed || ev.Failure.Reason != schemas.ReasonFetchFailed ||
		!strings.Contains(ev.Failure.Detail, `secret TOKEN (ref "aws-sm:prod/gone")`) || !strings.Contains(ev.Failure.Detail, "the runner could not resolve it on its host") ||
		!strings.Contains(ev.Failure.Detail, "has no secret prod/gone") {
		t.Errorf("dispatch with a missing aws secret = %s %+v; want fetch-failed naming it", ev.Kind, ev.Failure)
	}
	h.settled(gone.Spec.DispatchID)
}
