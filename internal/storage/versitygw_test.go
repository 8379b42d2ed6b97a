package storage_test

import (
	"errors"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/internal/testutil"
)

// versityGWPath finds the versitygw binary on PATH or in GOPATH/bin, where
// `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` puts it.
// Without it the strict suite is skipped, except in CI, where it fails.
func versityGWPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		p := filepath.Join(dir, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	const msg = "versitygw not found on PATH or in GOPATH/bin; install it: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// freeLoopbackAddr returns a loopback address with a port free right now.
// versitygw binds it itself; if another process wins the race the gateway
// exits and startVersityGW fails with its log.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startVersityGW runs a versitygw posix gateway on a temp dir and loopback port.
// It checks SigV4 signatures against the root keys given here.
func startVersityGW(t *testing.T) *s3Server {
	t.Helper()
	bin := versityGWPath(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "versitygw.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	srv := &s3Server{endpoint: "http://" + addr, access: "agora-root", secret: "agora-root-secret-123"}

	cmd := exec.Command(bin, "--port", addr, "--access", srv.access, "--secret", srv.secret, "--quiet", "posix", root)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	// exited is closed once the process has exited, with waitErr set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Graceful stop, then a bounded wait, then a kill: never hang the test run.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("stop versitygw: %v", err)
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("versitygw did not stop within 10s of SIGTERM; killing it")
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("kill versitygw: %v", err)
			}
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("versitygw log:\n%s", b)
			}
		}
	})

	hc := testHTTPClient(t)
	ready := func() error {
		select {
		case <-exited:
			return testutil.Permanent(fmt.Errorf("exited before serving: %v", waitErr))
		default:
		}
		resp, err := hc.Get(srv.endpoint)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil // any HTTP answer (403 unsigned) means it is serving
	}
	if err := testutil.Poll(t.Context(), 20*time.Second, testutil.DefaultPollInterval, ready); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("versitygw on %s: %v\nlog:\n%s", addr, err, b)
	}

	client := srv.rawClient(t, srv.secret)
	srv.createBucket = func(t *testing.T, name string) {
		if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatalf("create bucket %s: %v", name, err)
		}
	}
	return srv
}

func TestS3StrictVersityGW(t *testing.T) {
	t.Parallel()
	srv := startVersityGW(t)
	storagetest.Run(t, srv.newBucketStore)
}

// A wrong secret must be refused: proof that the strict suite's server checks
// signatures, and that an auth failure is not mistaken for a missing object.
func TestS3StrictRejectsWrongSecret(t *testing.T) {
	t.Parallel()
	srv := startVersityGW(t)
	srv.createBucket(t, "signed")
	ctx := t.Context()
	good := openS3Store(t, srv, "signed", srv.secret)
	if err := good.Put(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatalf("Put with the right secret: %v", err)
	}
	bad := openS3Store(t, srv, "signed", "not-the-secret")

	err := bad.Put(ctx, "k2", strings.NewReader("v"))
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
		t.Errorf("Put with a wrong secret: error = %v, want SignatureDoesNotMatch", err)
	}
	if _, err := bad.Get(ctx, "k"); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get with a wrong secret: error = %v, want an auth error, not ErrNotFound", err)
	}
	if _, err := bad.Stat(ctx, "k"); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat with a wrong secret: error = %v, want an auth error, not ErrNotFound", err)
	}
	if _, err := bad.List(ctx, ""); err == nil {
		t.Errorf("List with a wrong secret succeeded, want an auth error")
	}
	if _, err := good.Stat(ctx, "k2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Stat(k2) after the refused Put: error = %v, want ErrNotFound", err)
	}
}

func openS3Store(t *testing.T, srv *s3Server, bucket, secret string) storage.Store {
	t.Helper()
	s, err := storage.Open(t.Context(), "s3://"+bucket, storage.Options{
		Logger: testLogger(t),
		S3: storage.S3Options{
			Endpoint: srv.endpoint, AccessKeyID: srv.access, SecretAccessKey: secret,
			HTTPClient: testHTTPClient(t),
		},
	})
	if err != nil {
		t.Fatalf("Open(s3://%s): %v", bucket, err)
	}
	return s
}
