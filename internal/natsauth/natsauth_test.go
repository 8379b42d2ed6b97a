package natsauth_test

import (
	"os"
	"path/filepath"
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
	if len(entries) != 6 {
		t.Errorf("%d files in %s, want 6 (3 account/operator seeds, the worker signer, 2 creds)", len(entries), dir)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", e.Name(), fi.Mode(), err)
		}
	}
	creds, err := os.ReadFile(first.Path(natsauth.RunnerCredFile))
	if err != nil {
		t.Fatal(err)
	}
	second, err := natsauth.Ensure(dir)
	if err != nil {
		t.Fatalf("Ensure again: %v", err)
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
