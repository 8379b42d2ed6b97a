// Package awssmtest serves the recorded contract of AWS Secrets Manager's
// GetSecretValue and DescribeSecret on loopback, for tests: AWS itself cannot be reached from
// this project's machines.
package awssmtest

// The server implements the recorded contract of GetSecretValue in the AWS JSON 1.1 protocol, as
// the API reference documents it: POST / with Content-Type
// application/x-amz-json-1.1, X-Amz-Target secretsmanager.GetSecretValue, a
// SigV4 Authorization header for the service "secretsmanager", and a JSON
// body {"SecretId": …}; the answer {"ARN", "Name", "VersionId",
// "SecretString" | "SecretBinary" (base64), "VersionStages", "CreatedDate"},
// or a 400 with {"__type": "ResourceNotFoundException", "message": …}.
// DescribeSecret (X-Amz-Target secretsmanager.DescribeSecret) takes the same
// body and answers {"ARN", "Name", "VersionIdsToStages", "CreatedDate"}:
// the secret's metadata, no value.
// The server recomputes the request's signature with the test credentials.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	// The credentials and region the server accepts.
	AccessKey = "AKIDAGORATEST"
	SecretKey = "agora-test-secret-access-key"
	Region    = "eu-central-1"
)

// Secret is one secret the server holds.
type Secret struct {
	// String is the SecretString; nil serves Binary as SecretBinary.
	String *string
	Binary []byte
}

// Server is a loopback Secrets Manager that answers GetSecretValue.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	secrets map[string]Secret // by name and by ARN
	// Calls counts the requests.
	Calls atomic.Int64
	mu    sync.Mutex
	ids   []string // SecretId of every GetSecretValue, in order
	// SecretId of every DescribeSecret, in order
	described []string
}

// New serves secrets (by name; each also by its ARN in Region) until the
// test ends.
func New(t testing.TB, secrets map[string]Secret) *Server {
	t.Helper()
	s := &Server{t: t, secrets: map[string]Secret{}}
	for name, sec := range secrets {
		s.secrets[name] = sec
		s.secrets[ARN(name)] = sec
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([a-z0-9-]+)/secretsmanager/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

func (s *Server) fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.Calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, 400, "InvalidRequestException", "unreadable body")
		return
	}
	// The protocol.
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		s.t.Errorf("request %s %s, want POST /", r.Method, r.URL.Path)
		s.fail(w, 400, "InvalidRequestException", "want POST /")
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if target != "secretsmanager.GetSecretValue" && target != "secretsmanager.DescribeSecret" {
		s.t.Errorf("X-Amz-Target = %q, want secretsmanager.GetSecretValue or secretsmanager.DescribeSecret", target)
		s.fail(w, 400, "UnknownOperationException", "unknown target")
		return
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
		s.t.Errorf("Content-Type = %q, want application/x-amz-json-1.1", got)
	}
	// The signature: its shape, then its value.
	m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		s.t.Errorf("Authorization header %q is not a SigV4 signature for secretsmanager", r.Header.Get("Authorization"))
		s.fail(w, 400, "IncompleteSignature", "bad Authorization header")
		return
	}
	if m[1] != AccessKey {
		s.fail(w, 400, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	if !s.signatureValid(r, body, m[3], m[4]) {
		s.fail(w, 403, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided.")
		return
	}
	var in struct {
		SecretID string `json:"SecretId"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.SecretID == "" {
		s.t.Errorf("body %s: want {\"SecretId\": …}", body)
		s.fail(w, 400, "InvalidParameterException", "SecretId is required")
		return
	}
	s.mu.Lock()
	if target == "secretsmanager.DescribeSecret" {
		s.described = append(s.described, in.SecretID)
	} else {
		s.ids = append(s.ids, in.SecretID)
	}
	s.mu.Unlock()
	sec, ok := s.secrets[in.SecretID]
	if !ok {
		s.fail(w, 400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	name := strings.TrimSuffix(in.SecretID, "-AbCdEf")
	name = name[strings.LastIndex(name, ":")+1:]
	out := map[string]any{
		"ARN":           ARN(name),
		"Name":          name,
		"VersionId":     "EXAMPLE1-90ab-cdef-fedc-ba987SECRET1",
		"VersionStages": []string{"AWSCURRENT"},
		"CreatedDate":   1.523477145713e9,
	}
	if target == "secretsmanager.DescribeSecret" {
		delete(out, "VersionId")
		delete(out, "VersionStages")
		out["VersionIdsToStages"] = map[string][]string{"EXAMPLE1-90ab-cdef-fedc-ba987SECRET1": {"AWSCURRENT"}}
	} else if sec.String != nil {
		out["SecretString"] = *sec.String
	} else {
		out["SecretBinary"] = base64.StdEncoding.EncodeToString(sec.Binary)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// signatureValid signs a copy of r with the test credentials and compares.
func (s *Server) signatureValid(r *http.Request, body []byte, region, signedHeaders string) bool {
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		s.t.Errorf("X-Amz-Date %q: %v", r.Header.Get("X-Amz-Date"), err)
		return false
	}
	cp, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return false
	}
	for _, h := range strings.Split(signedHeaders, ";") {
		if h != "host" && h != "content-length" {
			cp.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, cp, hex.EncodeToString(sum[:]), "secretsmanager", region, when); err != nil {
		s.t.Errorf("sign copy: %v", err)
		return false
	}
	return cp.Header.Get("Authorization") == r.Header.Get("Authorization")
}

// Environ is the AWS environment that reaches the server, plus extra.
func (s *Server) Environ(extra ...string) []string {
	return append([]string{
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + s.srv.URL,
		"AWS_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
	}, extra...)
}

// URL is the server's endpoint.
func (s *Server) URL() string { return s.srv.URL }

// IDs are the SecretIds GetSecretValue was asked for, in order.
func (s *Server) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// Described are the SecretIds DescribeSecret was asked for, in order.
func (s *Server) Described() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.described...)
}

// ARN is the full ARN the server gives the secret called name.
func ARN(name string) string {
	return "arn:aws:secretsmanager:" + Region + ":123456789012:secret:" + name + "-AbCdEf"
}

// Str is a *string, for Secret.String.
func Str(s string) *string { return &s }
