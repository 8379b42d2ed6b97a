package awssm

// AWS Secrets Manager cannot be reached from this project's machines: these
// tests run the real SDK client against awssmtest, the recorded contract of
// GetSecretValue served on loopback.

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/secrets/awssm/awssmtest"
)

func TestResolver(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{
		"prod/github": {String: awssmtest.Str("ghp_from_aws")},
		"prod/db":     {String: awssmtest.Str(`{"username":"app","password":"pa55-w0rd","port":5432,"tls":true,"nested":{"a":1},"nothing":null}`)},
		"plain":       {String: awssmtest.Str("not json at all: s3cr3t")},
		"bin":         {Binary: []byte("binary-\x01-value")},
	})
	a := New(Options{Environ: srv.Environ(), Logger: natstest.Logger(t)})
	if a.created != 0 {
		t.Fatalf("New made a client before any ref")
	}
	good := []struct{ ref, want string }{
		{"aws-sm:prod/github", "ghp_from_aws"},
		{"aws-sm:prod/db#password", "pa55-w0rd"},
		{"aws-sm:prod/db#username", "app"},
		{"aws-sm:prod/db#port", "5432"},
		{"aws-sm:prod/db#tls", "true"},
		{"aws-sm:prod/db", `{"username":"app","password":"pa55-w0rd","port":5432,"tls":true,"nested":{"a":1},"nothing":null}`},
		{"aws-sm:arn:aws:secretsmanager:" + awssmtest.Region + ":123456789012:secret:prod/github-AbCdEf", "ghp_from_aws"},
		{"aws-sm:bin", "binary-\x01-value"},
	}
	for _, tt := range good {
		got, err := a.Resolve(context.Background(), tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q, nil", tt.ref, got, err, tt.want)
		}
	}
	// One client, and one call per secret however many refs name it.
	if a.created != 1 {
		t.Errorf("clients made = %d, want 1", a.created)
	}
	if n := srv.Calls.Load(); n != 4 {
		t.Errorf("GetSecretValue calls = %d, want 4 (prod/github, prod/db, the ARN, bin): %v", n, srv.IDs())
	}

	bad := []struct{ ref, want string }{
		{"aws-sm:prod/missing", "has no secret prod/missing (ResourceNotFoundException: Secrets Manager can't find the specified secret.)"},
		{"aws-sm:prod/db#nope", `its JSON object has no key "nope"`},
		{"aws-sm:prod/db#nested", `key "nested" holds an object, array or null`},
		{"aws-sm:prod/db#nothing", `key "nothing" holds an object, array or null`},
		{"aws-sm:plain#key", "its SecretString is not a JSON object, so #key cannot pick a field"},
		{"aws-sm:bin#key", "holds SecretBinary, so #key cannot pick"},
		{"aws-sm:", "without a secret id"},
		{"aws-sm:#key", "without a secret id"},
		{"aws-sm:prod/db#", "empty JSON key"},
		{"local:x", "not an aws-sm: ref"},
	}
	for _, tt := range bad {
		got, err := a.Resolve(context.Background(), tt.ref)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Resolve(%q) = %q, %v; want an error containing %q", tt.ref, got, err, tt.want)
			continue
		}
		for _, v := range []string{"pa55-w0rd", "s3cr3t", "binary-"} {
			if strings.Contains(err.Error(), v) {
				t.Errorf("Resolve(%q) error %q holds a secret value", tt.ref, err)
			}
		}
	}
}

func TestResolverCredentialsAndRegion(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{"x": {String: awssmtest.Str("value-x")}})
	tests := []struct {
		name    string
		environ []string
		want    string
	}{
		{"wrong key id", []string{"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + srv.URL(), "AWS_REGION=" + awssmtest.Region,
			"AWS_ACCESS_KEY_ID=AKIDOTHER", "AWS_SECRET_ACCESS_KEY=" + awssmtest.SecretKey}, "UnrecognizedClientException"},
		{"wrong secret key", []string{"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + srv.URL(), "AWS_REGION=" + awssmtest.Region,
			"AWS_ACCESS_KEY_ID=" + awssmtest.AccessKey, "AWS_SECRET_ACCESS_KEY=wrong"}, "InvalidSignatureException"},
		// AWS_ENDPOINT_URL applies to every service, Secrets Manager included.
		{"generic endpoint", []string{"AWS_ENDPOINT_URL=" + srv.URL(), "AWS_DEFAULT_REGION=" + awssmtest.Region,
			"AWS_ACCESS_KEY_ID=" + awssmtest.AccessKey, "AWS_SECRET_ACCESS_KEY=" + awssmtest.SecretKey}, ""},
	}
	for _, tt := range tests {
		a := New(Options{Environ: tt.environ, Logger: natstest.Logger(t)})
		got, err := a.Resolve(context.Background(), "aws-sm:x")
		switch {
		case tt.want == "" && (err != nil || got != "value-x"):
			t.Errorf("%s: Resolve = %q, %v; want value-x", tt.name, got, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "refused GetSecretValue of x")):
			t.Errorf("%s: Resolve = %q, %v; want an error containing %q", tt.name, got, err, tt.want)
		}
	}
}

