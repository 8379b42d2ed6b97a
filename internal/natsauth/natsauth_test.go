package natsauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/agoradev/agora/internal/natsauth"
)

// TestEnsureKeepsIdentities: the first start makes 0600 files in a 0700
// directory; the next start finds the same accounts and credentials.
func TestEnsureKeepsIdentities(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	first, err := natsauth.Ensure(dir)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("Stat(%s) = %v, %v; want mode 0700", dir, fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 5 {
		t.Errorf("%d files in %s, want 5 (3 account/operator seeds, the worker signer, the orchestrator's creds)", len(entries), dir)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", e.Name(), fi.Mode(), err)
		}
	}
	if _, err := first.RunnerCreds("r1", natsauth.RunnerCredFile); err != nil {
		t.Fatal(err)
	}
	creds, err := os.ReadFile(first.Path(natsauth.RunnerCredFile))
	if err != nil {
		t.Fatal(err)
	}
	second, err := natsauth.Ensure(dir)
	if err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	if _, err := second.RunnerCreds("r1", natsauth.RunnerCredFile); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(second.Path(natsauth.RunnerCredFile))
	if second.Account != first.Account || second.SystemAccount != first.SystemAccount || string(again) != string(creds) {
		t.Fatal("Ensure again made new identities, want the kept ones")
	}
	if acc, err := natsauth.CredsAccount(first.Path(natsauth.RunnerCredFile)); err != nil || acc != first.Account {
		t.Fatalf("CredsAccount(runner) = %q, %v; want %q", acc, err, first.Account)
	}
}

// TestWorkerCredentials: a worker's user is named after its dispatch,
// signed by the scoped key for the account, without permissions of its own
// (the scope's apply), and expires when asked.
func TestWorkerCredentials(t *testing.T) {
	t.Parallel()
	ids, err := natsauth.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ids.LoadSigner()
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	creds, err := s.Worker("d-1", exp)
	if err != nil {
		t.Fatalf("Worker: %v", err)
	}
	tok, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	if uc.Name != "d-1" || uc.IssuerAccount != ids.Account || uc.Expires != exp.Unix() || !uc.HasEmptyPermissions() {
		t.Fatalf("worker claims: name %q, issuer account %q, expires %d, empty permissions %v; want d-1, %s, %d, true",
			uc.Name, uc.IssuerAccount, uc.Expires, uc.HasEmptyPermissions(), ids.Account, exp.Unix())
	}
	for _, bad := range []string{"", "a.b", "a*", ">"} {
		if _, err := s.Worker(bad, exp); err == nil {
			t.Errorf("Worker(%q) succeeded, want an error", bad)
		}
	}
}

// userClaims decodes the user JWT of a creds file.
func userClaims(t *testing.T, path string) *jwt.UserClaims {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	return uc
}

