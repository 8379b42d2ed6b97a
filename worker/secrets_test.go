package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/adapters"
	"github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/testutil"
	"github.com/agoradev/agora/schemas"
)

func TestBuiltinSecretsLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	files := map[string]string{
		"github":  "ghp_exact\n",
		"crlf":    "v\r\n",
		"pem":     testPEM,
		"big":     strings.Repeat("x", secrets.MaxValueBytes+1),
		"max":     strings.Repeat("x", secrets.MaxValueBytes),
		"emptyok": "",
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("not yours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	b := BuiltinSecrets{LocalDir: dir}
	for _, name := range []string{"github", "crlf", "pem", "max", "emptyok"} {
		got, err := b.Resolve(context.Background(), "local:"+name)
		if err != nil || got != files[name] {
			t.Errorf("Resolve(local:%s) = %q, %v; want the exact bytes %q", name, got, err, files[name])
		}
	}
	bad := map[string]string{
		"local:missing":   "local secret missing is not set: no " + filepath.Join(dir, "missing") + " (set it on the runner's host with `agora secret set missing`)",
		"local:big":       "larger than 65536 bytes",
		"local:escape":    "local secret escape",
		"local:adir":      "is not a regular file",
		"local:../github": `invalid secret name "../github"`,
		"local:.hidden":   "invalid secret name",
		"local:":          "invalid secret name",
	}
	for ref, want := range bad {
		got, err := b.Resolve(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %q, %v; want an error containing %q", ref, got, err, want)
		}
	}
	// No directory at all: the runner mounted none.
	none := BuiltinSecrets{LocalDir: filepath.Join(dir, "nope")}
	if _, err := none.Resolve(context.Background(), "local:github"); err == nil || !strings.Contains(err.Error(), "no secrets directory") {
		t.Errorf("Resolve with no secrets dir = %v, want an error saying there is none", err)
	}
	// The default directory is the container's mount point.
	if _, err := (BuiltinSecrets{}).Resolve(context.Background(), "local:x"); err == nil || !strings.Contains(err.Error(), DefaultSecretsDir) {
		t.Errorf("Resolve with the default dir = %v, want it to name %s", err, DefaultSecretsDir)
	}
	// aws-sm without a resolver, and schemes nobody knows.
	for ref, want := range map[string]string{
		"aws-sm:x":   "aws-sm refs are not enabled",
		"vault:x":    `unsupported secret ref scheme "vault" (want env, file, local or aws-sm)`,
		"no-scheme":  "has no scheme",
		"LOCAL:x":    `unsupported secret ref scheme "LOCAL"`,
		"local-x:ab": `unsupported secret ref scheme "local-x"`,
	} {
		if _, err := b.Resolve(context.Background(), ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%q) = %v, want an error containing %q", ref, err, want)
		}
	}
}

