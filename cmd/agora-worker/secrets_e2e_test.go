package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/schemas"
)

// smStub answers GetSecretValue in the AWS JSON 1.1 protocol on loopback
// (the full recorded contract, signature included, is checked in the
// worker package's tests). AWS itself cannot be reached from here.
func smStub(t *testing.T, values map[string]string, hang <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // so a closed connection cancels r.Context()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
			http.Error(w, "not a signed GetSecretValue", http.StatusBadRequest)
			return
		}
		var in struct{ SecretId string }
		_ = json.Unmarshal(body, &in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		v, ok := values[in.SecretId]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:1:secret:" + in.SecretId, "Name": in.SecretId, "SecretString": v})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func awsEnv(url string) []string {
	return []string{"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + url, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=test-secret-key"}
}

// TestSecretRefs: the worker binary resolves local: refs from
// AGORA_SECRETS_DIR and aws-sm: refs through the AWS variables, the runtime
// gets the values, and the worker's output holds none of them.
func TestSecretRefs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	if err := secrets.Open(dir).Set("github", []byte("ghp_e2e_local_value\n")); err != nil {
		t.Fatal(err)
	}
	sm := smStub(t, map[string]string{"prod/db": `{"password":"db-e2e-password"}`}, nil)
	// The local value arrives byte for byte, its trailing newline included.
	spec := e.spec(`test "${#GITHUB_TOKEN}" = 20 && test "${GITHUB_TOKEN%?}" = ghp_e2e_local_value || exit 7
test "$DB_PASSWORD" = db-e2e-password || exit 8
echo "gh=$GITHUB_TOKEN db=$DB_PASSWORD"`)
	spec.Env = []schemas.BundleRef{e.putBlob("creds", []byte(`{"secrets":{"GITHUB_TOKEN":"local:github","DB_PASSWORD":"aws-sm:prod/db#password"}}`))}
	o := e.run(spec, withEnv(append(awsEnv(sm.URL), "AGORA_SECRETS_DIR="+dir)...))
	o.expect(t, schemas.KindFinished, "", 0, true)
	if !strings.Contains(o.stderr, "gh=[REDACTED:GITHUB_TOKEN]\n db=[REDACTED:DB_PASSWORD]") {
		t.Errorf("stderr lacks the redacted line:\n%s", o.stderr)
	}
	all := o.stderr + string(mustJSON(o.stdout))
	if strings.Contains(all, "ghp_e2e") || strings.Contains(all, "db-e2e") {
		t.Errorf("a secret value leaked into the worker's output:\n%s", all)
	}
}

// TestSecretRefFailures: each unresolvable ref ends in one dispatch.failed,
// fetch-failed, that names the secret; a dead Secrets Manager within
// AGORA_SECRETS_TIMEOUT_SECONDS.
func TestSecretRefFailures(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	silent := smStub(t, nil, hang)
	t.Cleanup(func() { close(hang) }) // before the server's Close, which waits for its handlers
	sm := smStub(t, map[string]string{}, nil)
	tests := []struct {
		name, bundle string
		env          []string
		reason       schemas.FailureReason
		want         []string
		within       time.Duration
	}{
		{name: "local secret not set", bundle: `{"secrets":{"TOKEN":"local:nope"}}`, env: []string{"AGORA_SECRETS_DIR=" + t.TempDir()},
			reason: schemas.ReasonFetchFailed, want: []string{"secret TOKEN", `ref "local:nope"`, "local secret nope is not set"}},
		{name: "no secrets dir mounted", bundle: `{"secrets":{"TOKEN":"local:github"}}`, env: []string{"AGORA_SECRETS_DIR=" + filepath.Join(t.TempDir(), "none")},
			reason: schemas.ReasonFetchFailed, want: []string{"local secret github: no secrets directory"}},
		{name: "aws secret missing", bundle: `{"secrets":{"TOKEN":"aws-sm:prod/gone"}}`, env: awsEnv(sm.URL),
			reason: schemas.ReasonFetchFailed, want: []string{"secret TOKEN", "has no secret prod/gone (ResourceNotFoundException"}},
		{name: "aws endpoint silent", bundle: `{"secrets":{"TOKEN":"aws-sm:prod/slow"}}`, env: append(awsEnv(silent.URL), "AGORA_SECRETS_TIMEOUT_SECONDS=1"),
			reason: schemas.ReasonFetchFailed, want: []string{"did not answer for prod/slow within 1s"}, within: 10 * time.Second},
		{name: "malformed timeout", bundle: `{}`, env: []string{"AGORA_SECRETS_TIMEOUT_SECONDS=soon"},
			reason: schemas.ReasonWorkerFailed, want: []string{`AGORA_SECRETS_TIMEOUT_SECONDS="soon"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			spec := e.spec("touch ran")
			spec.Env = []schemas.BundleRef{e.putBlob("b", []byte(tt.bundle))}
			o := e.run(spec, withEnv(tt.env...))
			ev := o.expect(t, schemas.KindFailed, tt.reason, 1, false)
			for _, w := range tt.want {
				if !strings.Contains(ev.Failure.Detail, w) {
					t.Errorf("detail = %q, want it to contain %q", ev.Failure.Detail, w)
				}
			}
			if tt.within > 0 && o.elapsed > tt.within {
				t.Errorf("the worker took %s, want at most %s", o.elapsed, tt.within)
			}
		})
	}
}
