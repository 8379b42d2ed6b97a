package ecsfake

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// CredentialsPath is where the fake serves a task's role credentials:
// CredentialsPath + <an id per task>, as AWS_CONTAINER_CREDENTIALS_FULL_URI.
const CredentialsPath = "/v2/credentials/"

// ResourceInitError starts the stoppedReason of a task whose secrets
// could not be pulled, as ECS words it.
const ResourceInitError = "ResourceInitializationError: unable to pull secrets or registry auth: "

// resolveTimeout bounds the resolution of one task's secrets.
const resolveTimeout = 30 * time.Second

// taskRoleARN is the task's role: RunTask's override, else the definition's.
func (t *task) taskRoleARN() string {
	if ov := t.in.Overrides; ov != nil && aws.ToString(ov.TaskRoleArn) != "" {
		return aws.ToString(ov.TaskRoleArn)
	}
	return aws.ToString(t.def.in.TaskRoleArn)
}

// startEnv is what ECS adds to the container's environment when the task
// starts, replacing the definition's and the overrides' own: the task role's credentials endpoint and
// the definition's secrets, resolved now with the execution role. A
// non-empty reason means the task cannot start (a ResourceInitializationError).
func (s *Server) startEnv(t *task) (env map[string]string, order []string, reason string) {
	env = map[string]string{}
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	if role := t.taskRoleARN(); role != "" && s.cfg.TaskRoleCredentials.HasKeys() {
		id, token := randomHex(16), randomHex(32)
		t.set(func() { t.roleARN, t.credToken = role, token })
		s.mu.Lock()
		s.creds[id] = t
		s.mu.Unlock()
		// FULL_URI on loopback, not ECS's RELATIVE_URI on 169.254.170.2:
		// that address cannot exist here, and the SDKs take an http
		// FULL_URI only on loopback (or ECS's and EKS's own addresses).
		set("AWS_CONTAINER_CREDENTIALS_FULL_URI", s.URL()+CredentialsPath+id)
		set("AWS_CONTAINER_AUTHORIZATION_TOKEN", token)
	}
	secrets := t.container().Secrets
	if len(secrets) == 0 {
		return env, order, ""
	}
	if aws.ToString(t.def.in.ExecutionRoleArn) == "" && (t.in.Overrides == nil || aws.ToString(t.in.Overrides.ExecutionRoleArn) == "") {
		return nil, nil, ResourceInitError + "execution role missing: the task definition has secrets but no executionRoleArn"
	}
	if s.cfg.ResolveSecret == nil {
		return nil, nil, ResourceInitError + "the fake has no secret store (ecsfake.Config.ResolveSecret is nil)"
	}
	// A stop while the secrets are read ends the reading.
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	go func() {
		select {
		case <-t.stopReq:
			cancel()
		case <-ctx.Done():
		}
	}()
	for _, sec := range secrets {
		from := aws.ToString(sec.ValueFrom)
		if parts := strings.SplitN(from, ":", 4); len(parts) < 4 || parts[0] != "arn" || parts[2] != "secretsmanager" {
			// "The supported values are either the full ARN of the Secrets
			// Manager secret or the full ARN of the parameter in the SSM
			// Parameter Store" — or an SSM parameter's name in the
			// task's region. The fake has no Parameter Store.
			return nil, nil, ResourceInitError + "execution resource retrieval failed: unable to retrieve secrets from ssm: InvalidParameters: " + from + " (the fake has no SSM Parameter Store; a Secrets Manager secret needs its full ARN)"
		}
		v, err := s.resolve(ctx, from)
		if err != nil {
			return nil, nil, ResourceInitError + "execution resource retrieval failed: unable to retrieve secret from asm: fetch secret " + from + ": " + err.Error()
		}
		set(aws.ToString(sec.Name), v)
	}
	return env, order, ""
}

// resolve reads one secret as ECS does: valueFrom is a secret's full
// ARN, or "ARN:json-key:version-stage:version-id" for one key of a JSON
// secret. The resolver gets the secret's id; the key is picked here.
func (s *Server) resolve(ctx context.Context, valueFrom string) (string, error) {
	s.mu.Lock()
	s.resolved = append(s.resolved, valueFrom)
	s.mu.Unlock()
	id, key := valueFrom, ""
	if parts := strings.Split(valueFrom, ":"); parts[0] == "arn" && len(parts) > 7 {
		if len(parts) > 10 {
			return "", fmt.Errorf("valueFrom %q has too many parts", valueFrom)
		}
		id, key = strings.Join(parts[:7], ":"), parts[7]
		for _, p := range parts[8:] {
			if p != "" {
				return "", errors.New("the fake does not model version stages or version ids")
			}
		}
	}
	v, err := s.cfg.ResolveSecret(ctx, id)
	if err != nil || key == "" {
		return v, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &obj); err != nil {
		return "", fmt.Errorf("secret %s is not a JSON object, so it has no key %s", id, key)
	}
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("secret %s has no key %s", id, key)
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, nil
	}
	return string(raw), nil // a nested value is given as its JSON
}

// serveCredentials answers the SDKs' container credentials provider for
// the task the path names, while it has not stopped.
func (s *Server) serveCredentials(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
	}
	if r.Method != http.MethodGet {
		fail(http.StatusMethodNotAllowed, "InvalidRequest", "GET only")
		return
	}
	s.mu.Lock()
	t := s.creds[strings.TrimPrefix(r.URL.Path, CredentialsPath)]
	s.mu.Unlock()
	if t == nil {
		fail(http.StatusNotFound, "InvalidIdInRequest", "no task has these credentials")
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(t.credToken)) != 1 {
		fail(http.StatusUnauthorized, "AccessDenied", "the Authorization header is not the task's token")
		return
	}
	if t.last == "STOPPED" {
		fail(http.StatusNotFound, "InvalidIdInRequest", "the task has stopped")
		return
	}
	c := s.cfg.TaskRoleCredentials
	exp := c.Expires
	if !c.CanExpire || exp.IsZero() {
		exp = time.Now().Add(time.Hour)
	}
	t.credFetches++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"AccessKeyId": c.AccessKeyID, "SecretAccessKey": c.SecretAccessKey, "Token": c.SessionToken,
		"Expiration": exp.UTC().Format(time.RFC3339), "RoleArn": t.roleARN,
	})
}

// SecretsResolved returns the valueFrom of every secret the fake read
// through Config.ResolveSecret (failures included), oldest first.
func (s *Server) SecretsResolved() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.resolved...)
}

// CredentialFetches counts the task role credentials served to the task
// started by startedBy (the engine's container id, as for Interrupt).
func (s *Server) CredentialFetches(startedBy string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tasks {
		if t.startedBy == startedBy {
			t.mu.Lock()
			n += t.credFetches
			t.mu.Unlock()
		}
	}
	return n
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