// TestFetchEnvAllSchemes resolves one bundle with every scheme, the AWS one
// against the loopback contract server.
func TestFetchEnvAllSchemes(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"pa55-w0rd-aws"}`)}, "nul": {Binary: []byte("a\x00b")}})
	localDir := t.TempDir()
	if err := secrets.Open(localDir).Set("github", []byte("ghp_local_0123456789\n")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(file, []byte("123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := srv.Environ("WORKER_SSH_KEY=" + testPEM)
	cfg := Config{Environ: environ, SecretsDir: localDir, Logger: natstest.Logger(t)}.WithDefaults()
	store := testStore(t)
	ref := putBundle(t, store, "all", `{"values":{"PLAIN":"1"},"secrets":{
		"GITHUB_TOKEN":"local:github","DB_PASSWORD":"aws-sm:prod/db#password","SSH_KEY":"env:WORKER_SSH_KEY","PIN":"file:`+file+`"}}`)
	env, got, err := fetchEnv(context.Background(), store, []schemas.BundleRef{ref}, cfg.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PLAIN=1", "DB_PASSWORD=pa55-w0rd-aws", "GITHUB_TOKEN=ghp_local_0123456789\n", "PIN=123", "SSH_KEY=" + testPEM}
	if strings.Join(env, "|") != strings.Join(want, "|") {
		t.Errorf("fetchEnv env = %q\nwant %q", env, want)
	}
	if len(got) != 4 || got[0].Name != "DB_PASSWORD" || got[1].Value != "ghp_local_0123456789\n" {
		t.Errorf("fetchEnv secrets = %d, want the 4 resolved with their names", len(got))
	}

	// A value no environment variable can hold.
	ref = putBundle(t, store, "nul", `{"secrets":{"BIN":"aws-sm:nul"}}`)
	_, _, err = fetchEnv(context.Background(), store, []schemas.BundleRef{ref}, cfg.Secrets)
	wantOutcome(t, "fetchEnv(NUL)", err, schemas.ReasonFetchFailed, "secret BIN", `ref "aws-sm:nul"`, "NUL byte")
	// A missing local secret is fetch-failed and names it.
	ref = putBundle(t, store, "missing", `{"secrets":{"TOKEN":"local:nope"}}`)
	_, _, err = fetchEnv(context.Background(), store, []schemas.BundleRef{ref}, cfg.Secrets)
	wantOutcome(t, "fetchEnv(local:nope)", err, schemas.ReasonFetchFailed, "env bundle missing", "secret TOKEN", `ref "local:nope"`, "local secret nope is not set")
	// So is a missing AWS secret.
	ref = putBundle(t, store, "aws-missing", `{"secrets":{"TOKEN":"aws-sm:prod/gone"}}`)
	_, _, err = fetchEnv(context.Background(), store, []schemas.BundleRef{ref}, cfg.Secrets)
	wantOutcome(t, "fetchEnv(aws-sm:prod/gone)", err, schemas.ReasonFetchFailed, "secret TOKEN", "has no secret prod/gone", "ResourceNotFound")
}

// TestRunRedactsSecrets runs a whole dispatch whose runtime prints its
// secrets every way it can, then asks a question that holds them: the
// runtime got every value exactly, and neither stderr, the logs nor the
// events hold one.
func TestRunRedactsSecrets(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"pa55-w0rd-aws"}`)}})
	localDir := t.TempDir()
	if err := secrets.Open(localDir).Set("github", []byte("ghp_local_0123456789\n")); err != nil {
		t.Fatal(err)
	}
	pinFile := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(pinFile, []byte("123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	storeDir := t.TempDir()
	store, err := storage.Open(context.Background(), "file://"+storeDir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := putBundle(t, store, "creds", `{"secrets":{"GITHUB_TOKEN":"local:github","DB_PASSWORD":"aws-sm:prod/db#password",
		"SSH_KEY":"env:WORKER_SSH_KEY","PIN":"file:`+pinFile+`"}}`)
	script := `
printf '%s' "$GITHUB_TOKEN" > got_github; printf '%s' "$DB_PASSWORD" > got_db; printf '%s' "$SSH_KEY" > got_ssh
echo "token: $GITHUB_TOKEN"
echo "db: $DB_PASSWORD" >&2
printf 'split: %s' "${DB_PASSWORD%????????}"; sleep 0.2; printf '%s end\n' "${DB_PASSWORD#?????}"
echo "$SSH_KEY"
printf 'no newline at exit: %s' "$DB_PASSWORD"
mkdir -p .agora
printf '{"question":"Use %s?","options":["yes","%s"],"context":"pw %s","partial_state":{"db":"%s","n":7}}' \
  "$(printf %s "$GITHUB_TOKEN")" "$DB_PASSWORD" "$DB_PASSWORD" "$DB_PASSWORD" > .agora/needs_input.json
`
	id := "d-redact"
	spec := &schemas.DispatchSpec{DispatchID: id, TaskID: "t-" + id, Round: 1,
		Subagent: schemas.Subagent{Name: "leaky", Runtime: schemas.RuntimeExec, Command: []string{"/bin/sh", "-c", script}},
		Env:      []schemas.BundleRef{ref}}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, schemas.SetupScript), []byte(`echo "setup sees $GITHUB_TOKEN"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr, logs testutil.Buffer
	res := Run(context.Background(), Config{
		DispatchID: id, SpecFile: writeSpec(t, t.TempDir(), spec), StorageURI: "file://" + storeDir,
		Workspace: ws, SecretsDir: localDir, Grace: time.Second,
		Environ:  srv.Environ("PATH=/usr/bin:/bin", "WORKER_SSH_KEY="+testPEM),
		Adapters: []adapters.Adapter{exec.New()},
		Stdout:   &stdout, Stderr: &stderr,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if res.Terminal.Kind != schemas.KindNeedsInput {
		t.Fatalf("Run = %s (%+v), want %s; stderr:\n%s", res.Terminal.Kind, res.Terminal.Failure, schemas.KindNeedsInput, stderr.String())
	}
	// The runtime saw the exact values.
	for file, want := range map[string]string{"got_github": "ghp_local_0123456789\n", "got_db": "pa55-w0rd-aws", "got_ssh": testPEM} {
		got, err := os.ReadFile(filepath.Join(ws, file))
		if err != nil || string(got) != want {
			t.Errorf("runtime's %s = %q, %v; want %q", file, got, err, want)
		}
	}
	leaks := []string{"ghp_local", "pa55-w0rd", "b3BlbnNza", "QyNTUxOQ"}
	for what, out := range map[string]string{"stderr": stderr.String(), "stdout (events)": stdout.String(), "logs": logs.String()} {
		for _, l := range leaks {
			if strings.Contains(out, l) {
				t.Errorf("%s holds the secret %q:\n%s", what, l, out)
			}
		}
	}
	for _, want := range []string{
		"setup sees [REDACTED:GITHUB_TOKEN]\n",
		"token: [REDACTED:GITHUB_TOKEN]\n",
		"db: [REDACTED:DB_PASSWORD]\n",
		"split: [REDACTED:DB_PASSWORD] end\n",
		"[REDACTED:SSH_KEY]\n\n",
		"no newline at exit: [REDACTED:DB_PASSWORD]",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	q := res.Terminal.NeedsInput
	data, _ := json.Marshal(q)
	if wantQ := `{"question":"Use [REDACTED:GITHUB_TOKEN]?","options":["yes","[REDACTED:DB_PASSWORD]"],"context":"pw [REDACTED:DB_PASSWORD]","partial_state":{"db":"[REDACTED:DB_PASSWORD]","n":7}}`; string(data) != wantQ {
		t.Errorf("needs_input = %s\nwant %s", data, wantQ)
	}
	// The short secret is not redacted, and the warning names it, not its value.
	if !strings.Contains(logs.String(), `msg="secret is too short to be redacted from output" dispatch_id=d-redact task_id=t-d-redact round=1 secret=PIN min_bytes=4`) {
		t.Errorf("logs lack the short-secret warning naming PIN:\n%s", logs.String())
	}
}

// TestFailedDetailRedacted: a failure detail that quotes a secret (a
// runtime's error message, say) is redacted in the event.
func TestFailedDetailRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor()
	r.add("TOKEN", "ghp_abcdef123456")
	w := &run{cfg: Config{DispatchID: "d-1"}.WithDefaults(), redact: r}
	ev := w.failed(workerFailed("setup printed ghp_abcdef123456 and died"), ExitFailed)
	if ev.Failure.Detail != "setup printed [REDACTED:TOKEN] and died" || ev.Failure.Reason != schemas.ReasonWorkerFailed {
		t.Errorf("failed detail = %q (%s)", ev.Failure.Detail, ev.Failure.Reason)
	}
}

// TestPrefetchedAWSSecrets: a value (or the reason it could not be had) the
// runner left in the secrets directory wins; without one the worker asks
// AWS itself, as it does when it runs on its own in a CI job.
func TestPrefetchedAWSSecrets(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"from-aws"}`)}})
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	write(secrets.PrefetchedName("aws-sm:prod/db#password"), "from-the-runner")
	write(secrets.PrefetchedName("aws-sm:prod/gone")+secrets.PrefetchedErrorSuffix, "AWS Secrets Manager (region x) has no secret prod/gone\n")
	cfg := Config{Environ: srv.Environ(), SecretsDir: dir, Logger: natstest.Logger(t)}.WithDefaults()
	ctx := context.Background()
	if v, err := cfg.Secrets.Resolve(ctx, "aws-sm:prod/db#password"); err != nil || v != "from-the-runner" {
		t.Errorf("prefetched = %q, %v; want the runner's value", v, err)
	}
	if _, err := cfg.Secrets.Resolve(ctx, "aws-sm:prod/gone"); err == nil || !strings.Contains(err.Error(), "the runner could not resolve it on its host: AWS Secrets Manager (region x) has no secret prod/gone") {
		t.Errorf("prefetch error = %v", err)
	}
	if srv.Calls.Load() != 0 {
		t.Errorf("the worker asked AWS %d times for prefetched refs", srv.Calls.Load())
	}
	if v, err := cfg.Secrets.Resolve(ctx, "aws-sm:prod/db"); err != nil || v != `{"password":"from-aws"}` {
		t.Errorf("not prefetched = %q, %v; want AWS's value", v, err)
	}
}
