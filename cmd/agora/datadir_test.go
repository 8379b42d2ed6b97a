package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgoraDataDir: AGORA_DATA_DIR moves the default data directory of
// serve, secret and runner together, so `agora secret set` writes where
// `agora serve` reads; --secrets-dir names the store itself.
func TestAgoraDataDir(t *testing.T) {
	t.Parallel()
	data, home := t.TempDir(), t.TempDir()
	environ := []string{"HOME=" + home, "AGORA_DATA_DIR=" + data}

	if code, stdout, stderr := secretCLI(t, environ, "v4lue", "set", "db"); code != 0 || !strings.Contains(stdout, filepath.Join(data, "secrets")) {
		t.Fatalf("AGORA_DATA_DIR=%s agora secret set db = %d %q %q; want it in %s/secrets", data, code, stdout, stderr, data)
	}
	if _, err := os.Stat(filepath.Join(data, "secrets", "db")); err != nil {
		t.Errorf("secret not under AGORA_DATA_DIR: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".agora")); err == nil {
		t.Errorf("agora secret set wrote to ~/.agora with AGORA_DATA_DIR set")
	}
	s, err := parseServeFlags(nil, environ, &bytes.Buffer{})
	if err != nil || s.DataDir != data || s.WithDefaults().SecretsDir != filepath.Join(data, "secrets") {
		t.Errorf("AGORA_DATA_DIR=%s agora serve: data dir %q, secrets dir %q, %v; want %s and its secrets/", data, s.DataDir, s.WithDefaults().SecretsDir, err, data)
	}
	r, err := parseRunnerFlags([]string{"--nats", "nats://127.0.0.1:4222"}, environ, &bytes.Buffer{})
	if err != nil || r.DataDir != filepath.Join(data, "runner") || r.SecretsDir != filepath.Join(data, "secrets") {
		t.Errorf("AGORA_DATA_DIR=%s agora runner: data dir %q, secrets dir %q, %v; want %s/runner and %s/secrets", data, r.DataDir, r.SecretsDir, err, data, data)
	}
	// The flag still wins over the variable.
	other := t.TempDir()
	if s, err := parseServeFlags([]string{"--data-dir", other}, environ, &bytes.Buffer{}); err != nil || s.DataDir != other {
		t.Errorf("agora serve --data-dir %s with AGORA_DATA_DIR: data dir %q, %v", other, s.DataDir, err)
	}

	// --secrets-dir: the store itself, as serve's and runner's flag.
	store := filepath.Join(t.TempDir(), "store")
	if code, _, stderr := secretCLI(t, environ, "v4lue", "set", "api", "--secrets-dir", store); code != 0 {
		t.Fatalf("agora secret set --secrets-dir = %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(store, "api")); err != nil {
		t.Errorf("secret not in --secrets-dir: %v", err)
	}
	if code, stdout, _ := secretCLI(t, environ, "", "list", "--secrets-dir", store); code != 0 || !strings.Contains(stdout, "api") || strings.Contains(stdout, "db") {
		t.Errorf("agora secret list --secrets-dir = %d %q; want api only", code, stdout)
	}
	if code, _, stderr := secretCLI(t, environ, "v4lue", "set", "x", "--secrets-dir", store, "--data-dir", other); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("agora secret set --secrets-dir --data-dir = %d %q; want 2", code, stderr)
	}
	if code, _, stderr := secretCLI(t, nil, "v4lue", "set", "x"); code != 2 || !strings.Contains(stderr, "set AGORA_DATA_DIR") {
		t.Errorf("agora secret set without HOME = %d %q; want 2 naming AGORA_DATA_DIR", code, stderr)
	}
}