// TestResolverBounded: a dead endpoint or one that never answers
// ends the lookup within its timeout, with an error that says so.
func TestResolverBounded(t *testing.T) {
	t.Parallel()
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	// A server that accepts and never answers.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })

	for _, tc := range []struct{ name, endpoint, want string }{
		{"refused", dead, "AWS Secrets Manager (" + dead + ") did not answer for slow"},
		{"silent", hang.URL, "did not answer for slow within 300ms"},
	} {
		a := New(Options{Timeout: 300 * time.Millisecond, Logger: natstest.Logger(t), Environ: []string{
			"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + tc.endpoint, "AWS_REGION=" + awssmtest.Region,
			"AWS_ACCESS_KEY_ID=" + awssmtest.AccessKey, "AWS_SECRET_ACCESS_KEY=" + awssmtest.SecretKey}})
		start := time.Now()
		_, err := a.Resolve(context.Background(), "aws-sm:slow")
		elapsed := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Resolve = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if elapsed > 5*time.Second {
			t.Errorf("%s: Resolve took %s with a 300ms timeout", tc.name, elapsed)
		}
		t.Logf("%s: failed after %s: %v", tc.name, elapsed.Round(time.Millisecond), err)
	}
}

// TestResolverNoRegion: without a region (and without a custom
// endpoint) nothing is sent anywhere; a full ARN brings its own region.
func TestResolverNoRegion(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"} {
		if os.Getenv(v) != "" {
			t.Skipf("%s is set in the test's environment, so the SDK finds a region", v)
		}
	}
	a := New(Options{Logger: natstest.Logger(t), Timeout: time.Second,
		Environ: []string{"AWS_ACCESS_KEY_ID=" + awssmtest.AccessKey, "AWS_SECRET_ACCESS_KEY=" + awssmtest.SecretKey, "HOME=" + t.TempDir()}})
	_, err := a.Resolve(context.Background(), "aws-sm:prod/db")
	if err == nil || !strings.Contains(err.Error(), "no AWS region: set AWS_REGION") {
		t.Errorf("Resolve without a region = %v, want an error asking for AWS_REGION", err)
	}
}

func TestArnRegion(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"arn:aws:secretsmanager:us-west-2:123456789012:secret:db-AbCdEf": "us-west-2",
		"arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:a:b:c": "cn-north-1",
		"arn:aws:ssm:us-west-2:123456789012:parameter/x":                 "",
		"prod/db": "",
	} {
		if got := arnRegion(id); got != want {
			t.Errorf("arnRegion(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestARN: a secret's name becomes its full ARN through DescribeSecret,
// once per name; a full ARN needs no call; a missing secret is an error
// naming it.
func TestARN(t *testing.T) {
	t.Parallel()
	srv := awssmtest.New(t, map[string]awssmtest.Secret{"prod/db": {String: awssmtest.Str(`{"password":"x"}`)}})
	a := New(Options{Environ: srv.Environ(), Logger: natstest.Logger(t)})
	ctx := context.Background()
	full := awssmtest.ARN("prod/db")
	for _, id := range []string{"prod/db", "prod/db", full} {
		got, err := a.ARN(ctx, id)
		if err != nil || got != full {
			t.Errorf("ARN(%q) = %q, %v; want %q", id, got, err, full)
		}
	}
	if got := srv.Described(); len(got) != 1 || got[0] != "prod/db" {
		t.Errorf("DescribeSecret calls = %q, want one for prod/db", got)
	}
	if got := srv.IDs(); len(got) != 0 {
		t.Errorf("GetSecretValue calls = %q, want none: an ARN needs no value", got)
	}
	if _, err := a.ARN(ctx, "prod/missing"); err == nil || !strings.Contains(err.Error(), "has no secret prod/missing") {
		t.Errorf("ARN(prod/missing) = %v, want an error naming the secret", err)
	}
	for id, want := range map[string]bool{
		full: true,
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db": false, // partial: no suffix
		"arn:aws:ssm:eu-west-1:123456789012:parameter/prod/db":         false,
		"prod/db-AbCdEf": false,
	} {
		if got := IsFullARN(id); got != want {
			t.Errorf("IsFullARN(%q) = %v, want %v", id, got, want)
		}
	}
}
