package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withWorkerEnv takes the operator's values from the file, deletes it, and
// never lets them override the runner's wiring.
func TestWithWorkerEnv(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "worker.env")
	if err := os.WriteFile(path, []byte("SECRET_X=a=b\x00MULTI=line1\nline2\x00AGORA_DISPATCH_ID=forged\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := withWorkerEnv([]string{"AGORA_DISPATCH_ID=d-1", "AGORA_WORKER_ENV_FILE=" + path})
	if err != nil {
		t.Fatalf("withWorkerEnv: %v", err)
	}
	want := []string{"AGORA_DISPATCH_ID=d-1", "AGORA_WORKER_ENV_FILE=" + path, "SECRET_X=a=b", "MULTI=line1\nline2"}
	if !slices.Equal(env, want) {
		t.Errorf("withWorkerEnv = %q, want %q", env, want)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file is still there: %v", err)
	}
	if _, err := withWorkerEnv([]string{"AGORA_WORKER_ENV_FILE=" + path}); err == nil || !strings.Contains(err.Error(), "AGORA_WORKER_ENV_FILE") {
		t.Errorf("withWorkerEnv of a missing file: %v, want an error naming the variable", err)
	}
	if env, err := withWorkerEnv([]string{"A=1"}); err != nil || !slices.Equal(env, []string{"A=1"}) {
		t.Errorf("withWorkerEnv without a file = %q, %v", env, err)
	}
}
