package storage_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/internal/storage/storagetest"
)

// testHTTPClient is an HTTP client whose idle connections are closed when the
// test ends, so goleak sees no connection goroutines left behind.
func testHTTPClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// s3Server is an S3 endpoint on loopback and a way to make buckets on it.
type s3Server struct {
	endpoint       string
	access, secret string
	createBucket   func(t *testing.T, name string)
}

var bucketSeq atomic.Int64

// newBucketStore creates a fresh bucket and opens a store on it under a prefix,
// configured through the URI's query like a user would.
func (srv *s3Server) newBucketStore(t *testing.T) storage.Store {
	t.Helper()
	bucket := fmt.Sprintf("agora-test-%d", bucketSeq.Add(1))
	srv.createBucket(t, bucket)
	uri := fmt.Sprintf("s3://%s/agora/test?endpoint=%s&region=us-east-1", bucket, url.QueryEscape(srv.endpoint))
	s, err := storage.Open(t.Context(), uri, storage.Options{
		Logger: testLogger(t),
		S3:     storage.S3Options{AccessKeyID: srv.access, SecretAccessKey: srv.secret, HTTPClient: testHTTPClient(t)},
	})
	if err != nil {
		t.Fatalf("Open(%q): %v", uri, err)
	}
	storage.SetListPageSize(s, 5) // so that List crosses pages
	return s
}

// rawClient talks to srv directly, to set up buckets and look behind the store.
func (srv *s3Server) rawClient(t *testing.T, secret string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.access, secret, ""),
		HTTPClient:   testHTTPClient(t),
	})
}

// startGoFakeS3 serves an in-memory gofakes3 over real HTTP on loopback.
func startGoFakeS3(t *testing.T) *s3Server {
	backend := s3mem.New()
	hs := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(hs.Close)
	return &s3Server{
		endpoint: hs.URL,
		access:   "fake-access",
		secret:   "fake-secret",
		createBucket: func(t *testing.T, name string) {
			if err := backend.CreateBucket(name); err != nil {
				t.Fatalf("create bucket %s: %v", name, err)
			}
		},
	}
}

func TestS3GoFakeS3(t *testing.T) {
	t.Parallel()
	srv := startGoFakeS3(t)
	storagetest.Run(t, srv.newBucketStore)
}

func TestS3PrefixIsolation(t *testing.T) {
	t.Parallel()
	srv := startGoFakeS3(t)
	srv.createBucket(t, "shared")
	open := func(uri string) storage.Store {
		s, err := storage.Open(t.Context(), uri, storage.Options{
			Logger: testLogger(t),
			S3:     storage.S3Options{Endpoint: srv.endpoint, AccessKeyID: srv.access, SecretAccessKey: srv.secret, HTTPClient: testHTTPClient(t)},
		})
		if err != nil {
			t.Fatalf("Open(%q): %v", uri, err)
		}
		return s
	}
	a, b := open("s3://shared/team-a"), open("s3://shared/team-ab")
	ctx := t.Context()
	if err := a.Put(ctx, "k", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "k", strings.NewReader("b")); err != nil {
		t.Fatal(err)
	}
	// The prefix is a directory: team-a does not see team-ab's objects.
	if keys, err := a.List(ctx, ""); err != nil || !slices.Equal(keys, []string{"k"}) {
		t.Errorf("a.List = %q, %v, want [k]", keys, err)
	}
	out, err := srv.rawClient(t, srv.secret).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("shared")})
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	for _, o := range out.Contents {
		raw = append(raw, aws.ToString(o.Key))
	}
	if want := []string{"team-a/k", "team-ab/k"}; !slices.Equal(raw, want) {
		t.Errorf("bucket keys = %q, want %q", raw, want)
	}
	if key, err := storage.ResolveURI(a, b.URI("k")); err == nil {
		t.Errorf("ResolveURI(a, %q) = %q, want an error: another prefix", b.URI("k"), key)
	}
}

// TestS3CheckBucket (issue 20, finding 9): a bucket that does not exist is
// ErrNoBucket at Check, naming it and what to do; an existing one passes.
func TestS3CheckBucket(t *testing.T) {
	t.Parallel()
	srv := startGoFakeS3(t)
	srv.createBucket(t, "there")
	for _, tc := range []struct {
		bucket string
		want   error
	}{{"there", nil}, {"not-there", storage.ErrNoBucket}} {
		s, err := storage.Open(t.Context(), "s3://"+tc.bucket+"/p", storage.Options{
			Logger: testLogger(t),
			S3:     storage.S3Options{Endpoint: srv.endpoint, AccessKeyID: srv.access, SecretAccessKey: srv.secret, HTTPClient: testHTTPClient(t)},
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.(storage.Checker).Check(t.Context())
		if !errors.Is(err, tc.want) || (tc.want != nil && !strings.Contains(err.Error(), "aws s3 mb s3://"+tc.bucket)) {
			t.Errorf("Check(%s) = %v; want %v, saying how to make it", tc.bucket, err, tc.want)
		}
	}
}
