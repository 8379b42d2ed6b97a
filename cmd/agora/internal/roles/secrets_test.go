package roles

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSecretStore(t *testing.T) {
	t.Parallel()
	s := OpenSecretStore(filepath.Join(t.TempDir(), "secrets"))

	infos, err := s.List()
	if err != nil || infos == nil || len(infos) != 0 {
		t.Fatalf("List of a store not made yet = %#v, %v; want an empty, non-nil list", infos, err)
	}
	for _, tc := range []struct {
		value        string
		wantReplaced bool
	}{{"one", false}, {"two", true}} {
		replaced, err := s.Set("github", []byte(tc.value))
		if err != nil || replaced != tc.wantReplaced {
			t.Fatalf("Set(github, %q) = %v, %v; want replaced %v", tc.value, replaced, err, tc.wantReplaced)
		}
	}
	infos, err = s.List()
	if err != nil || len(infos) != 1 || infos[0].Name != "github" || infos[0].Size != 3 {
		t.Fatalf("List = %#v, %v; want github of 3 bytes", infos, err)
	}
	if err := s.Delete("github"); err != nil {
		t.Fatalf("Delete(github): %v", err)
	}
	if err := s.Delete("github"); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("second Delete(github) = %v; want ErrNoSecret", err)
	}
	if err := ValidSecretName("no/slash"); err == nil {
		t.Error("ValidSecretName(no/slash) = nil; want why not")
	}
}

func TestInitNATSAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	made, err := InitNATSAuth(dir, []string{"r1"}, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if made.Account == "" || !slices.Contains(made.Files, made.ServerConfig) || !slices.Contains(made.Files, made.OrchestratorCreds) {
		t.Fatalf("InitNATSAuth = %+v; want the account and both the server include and the orchestrator creds among the files", made)
	}
	for _, f := range made.Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("file %s InitNATSAuth listed: %v", f, err)
		}
	}
	if !slices.Contains(made.Files, "runner-r1.creds") {
		t.Errorf("files %v lack runner-r1.creds", made.Files)
	}
}
