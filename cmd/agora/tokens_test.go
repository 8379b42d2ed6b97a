package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/api"
)

// TestTokensFromFileAndEnvironment: 'agora token create' makes a strong
// secret and a tokens-file line holding only its hash; serve takes tokens
// from --tokens-file (or $AGORA_TOKENS_FILE) and $AGORA_TOKENS, so no
// secret needs to be on the command line, and the hashed line accepts the
// secret. A tokens file other users may read is refused.
func TestTokensFromFileAndEnvironment(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home}
	r := agora(t, env, "token", "create", "alice", "--role", "answerer", "-o", "json")
	var made struct {
		Name, Secret string
		Line         string `json:"tokens_file_line"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &made) != nil || !strings.HasPrefix(made.Secret, "agora_") || len(made.Secret) < 40 {
		t.Fatalf("agora token create alice: %v; want a secret and a line", r)
	}
	if strings.Contains(made.Line, made.Secret) || !strings.HasPrefix(made.Line, "alice:sha256=") || !strings.HasSuffix(made.Line, ":answerer") {
		t.Fatalf("tokens-file line %q: want alice:sha256=HEX:answerer, without the secret", made.Line)
	}
	file := filepath.Join(home, "tokens")
	if err := os.WriteFile(file, []byte("# agora tokens\n\n"+made.Line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  []string
	}{
		{"--tokens-file", []string{"--tokens-file", file}, env},
		{"$AGORA_TOKENS_FILE", nil, append([]string{"AGORA_TOKENS_FILE=" + file}, env...)},
		{"$AGORA_TOKENS", nil, append([]string{"AGORA_TOKENS=bob:b0b " + made.Line}, env...)},
	}
	for _, tt := range tests {
		f, err := parseServeFlags(tt.args, tt.env, io.Discard)
		if err != nil {
			t.Errorf("%s: parseServeFlags = %v", tt.name, err)
			continue
		}
		auth, err := api.NewAuth(f.Tokens)
		if err != nil {
			t.Fatalf("%s: NewAuth(%q) = %v", tt.name, f.Tokens, err)
		}
		srv := httptest.NewServer(auth.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), slog.New(slog.DiscardHandler)))
		for secret, want := range map[string]int{made.Secret: http.StatusOK, "guess": http.StatusUnauthorized} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/tasks", nil)
			req.Header.Set("Authorization", "Bearer "+secret)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: GET with secret %.8s…: %d, want %d", tt.name, secret, resp.StatusCode, want)
			}
		}
		srv.Close()
	}

	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	agora(t, env, "serve", "--tokens-file", file).want(t, "serve with a world-readable tokens file", 2, nil,
		[]string{"readable by other users: chmod 600 " + file})
	bad := filepath.Join(home, "bad")
	if err := os.WriteFile(bad, []byte("alice:sha256=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agora(t, env, "serve", "--tokens-file", bad).want(t, "serve with a short hash", 2, nil,
		[]string{"--tokens-file " + bad + ": line 1: sha256= must be followed by the secret's sha256 in 64 hex digits"})
	agora(t, env, "token", "create").want(t, "token create without a name", 2, nil, []string{"want one NAME"})
	agora(t, env, "token", "create", "a:b").want(t, "token create with ':' in the name", 2, nil,
		[]string{`token name "a:b": a name cannot contain ':' (it separates the name from the secret)`})
}