// TestRunnerCreds: a runner's user is named after it, may publish events
// only on its own subject and read no orchestrator bucket; asked again for
// another id it keeps its key and takes that id's permissions.
func TestRunnerCreds(t *testing.T) {
	t.Parallel()
	ids, err := natsauth.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path, err := ids.RunnerCreds("host1.example.com", "r.creds")
	if err != nil {
		t.Fatalf("RunnerCreds: %v", err)
	}
	uc := userClaims(t, path)
	if uc.Name != "host1.example.com" || uc.Issuer != ids.Account {
		t.Errorf("runner user: name %q issuer %q; want host1.example.com, %s", uc.Name, uc.Issuer, ids.Account)
	}
	for _, want := range []string{"agora.events.*.host1.example.com", "$KV.agora_claims.>", "agora.logs.*"} {
		if !uc.Pub.Allow.Contains(want) {
			t.Errorf("runner may not publish %s; want allowed (allow %v)", want, uc.Pub.Allow)
		}
	}
	for _, s := range uc.Pub.Allow {
		if strings.Contains(s, "agora_tasks") || s == "agora.events.>" || s == ">" || s == "$JS.API.>" {
			t.Errorf("runner may publish %s; want it not allowed", s)
		}
	}
	if len(uc.Sub.Allow) != 1 || uc.Sub.Allow[0] != "_AGORA_RUNNER.host1.example.com.>" {
		t.Errorf("runner subscribe allow = %v; want only its own inbox", uc.Sub.Allow)
	}
	if err := natsauth.CheckRunnerCreds(path, "host1.example.com"); err != nil {
		t.Errorf("CheckRunnerCreds(own id) = %v", err)
	}
	if err := natsauth.CheckRunnerCreds(path, "host2"); err == nil || !strings.Contains(err.Error(), "host1.example.com") {
		t.Errorf("CheckRunnerCreds(other id) = %v; want an error naming the creds' runner", err)
	}
	if err := natsauth.CheckRunnerCreds(ids.Path(natsauth.OrchestratorCredFile), "host2"); err != nil {
		t.Errorf("CheckRunnerCreds(an unrestricted user) = %v; want nil", err)
	}
	before, _ := os.ReadFile(path)
	if _, err := ids.RunnerCreds("host1.example.com", "r.creds"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("RunnerCreds with the same id rewrote the file; want it kept")
	}
	if _, err := ids.RunnerCreds("host2", "r.creds"); err != nil {
		t.Fatal(err)
	}
	if uc2 := userClaims(t, path); uc2.Subject != uc.Subject || uc2.Name != "host2" || !uc2.Pub.Allow.Contains("agora.events.*.host2") {
		t.Errorf("RunnerCreds(host2) on the same file: key %s name %q; want key %s kept, name host2 and its subject", uc2.Subject, uc2.Name, uc.Subject)
	}
	for _, bad := range []string{"", "a*", "a b", ".a", "a..b", "a."} {
		if _, err := ids.RunnerCreds(bad, "bad.creds"); err == nil {
			t.Errorf("RunnerCreds(%q) succeeded; want an error", bad)
		}
	}
}

// TestInit: nats-auth init's directory holds the server include, the
// orchestrator's and each runner's creds and the worker signer, 0600 in
// 0700; run again it keeps every key and adds runners.
func TestInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nats-auth")
	ids, files, err := natsauth.Init(dir, []string{"r1"}, natsauth.Limits{DiskStorage: 1 << 30})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	want := []string{natsauth.ServerConfigFile, natsauth.OrchestratorCredFile, "runner-r1.creds", natsauth.WorkerSignerFile}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("Init files = %v; want %v", files, want)
	}
	conf, err := os.ReadFile(ids.Path(natsauth.ServerConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"operator: \"" + ids.OperatorJWT + "\"", "system_account: " + ids.SystemAccount, "resolver: MEMORY", ids.Account + ": \""} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("%s lacks %.60s…:\n%s", natsauth.ServerConfigFile, want, conf)
		}
	}
	ac, err := jwt.DecodeAccountClaims(ids.AccountJWTs[ids.Account])
	if err != nil {
		t.Fatal(err)
	}
	if ac.Limits.JetStreamLimits.DiskStorage != 1<<30 || ac.Limits.JetStreamLimits.MemoryStorage != jwt.NoLimit {
		t.Errorf("account JetStream limits = %+v; want disk 1 GiB, memory unlimited", ac.Limits.JetStreamLimits)
	}
	orch, _ := os.ReadFile(ids.Path(natsauth.OrchestratorCredFile))
	again, files, err := natsauth.Init(dir, []string{"r1", "r2"}, natsauth.Limits{})
	if err != nil {
		t.Fatalf("Init again: %v", err)
	}
	if again.Account != ids.Account || len(files) != 5 {
		t.Errorf("Init again: account %s, files %v; want the same account and r2 added", again.Account, files)
	}
	if o, _ := os.ReadFile(ids.Path(natsauth.OrchestratorCredFile)); string(o) != string(orch) {
		t.Error("Init again rewrote the orchestrator's credentials; want them kept")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, %v; want 0700", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v; want 0600", e.Name(), fi.Mode())
		}
	}
}
